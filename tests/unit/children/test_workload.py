"""The Workload API's children (``MPI_OPERATOR_GANG_SCHEDULING=kubernetes``): a Workload and its runtime
PodGroup in each version (1.37's v1beta1, 1.36's v1alpha2), checked against that release's own schemas,
and the Pod field that joins the group."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.defaults import Replica
from app.api.types import RestartPolicy, SchedulingPolicy
from app.children.podgroup import GangJob, decorate, membership
from app.children.workload import TEMPLATE_NAME, runtime_pod_group, workload
from app.kube.gang import (
    WORKLOAD_API_V1ALPHA2,
    WORKLOAD_API_V1BETA1,
    WORKLOAD_API_VERSIONS,
    GangScheduler,
    declared,
    gang_scheduler,
)
from tests.support.kube_schema import schema_errors

KUBERNETES = GangScheduler("kubernetes")
TOPOLOGY = {"mpi-operator-hook/gang-topology-key": "topology.kubernetes.io/zone"}
BETA, ALPHA = WORKLOAD_API_V1BETA1, WORKLOAD_API_V1ALPHA2
VERSIONS = pytest.mark.parametrize("version", WORKLOAD_API_VERSIONS, ids=["1.37 v1beta1", "1.36 v1alpha2"])


def rep(replicas: int) -> Replica:
    template = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    return Replica(replicas, RestartPolicy.NEVER.value, template)


def job(
    workers: int = 4,
    min_available: int | None = None,
    annotations: dict[str, str] | None = None,
    launcher_pending: bool = False,
    priority_class: str | None = "high",
) -> GangJob:
    policy = SchedulingPolicy.model_validate({"minAvailable": min_available, "priorityClass": priority_class})
    return GangJob("pi", "ns", policy, rep(1), rep(workers), annotations or {}, launcher_pending)


def gang_policy(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]["podGroupTemplates"][0] if obj["kind"] == "Workload" else obj["spec"]
    return {k: v for k, v in spec.items() if k in ("schedulingPolicy", "schedulingConstraints")}


def test_1_37_workload_has_one_template_with_the_gang_its_priority_and_its_mpijob() -> None:
    assert workload(job(), BETA) == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "pi", "namespace": "ns"},
        "spec": {
            "controllerRef": {"apiGroup": "kubeflow.org", "kind": "MPIJob", "name": "pi"},
            "podGroupTemplates": [
                {
                    "name": "mpijob",
                    "schedulingPolicy": {"gang": {"minCount": 5}},
                    "disruptionMode": {"all": {}},
                    "priorityClassName": "high",
                }
            ],
        },
    }


def test_1_36_workload_has_one_template_with_the_gang() -> None:
    assert workload(job(), ALPHA) == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "pi", "namespace": "ns"},
        "spec": {"podGroupTemplates": [{"name": "mpijob", "schedulingPolicy": {"gang": {"minCount": 5}}}]},
    }


# version: the PodGroup's reference to its template
REFERENCES = {
    BETA: {"workloadRef": {"workloadName": "pi", "templateName": TEMPLATE_NAME}},
    ALPHA: {
        "podGroupTemplateRef": {"workload": {"workloadName": "pi", "podGroupTemplateName": TEMPLATE_NAME}}
    },
}


@VERSIONS
def test_pod_group_references_the_template_and_copies_its_policy(version: str) -> None:
    group = runtime_pod_group(job(annotations=TOPOLOGY), version)
    assert group["apiVersion"] == version and group["kind"] == "PodGroup"
    assert group["metadata"] == {"name": "pi", "namespace": "ns"}
    reference = {k: v for k, v in group["spec"].items() if k in REFERENCES[version]}
    assert reference == REFERENCES[version]
    template = workload(job(annotations=TOPOLOGY), version)["spec"]["podGroupTemplates"][0]
    assert {k: v for k, v in group["spec"].items() if k not in reference} == {
        k: v for k, v in template.items() if k != "name"
    }


# id: (the job, minCount)
MIN_COUNT = {
    "workers + launcher": (job(workers=4), 5),
    "schedulingPolicy.minAvailable": (job(min_available=2), 2),
    "WaitForWorkersReady, no launcher yet: the workers only": (job(launcher_pending=True), 4),
    "minAvailable 0: the API's minimum, a gang of one": (job(min_available=0), 1),
}


@VERSIONS
@pytest.mark.parametrize(("gang", "want"), MIN_COUNT.values(), ids=MIN_COUNT.keys())
def test_min_count_follows_the_other_backends_min_member(gang: GangJob, want: int, version: str) -> None:
    for child in (workload(gang, version), runtime_pod_group(gang, version)):
        assert gang_policy(child)["schedulingPolicy"] == {"gang": {"minCount": want}}


@VERSIONS
def test_topology_annotation_becomes_the_groups_constraint(version: str) -> None:
    spaced = {"mpi-operator-hook/gang-topology-key": " topology.kubernetes.io/zone "}
    gang = job(annotations=spaced)
    for child in (workload(gang, version), runtime_pod_group(gang, version)):
        constraints = gang_policy(child)["schedulingConstraints"]
        assert constraints == {"topology": [{"key": "topology.kubernetes.io/zone"}]}


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["podGroupTemplates"][0] if obj["kind"] == "Workload" else obj["spec"]
    return spec


# id: (the job, the priorityClassName wanted on 1.37's objects)
PRIORITIES = {
    "schedulingPolicy.priorityClass": (job(), "high"),
    "else the launcher's, as Volcano's group": (
        GangJob(
            "pi", "ns", None, Replica(1, "Never", {"spec": {"priorityClassName": "launcher-class"}}), rep(2)
        ),
        "launcher-class",
    ),
    "none: left out (the cluster default applies)": (job(priority_class=None), None),
}


@pytest.mark.parametrize(("gang", "want"), PRIORITIES.values(), ids=PRIORITIES.keys())
def test_1_37_groups_carry_the_jobs_priority_class_and_are_disrupted_whole(
    gang: GangJob, want: str | None
) -> None:
    for child in (workload(gang, BETA), runtime_pod_group(gang, BETA)):
        assert spec_of(child).get("priorityClassName") == want
        assert spec_of(child)["disruptionMode"] == {"all": {}}


def test_1_36_groups_have_no_priority_and_no_disruption_mode() -> None:
    """priorityClassName is behind WorkloadAwarePreemption in 1.36: forbidden without it."""
    for child in (workload(job(), ALPHA), runtime_pod_group(job(), ALPHA)):
        assert "priorityClassName" not in str(child) and "disruptionMode" not in str(child)
        assert "schedulingConstraints" not in gang_policy(child)


@VERSIONS
@pytest.mark.parametrize("annotations", [{}, TOPOLOGY], ids=["plain", "topology"])
def test_children_match_their_releases_schemas(annotations: dict[str, str], version: str) -> None:
    gang = job(annotations=annotations)
    for child in (workload(gang, version), runtime_pod_group(gang, version)):
        assert schema_errors(child) == []


@VERSIONS
def test_schema_check_can_fail(version: str) -> None:
    broken = workload(job(), version)
    broken["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minMember"] = 5
    assert schema_errors(broken) != []
    other = ALPHA if version == BETA else BETA
    assert schema_errors(runtime_pod_group(job(), version) | {"apiVersion": other}) != []


def test_pods_name_the_group_and_keep_their_scheduler() -> None:
    spec = {"schedulerName": "my-scheduler", "containers": []}
    labels, annotations, decorated = decorate(membership(KUBERNETES, "pi"), {"a": "b"}, {"c": "d"}, spec)
    assert (labels, annotations) == ({"a": "b"}, {"c": "d"})
    assert decorated == {**spec, "schedulingGroup": {"podGroupName": "pi"}}


def test_the_setting_picks_the_workload_api_1_37s_by_default() -> None:
    scheduler = gang_scheduler(" kubernetes ")
    assert scheduler == KUBERNETES and scheduler.kubernetes and not scheduler.volcano
    assert scheduler.api_version == "scheduling.k8s.io/v1beta1"
    assert scheduler.resources == ("workloads", "podgroups")
    assert scheduler.overlay == "deploy/overlays/kubernetes"


# id: (the PodGroup apiVersions the CompositeController declares, the version written, the overlay)
DECLARED = {
    "1.37's overlay": (frozenset({BETA}), BETA, "deploy/overlays/kubernetes"),
    "1.36's overlay": (frozenset({ALPHA}), ALPHA, "deploy/overlays/kubernetes-1.36"),
    "neither: the newest, whose overlay the notice names": (frozenset(), BETA, "deploy/overlays/kubernetes"),
    "both (no release serves both): the newest": (
        frozenset({ALPHA, BETA}),
        BETA,
        "deploy/overlays/kubernetes",
    ),
}


@pytest.mark.parametrize(("versions", "written", "overlay"), DECLARED.values(), ids=DECLARED.keys())
def test_the_declared_children_name_the_version(versions: frozenset[str], written: str, overlay: str) -> None:
    """The overlay applied decides: the user never names the version twice."""
    scheduler = declared(KUBERNETES, versions | {"scheduling.volcano.sh/v1beta1"})
    assert (scheduler.api_version, scheduler.overlay) == (written, overlay)


def test_other_backends_are_not_touched_by_the_workload_api_versions() -> None:
    volcano = GangScheduler("volcano")
    assert declared(volcano, frozenset({ALPHA})) is volcano
