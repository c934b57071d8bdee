"""The PodGroup builders, table by table as upstream's pkg/controller/podgroup_test.go, plus our fixes.

Each upstream table has a counterpart here (TestNewPodGroup, TestCalcPriorityClassName,
TestDecoratePodTemplateSpec, TestCalculatePGMinResources, TestAddResources, TestCalculateMinAvailable,
TestReplicasOrder); the expected objects are ours. Every PodGroup built here also passes the schema we
wrote from the scheduler's Go API types.
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from app.api.defaults import Replica
from app.api.types import RestartPolicy, SchedulingPolicy
from app.children import podgroup
from app.children.podgroup import GangJob
from app.kube.gang import GangScheduler, gang_scheduler
from tests.packaging.test_crd import test_schema_is_structural as structural
from tests.support.kube_schema import schema_errors
from tests.support.podgroup_crds import PODGROUP_API_VERSIONS, podgroup_crd

VOLCANO = GangScheduler("volcano")
PLUGINS = GangScheduler("scheduler-plugins-scheduler")
HIGH_LOW = {"high": 100_010, "low": 10_010}


def rep(replicas: int, *containers: dict[str, Any], priority_class: str = "") -> Replica:
    """A defaulted replica spec, as the builders get it from the job."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", **c} for c in containers]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return Replica(replicas, RestartPolicy.NEVER.value, {"spec": spec})


def requests(**quantities: Any) -> dict[str, Any]:
    return {"resources": {"requests": quantities}}


def policy(**fields: Any) -> SchedulingPolicy:
    return SchedulingPolicy.model_validate(fields)


def job(
    launcher: Replica | None = None,
    worker: Replica | None = None,
    sp: SchedulingPolicy | None = None,
    annotations: dict[str, str] | None = None,
    launcher_pending: bool = False,
) -> GangJob:
    return GangJob(
        name="test",
        namespace="ns",
        policy=sp,
        launcher_spec=launcher,
        worker_spec=worker,
        annotations=annotations or {},
        launcher_pending=launcher_pending,
    )


MIN_RESOURCES = {"cpu": "100", "memory": "512Gi", "example.com/gpu": "40"}
QUEUE_X = {"scheduling.volcano.sh/queue-name": "project-x"}


def pg(api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "test", "namespace": "ns"},
        "spec": spec,
    }


# -------------------------------------------------------------------------------------- TestNewPodGroup
NEW_POD_GROUP = {
    "all schedulingPolicy fields are set": (
        job(
            rep(1, requests(cpu="1", memory="2Gi")),
            rep(1000, requests(cpu="10", memory="20Gi")),
            policy(
                minAvailable=2,
                queue="project-y",
                priorityClass="high",
                minResources=MIN_RESOURCES,
                scheduleTimeoutSeconds=100,
            ),
            QUEUE_X,
        ),
        pg(
            "scheduling.volcano.sh/v1beta1",
            {
                "minMember": 2,
                "queue": "project-y",
                "priorityClassName": "high",
                "minResources": MIN_RESOURCES,
            },
        ),
        pg(
            "scheduling.x-k8s.io/v1alpha1",
            {"minMember": 2, "scheduleTimeoutSeconds": 100, "minResources": MIN_RESOURCES},
        ),
    ),
    "schedulingPolicy is nil": (
        job(
            rep(1, requests(cpu="1", memory="2Gi"), priority_class="high"),
            rep(2, requests(cpu="10", memory="20Gi")),
            None,
            QUEUE_X,
        ),
        pg(
            "scheduling.volcano.sh/v1beta1",
            {
                "minMember": 3,
                "queue": "project-x",
                "priorityClassName": "high",
                "minResources": {"cpu": "21", "memory": "42Gi"},
            },
        ),
        pg(
            "scheduling.x-k8s.io/v1alpha1",
            {"minMember": 3, "scheduleTimeoutSeconds": 0, "minResources": {"cpu": "21", "memory": "42Gi"}},
        ),
    ),
    "no worker no MinResources": (
        job(
            rep(1, requests(cpu="1", memory="2Gi")),
            None,
            policy(minAvailable=1, queue="project-y", priorityClass="high", scheduleTimeoutSeconds=100),
            QUEUE_X,
        ),
        pg(
            "scheduling.volcano.sh/v1beta1",
            {
                "minMember": 1,
                "queue": "project-y",
                "priorityClassName": "high",
                "minResources": {"cpu": "1", "memory": "2Gi"},
            },
        ),
        pg(
            "scheduling.x-k8s.io/v1alpha1",
            {"minMember": 1, "scheduleTimeoutSeconds": 100, "minResources": {"cpu": "1", "memory": "2Gi"}},
        ),
    ),
    # Ours: zero and empty values are left out (Go's omitempty); the schemas reject queue "" and minMember 0.
    "minAvailable 0, no queue, no priority class": (
        job(rep(1, requests(cpu="1")), rep(2, requests(cpu="1")), policy(minAvailable=0)),
        pg("scheduling.volcano.sh/v1beta1", {}),
        pg("scheduling.x-k8s.io/v1alpha1", {"scheduleTimeoutSeconds": 0}),
    ),
    "containers without resources": (
        job(rep(1, {}), rep(2, {})),
        pg("scheduling.volcano.sh/v1beta1", {"minMember": 3}),
        pg("scheduling.x-k8s.io/v1alpha1", {"minMember": 3, "scheduleTimeoutSeconds": 0}),
    ),
}


@pytest.mark.parametrize(("gang", "volcano", "plugins"), NEW_POD_GROUP.values(), ids=NEW_POD_GROUP.keys())
def test_new_pod_group(gang: GangJob, volcano: dict[str, Any], plugins: dict[str, Any]) -> None:
    assert podgroup.pod_group(VOLCANO, gang, {}) == volcano
    assert podgroup.pod_group(PLUGINS, gang, {}) == plugins


@pytest.mark.parametrize(("gang", "volcano", "plugins"), NEW_POD_GROUP.values(), ids=NEW_POD_GROUP.keys())
def test_new_pod_group_matches_the_schedulers_schema(
    gang: GangJob, volcano: dict[str, Any], plugins: dict[str, Any]
) -> None:
    for scheduler in (VOLCANO, PLUGINS):
        assert schema_errors(podgroup.pod_group(scheduler, gang, HIGH_LOW)) == []


def test_explicit_min_resources_are_canonical() -> None:
    gang = job(rep(1), rep(1), policy(minResources={"cpu": 1000, "memory": "1024Mi", "nvidia.com/gpu": "8"}))
    expected = {"cpu": "1k", "memory": "1Gi", "nvidia.com/gpu": "8"}
    assert podgroup.pod_group(PLUGINS, gang, {})["spec"]["minResources"] == expected


# ---------------------------------------------------------------------------- TestCalcPriorityClassName
PRIORITY_CLASS_NAME = {
    "use schedulingPolicy": (job(sp=policy(priorityClass="high")), "high"),
    "use launcher": (job(rep(1, priority_class="high"), rep(1, priority_class="low")), "high"),
    "use worker": (job(rep(1), rep(1, priority_class="low")), "low"),
    "nothing": (job(rep(1), rep(1)), ""),
    "empty schedulingPolicy value falls through": (
        job(rep(1, priority_class="high"), rep(1), policy(priorityClass="")),
        "high",
    ),
}


@pytest.mark.parametrize(("gang", "want"), PRIORITY_CLASS_NAME.values(), ids=PRIORITY_CLASS_NAME.keys())
def test_priority_class_name(gang: GangJob, want: str) -> None:
    assert podgroup.priority_class_name(gang) == want


def test_priority_class_name_is_volcano_only() -> None:
    gang = job(rep(1), rep(1), policy(priorityClass="high", queue="q"))
    assert "priorityClassName" in podgroup.pod_group(VOLCANO, gang, {})["spec"]
    assert set(podgroup.pod_group(PLUGINS, gang, {})["spec"]) == {"minMember", "scheduleTimeoutSeconds"}


# ------------------------------------------------------------------------ TestDecoratePodTemplateSpec
def test_decorate_pod_template_spec_volcano() -> None:
    got = podgroup.decorate(podgroup.membership(VOLCANO, "test-mpijob"), {}, {}, {})
    assert got == ({}, {"scheduling.k8s.io/group-name": "test-mpijob"}, {"schedulerName": "volcano"})


def test_decorate_pod_template_spec_scheduler_plugins() -> None:
    got = podgroup.decorate(
        podgroup.membership(GangScheduler("default-scheduler"), "test-mpijob"), {}, {}, {}
    )
    assert got == (
        {"scheduling.x-k8s.io/pod-group": "test-mpijob"},
        {},
        {"schedulerName": "default-scheduler"},
    )


def test_decorate_keeps_the_users_metadata_and_overrides_the_scheduler() -> None:
    labels, annotations = {"team": "a"}, {"note": "b"}
    spec = {"schedulerName": "my-scheduler", "containers": [{"name": "c"}]}
    got = podgroup.decorate(podgroup.membership(PLUGINS, "j"), labels, annotations, spec)
    assert got == (
        {"team": "a", "scheduling.x-k8s.io/pod-group": "j"},
        {"note": "b"},
        {"schedulerName": "scheduler-plugins-scheduler", "containers": [{"name": "c"}]},
    )
    assert (labels, annotations, spec["schedulerName"]) == ({"team": "a"}, {"note": "b"}, "my-scheduler")


# ------------------------------------------------------------------------ TestCalculatePGMinResources
MIN_RESOURCES_CASES: dict[str, tuple[GangJob, int, dict[str, int], dict[str, str] | None]] = {
    "minResources is not empty": (job(sp=policy(minResources=MIN_RESOURCES)), 0, {}, MIN_RESOURCES),
    "minResources wins over minMember 0 and the templates": (
        job(rep(1, requests(cpu="1")), rep(2, requests(cpu="1")), policy(minResources={"cpu": "5"})),
        0,
        {},
        {"cpu": "5"},
    ),
    "schedulingPolicy is nil and minMember 0": (job(), 0, {}, None),
    "without priorityClass": (
        job(rep(1, requests(cpu="2", memory="1Gi")), rep(2, requests(cpu="10", memory="32Gi"))),
        3,
        {},
        {"cpu": "22", "memory": "65Gi"},
    ),
    "without worker without priorityClass": (
        job(rep(1, requests(cpu="2", memory="1Gi"))),
        1,
        {},
        {"cpu": "2", "memory": "1Gi"},
    ),
    "every container counts": (
        job(
            rep(1, requests(cpu="2", memory="1Gi")),
            rep(2, requests(cpu="10", memory="32Gi"), requests(cpu="50", memory="512Gi")),
        ),
        3,
        {},
        {"cpu": "122", "memory": "1089Gi"},
    ),
    "with non-existence priorityClass": (
        job(
            rep(1, requests(cpu="2", memory="2Gi"), priority_class="non-existence"),
            rep(2, requests(cpu="5", memory="16Gi"), priority_class="non-existence"),
        ),
        2,
        {},
        {"cpu": "7", "memory": "18Gi"},
    ),
    "with existence priorityClass": (
        job(
            rep(1, requests(cpu="2", memory="4Gi"), priority_class="high"),
            rep(100, requests(cpu="20", memory="64Gi"), priority_class="low"),
        ),
        2,
        HIGH_LOW,
        {"cpu": "22", "memory": "68Gi"},
    ),
    "equal priorities trim the workers": (
        job(rep(1, requests(cpu="1")), rep(10, requests(cpu="4"))),
        4,
        {},
        {"cpu": "13"},
    ),
    # Ours: upstream would give the launcher minMember-1 = 3 replicas and keep all 10 workers (cpu 43).
    "higher-priority workers fill the gang first": (
        job(
            rep(1, requests(cpu="1"), priority_class="low"), rep(10, requests(cpu="4"), priority_class="high")
        ),
        4,
        HIGH_LOW,
        {"cpu": "16"},
    ),
    "a trimmed-away replica type still names its resources": (
        job(
            rep(1, requests(cpu="1"), priority_class="high"),
            rep(3, requests(cpu="1", **{"nvidia.com/gpu": "8"}), priority_class="low"),
        ),
        1,
        HIGH_LOW,
        {"cpu": "1", "nvidia.com/gpu": "0"},
    ),
}


@pytest.mark.parametrize(
    ("gang", "members", "priorities", "want"), MIN_RESOURCES_CASES.values(), ids=MIN_RESOURCES_CASES.keys()
)
def test_calculate_pg_min_resources(
    gang: GangJob, members: int, priorities: dict[str, int], want: dict[str, str] | None
) -> None:
    assert podgroup.min_resources(gang, members, priorities) == want


# ------------------------------------------------------------------------------------ TestAddResources
ADD_RESOURCES = {
    "add a new resource": ([requests(cpu="20")], {"cpu": "20"}),
    "increase a quantity": ([requests(memory="20Gi"), requests(memory="10Gi")], {"memory": "30Gi"}),
    "same resource names exist in requests and limits": (
        [
            {
                "resources": {
                    "requests": {"cpu": "10", "memory": "16Gi"},
                    "limits": {"example.com/gpu": "8", "cpu": "20", "memory": "32Gi"},
                }
            }
        ],
        {"example.com/gpu": "8", "cpu": "10", "memory": "16Gi"},
    ),
    "limits only": ([{"resources": {"limits": {"cpu": "500m"}}}], {"cpu": "500m"}),
    "quantities are summed exactly and printed canonically": (
        [requests(cpu="500m", memory="1.5Gi"), requests(cpu=1, memory="512Mi"), requests(cpu="0.5")],
        {"cpu": "2", "memory": "2Gi"},
    ),
    "the first quantity's format is kept": (
        [requests(memory="1G"), requests(memory="1Gi")],
        {"memory": "2073741824"},
    ),
    "a zero first quantity takes the next one's format": (
        [requests(memory="0"), requests(memory="1Gi")],
        {"memory": "1Gi"},
    ),
    "unparsable quantities are skipped": ([requests(cpu="lots", memory="1Gi")], {"memory": "1Gi"}),
}


@pytest.mark.parametrize(("containers", "want"), ADD_RESOURCES.values(), ids=ADD_RESOURCES.keys())
def test_add_resources(containers: list[dict[str, Any]], want: dict[str, str]) -> None:
    gang = job(rep(1, *containers))
    assert podgroup.min_resources(gang, 1, {}) == want


def test_replicas_multiply_the_quantities() -> None:
    gang = job(rep(1, requests(cpu="250m")), rep(7, requests(cpu="250m", memory="100Mi")))
    assert podgroup.min_resources(gang, 8, {}) == {"cpu": "2", "memory": "700Mi"}


# ---------------------------------------------------------------------------- TestCalculateMinAvailable
MIN_AVAILABLE = {
    "minAvailable isn't empty": (job(rep(1), rep(1000), policy(minAvailable=2)), 2),
    "minAvailable is empty": (job(rep(1), rep(99)), 100),
    "schedulingPolicy without minAvailable": (job(rep(1), rep(99), policy(queue="q")), 100),
    "no worker": (job(rep(1)), 1),
    # Ours (upstream #608): a launcher that waits for ready workers is not counted until it exists.
    "launcher pending": (job(rep(1), rep(4), launcher_pending=True), 4),
    "launcher pending, minAvailable above the workers": (
        job(rep(1), rep(4), policy(minAvailable=5), launcher_pending=True),
        4,
    ),
    "launcher pending, minAvailable below the workers": (
        job(rep(1), rep(4), policy(minAvailable=2), launcher_pending=True),
        2,
    ),
}


@pytest.mark.parametrize(("gang", "want"), MIN_AVAILABLE.values(), ids=MIN_AVAILABLE.keys())
def test_calculate_min_available(gang: GangJob, want: int) -> None:
    assert podgroup.min_member(gang) == want


def test_pending_launcher_is_not_in_the_groups_resources() -> None:
    """Upstream #608: the group of a WaitForWorkersReady job is the workers until the launcher exists."""
    launcher, worker = rep(1, requests(cpu="1", memory="1Gi")), rep(4, requests(cpu="8", memory="16Gi"))
    waiting = podgroup.pod_group(PLUGINS, job(launcher, worker, launcher_pending=True), {})
    started = podgroup.pod_group(PLUGINS, job(launcher, worker), {})
    assert waiting["spec"] == {
        "minMember": 4,
        "scheduleTimeoutSeconds": 0,
        "minResources": {"cpu": "32", "memory": "64Gi"},
    }
    assert started["spec"] == {
        "minMember": 5,
        "scheduleTimeoutSeconds": 0,
        "minResources": {"cpu": "33", "memory": "65Gi"},
    }


# ------------------------------------------------------------------------------------ TestReplicasOrder
# Which Pods make up a gang smaller than the job: (launcher priority, worker priority) -> counted Pods.
ORDER = {
    "launcher higher priority": ("high", "low", {"launcher": 1, "worker": 2}),
    "equal priority": ("", "", {"launcher": 1, "worker": 2}),
    "worker higher priority": ("low", "high", {"launcher": 0, "worker": 3}),
}


@pytest.mark.parametrize(("launcher_class", "worker_class", "want"), ORDER.values(), ids=ORDER.keys())
def test_replicas_order(launcher_class: str, worker_class: str, want: dict[str, int]) -> None:
    gang = job(
        rep(1, requests(launcher="1"), priority_class=launcher_class),
        rep(5, requests(worker="1"), priority_class=worker_class),
    )
    got = podgroup.min_resources(gang, 3, HIGH_LOW)
    assert got == {role: str(count) for role, count in want.items()}


# --------------------------------------------------------------------------------------------- selection
@pytest.mark.parametrize(
    ("setting", "want"),
    [
        ("", None),
        ("  ", None),
        ("volcano", ("scheduling.volcano.sh/v1beta1", "volcano", "deploy/overlays/volcano")),
        (
            "scheduler-plugins-scheduler",
            (
                "scheduling.x-k8s.io/v1alpha1",
                "scheduler-plugins-scheduler",
                "deploy/overlays/scheduler-plugins",
            ),
        ),
        (
            "default-scheduler",
            ("scheduling.x-k8s.io/v1alpha1", "default-scheduler", "deploy/overlays/scheduler-plugins"),
        ),
    ],
)
def test_gang_scheduler_selection(setting: str, want: tuple[str, str, str] | None) -> None:
    scheduler = gang_scheduler(setting)
    got = None if scheduler is None else (scheduler.api_version, scheduler.scheduler_name, scheduler.overlay)
    assert got == want


# ------------------------------------------------------------------------------ the schemas as CRDs
@pytest.mark.parametrize("api_version", PODGROUP_API_VERSIONS)
def test_schema_makes_a_valid_structural_crd(api_version: str) -> None:
    crd = podgroup_crd(api_version)
    kubernetes_validate.validate(crd, "1.32.0", strict=True)
    structural(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("api_version", PODGROUP_API_VERSIONS)
def test_schema_rejects_what_the_scheduler_rejects(api_version: str) -> None:
    """Our schemas are strict where the Go types are: the checks above can fail."""
    scheduler = next(s for s in (VOLCANO, PLUGINS) if s.api_version == api_version)
    obj = podgroup.pod_group(scheduler, job(rep(1), rep(2)), {})
    assert schema_errors(obj) == []
    bad = {**obj, "spec": {"minMember": -1, "minResources": {"cpu": "lots"}, "unknown": 1}}
    problems = schema_errors(bad)
    assert any(p.startswith("spec/minMember") for p in problems)
    assert any(p.startswith("spec/minResources/cpu") for p in problems)
    assert any("unknown" in p for p in problems)
