"""The Workload API's children (``MPI_OPERATOR_GANG_SCHEDULING=kubernetes``, Kubernetes 1.36, alpha).

Ours, not upstream's (docs/compatibility.md): a ``Workload`` ``<job>`` with one PodGroupTemplate, and the
runtime ``PodGroup`` ``<job>`` made from it, both ``scheduling.k8s.io/v1alpha2``. The Pods name the
PodGroup in ``spec.schedulingGroup`` (``app.children.podgroup.membership``). minCount is the same rule as
the other backends' minMember (``min_member``); there is no minResources, queue or timeout in this API.

Both specs are immutable, so a changed minCount or topology is a new object: the overlay declares both
kinds with ``updateStrategy: Recreate``. ``priorityClassName`` is not set: in 1.36 it sits behind the
``WorkloadAwarePreemption`` gate and is forbidden without it; the Pods keep their own priority.
"""

from __future__ import annotations

from typing import Any

from app.children.podgroup import GangJob, min_member
from app.kube import names
from app.kube.gang import KIND, KUBERNETES_API_VERSION, WORKLOAD_KIND, topology_key

# The one PodGroupTemplate of an MPIJob's Workload: the launcher and the workers form one gang.
TEMPLATE_NAME = "mpijob"


def _policy_and_constraints(job: GangJob) -> dict[str, Any]:
    # The API requires minCount >= 1; a gang of one (minAvailable 0) is no gang, as with the others.
    fields: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": max(min_member(job), 1)}}}
    if key := topology_key(job.annotations):
        fields["schedulingConstraints"] = {"topology": [{"key": key}]}
    return fields


def workload(job: GangJob) -> dict[str, Any]:
    """The Workload ``<job>``: one template, the gang's policy and constraints; Metacontroller owns it."""
    template = {"name": TEMPLATE_NAME, **_policy_and_constraints(job)}
    metadata = {"name": names.podgroup_name(job.name), "namespace": job.namespace}
    return {
        "apiVersion": KUBERNETES_API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": metadata,
        "spec": {"podGroupTemplates": [template]},
    }


def runtime_pod_group(job: GangJob) -> dict[str, Any]:
    """The PodGroup ``<job>`` the Pods join: the template's policy and constraints, and which template."""
    group = names.podgroup_name(job.name)
    reference = {"workload": {"workloadName": group, "podGroupTemplateName": TEMPLATE_NAME}}
    return {
        "apiVersion": KUBERNETES_API_VERSION,
        "kind": KIND,
        "metadata": {"name": group, "namespace": job.namespace},
        "spec": {"podGroupTemplateRef": reference, **_policy_and_constraints(job)},
    }
