"""The Workload API's children (``MPI_OPERATOR_GANG_SCHEDULING=kubernetes``).

Ours, not upstream's (docs/compatibility.md): a ``Workload`` ``<job>`` with one PodGroupTemplate, and the
runtime ``PodGroup`` ``<job>`` made from it, in the version the CompositeController declares
(``GangScheduler.workload_api``): ``scheduling.k8s.io/v1beta1`` on Kubernetes 1.37, ``v1alpha2`` on 1.36.
The Pods name the PodGroup in ``spec.schedulingGroup`` (``app.children.podgroup.membership``). minCount is
the same rule as the other backends' minMember (``min_member``); there is no minResources, queue or timeout
in this API.

What 1.37 (v1beta1) adds and an MPIJob uses: the PodGroup's reference to its template is ``workloadRef``
(``podGroupTemplateRef.workload`` in 1.36); ``disruptionMode: all``, because one lost rank ends the whole
``mpirun``: the scheduler preempts the gang as a whole, never one Pod of it; ``priorityClassName``, the
same rule as Volcano's group priority (``priority_class_name``), which the Priority admission plugin turns
into the priority that workload-aware preemption compares; the Workload's ``controllerRef`` to the MPIJob.
In 1.36 ``priorityClassName`` sits behind the ``WorkloadAwarePreemption`` gate and is forbidden without it,
so v1alpha2 objects leave it out and the Pods keep their own priority.

Both specs are (mostly) immutable, so a changed minCount, topology or priority is a new object: the
overlays declare both kinds with ``updateStrategy: Recreate``.
"""

from __future__ import annotations

from typing import Any

from app.api.types import API_VERSION
from app.api.types import KIND as MPIJOB_KIND
from app.children.podgroup import GangJob, min_count, priority_class_name
from app.kube import names
from app.kube.gang import KIND, WORKLOAD_API_V1BETA1, WORKLOAD_KIND, topology_key

# The one PodGroupTemplate of an MPIJob's Workload: the launcher and the workers form one gang.
TEMPLATE_NAME = "mpijob"


def _policy_and_constraints(job: GangJob, api_version: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count(job)}}}
    if key := topology_key(job.annotations):
        fields["schedulingConstraints"] = {"topology": [{"key": key}]}
    if api_version == WORKLOAD_API_V1BETA1:
        fields["disruptionMode"] = {"all": {}}
        if priority := priority_class_name(job):
            fields["priorityClassName"] = priority
    return fields


def workload(job: GangJob, api_version: str) -> dict[str, Any]:
    """The Workload ``<job>``: one template, the gang's policy and constraints; Metacontroller owns it."""
    template = {"name": TEMPLATE_NAME, **_policy_and_constraints(job, api_version)}
    metadata = {"name": names.podgroup_name(job.name), "namespace": job.namespace}
    spec: dict[str, Any] = {"podGroupTemplates": [template]}
    if api_version == WORKLOAD_API_V1BETA1:
        spec = {
            "controllerRef": {"apiGroup": API_VERSION.split("/")[0], "kind": MPIJOB_KIND, "name": job.name},
            **spec,
        }
    return {"apiVersion": api_version, "kind": WORKLOAD_KIND, "metadata": metadata, "spec": spec}


def runtime_pod_group(job: GangJob, api_version: str) -> dict[str, Any]:
    """The PodGroup ``<job>`` the Pods join: the template's policy and constraints, and which template."""
    group = names.podgroup_name(job.name)
    reference: dict[str, Any]
    if api_version == WORKLOAD_API_V1BETA1:
        reference = {"workloadRef": {"workloadName": group, "templateName": TEMPLATE_NAME}}
    else:
        reference = {
            "podGroupTemplateRef": {
                "workload": {"workloadName": group, "podGroupTemplateName": TEMPLATE_NAME}
            }
        }
    return {
        "apiVersion": api_version,
        "kind": KIND,
        "metadata": {"name": group, "namespace": job.namespace},
        "spec": {**reference, **_policy_and_constraints(job, api_version)},
    }
