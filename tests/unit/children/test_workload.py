"""The Workload API's children (``MPI_OPERATOR_GANG_SCHEDULING=kubernetes``): a Workload and its runtime
PodGroup, checked against Kubernetes 1.36's own schemas, and the Pod field that joins the group."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.defaults import Replica
from app.api.types import RestartPolicy, SchedulingPolicy
from app.children.podgroup import GangJob, decorate, membership
from app.children.workload import TEMPLATE_NAME, runtime_pod_group, workload
from app.kube.gang import KUBERNETES_API_VERSION, GangScheduler, gang_scheduler
from tests.support.kube_schema import schema_errors

KUBERNETES = GangScheduler("kubernetes")
TOPOLOGY = {"mpi-operator-hook/gang-topology-key": "topology.kubernetes.io/zone"}


def rep(replicas: int) -> Replica:
    template = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    return Replica(replicas, RestartPolicy.NEVER.value, template)


def job(
    workers: int = 4,
    min_available: int | None = None,
    annotations: dict[str, str] | None = None,
    launcher_pending: bool = False,
) -> GangJob:
    policy = SchedulingPolicy.model_validate({"minAvailable": min_available, "priorityClass": "high"})
    return GangJob("pi", "ns", policy, rep(1), rep(workers), annotations or {}, launcher_pending)


def gang_policy(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]["podGroupTemplates"][0] if obj["kind"] == "Workload" else obj["spec"]
    return {k: v for k, v in spec.items() if k in ("schedulingPolicy", "schedulingConstraints")}


def test_workload_has_one_template_with_the_gang() -> None:
    assert workload(job()) == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "pi", "namespace": "ns"},
        "spec": {"podGroupTemplates": [{"name": "mpijob", "schedulingPolicy": {"gang": {"minCount": 5}}}]},
    }


def test_pod_group_references_the_template_and_copies_its_policy() -> None:
    group = runtime_pod_group(job(annotations=TOPOLOGY))
    assert group["apiVersion"] == KUBERNETES_API_VERSION and group["kind"] == "PodGroup"
    assert group["metadata"] == {"name": "pi", "namespace": "ns"}
    assert group["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": "pi", "podGroupTemplateName": TEMPLATE_NAME}
    }
    assert gang_policy(group) == gang_policy(workload(job(annotations=TOPOLOGY)))


# id: (the job, minCount)
MIN_COUNT = {
    "workers + launcher": (job(workers=4), 5),
    "schedulingPolicy.minAvailable": (job(min_available=2), 2),
    "WaitForWorkersReady, no launcher yet: the workers only": (job(launcher_pending=True), 4),
    "minAvailable 0: the API's minimum, a gang of one": (job(min_available=0), 1),
}


@pytest.mark.parametrize(("gang", "want"), MIN_COUNT.values(), ids=MIN_COUNT.keys())
def test_min_count_follows_the_other_backends_min_member(gang: GangJob, want: int) -> None:
    for child in (workload(gang), runtime_pod_group(gang)):
        assert gang_policy(child)["schedulingPolicy"] == {"gang": {"minCount": want}}


def test_topology_annotation_becomes_the_groups_constraint() -> None:
    spaced = {"mpi-operator-hook/gang-topology-key": " topology.kubernetes.io/zone "}
    for child in (workload(job(annotations=spaced)), runtime_pod_group(job(annotations=spaced))):
        constraints = gang_policy(child)["schedulingConstraints"]
        assert constraints == {"topology": [{"key": "topology.kubernetes.io/zone"}]}


def test_no_priority_class_name_and_no_constraints_unless_asked() -> None:
    """priorityClassName is behind WorkloadAwarePreemption in 1.36: forbidden without it."""
    for child in (workload(job()), runtime_pod_group(job())):
        assert "priorityClassName" not in str(child)
        assert "schedulingConstraints" not in gang_policy(child)


@pytest.mark.parametrize("annotations", [{}, TOPOLOGY], ids=["plain", "topology"])
def test_children_match_kubernetes_1_36_schemas(annotations: dict[str, str]) -> None:
    for child in (workload(job(annotations=annotations)), runtime_pod_group(job(annotations=annotations))):
        assert schema_errors(child) == []


def test_schema_check_can_fail() -> None:
    broken = workload(job())
    broken["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minMember"] = 5
    assert schema_errors(broken) != []


def test_pods_name_the_group_and_keep_their_scheduler() -> None:
    spec = {"schedulerName": "my-scheduler", "containers": []}
    labels, annotations, decorated = decorate(membership(KUBERNETES, "pi"), {"a": "b"}, {"c": "d"}, spec)
    assert (labels, annotations) == ({"a": "b"}, {"c": "d"})
    assert decorated == {**spec, "schedulingGroup": {"podGroupName": "pi"}}


def test_the_setting_picks_the_workload_api() -> None:
    scheduler = gang_scheduler(" kubernetes ")
    assert scheduler == KUBERNETES and scheduler.kubernetes and not scheduler.volcano
    assert scheduler.api_version == "scheduling.k8s.io/v1alpha2"
    assert scheduler.resources == ("workloads", "podgroups")
    assert scheduler.overlay == "deploy/overlays/kubernetes"
