"""``gang_scheduling``: upstream's PodGroup (created with the workers, none while suspended, neither created
nor deleted once the launcher Job is done), available only when the CompositeController declares the
PodGroup child (docs/compatibility.md: GangSchedulingUnavailable)."""

from __future__ import annotations

import msgspec
import pytest

from app.core.observed import GangWait
from app.core.policies import gang_scheduling
from app.core.policies.gang_scheduling import Gang
from app.kube.controller import Controller
from app.kube.gang import (
    SCHEDULER_PLUGINS_API_VERSION,
    VOLCANO_API_VERSION,
    WORKLOAD_API_V1BETA1,
    GangScheduler,
)
from app.kube.request import PodGroupSpec, PodGroupStatus
from tests.support.builders import mpijob
from tests.support.observed import defaulted, observed

VOLCANO = GangScheduler("volcano")
PLUGINS = GangScheduler("scheduler-plugins-scheduler")
KUBERNETES = GangScheduler("kubernetes")
K8S = KUBERNETES
BOTH_DECLARED = frozenset({VOLCANO_API_VERSION, SCHEDULER_PLUGINS_API_VERSION, WORKLOAD_API_V1BETA1})

# id: (scheduler, the PodGroup exists, finished before, suspended, launcher done, cleaned, want)
CASES: dict[str, tuple[GangScheduler, bool, bool, bool, bool, bool, Gang]] = {
    "running: the PodGroup is returned (created)": (
        VOLCANO,
        False,
        False,
        False,
        False,
        False,
        Gang(VOLCANO, True),
    ),
    "scheduler-plugins alike": (PLUGINS, True, False, False, False, False, Gang(PLUGINS, True)),
    # Ours: the Workload API's PodGroup (its Workload follows it) by the same rules.
    "workload API: created": (KUBERNETES, False, False, False, False, False, Gang(KUBERNETES, True)),
    "workload API: suspended, dropped": (K8S, True, False, True, False, False, Gang(K8S, False)),
    "workload API: launcher done, kept": (K8S, True, False, False, True, False, Gang(K8S, True)),
    "workload API: launcher done, not created": (
        KUBERNETES,
        False,
        False,
        False,
        True,
        False,
        Gang(KUBERNETES, False),
    ),
    "workload API: finished, kept": (KUBERNETES, True, True, False, False, False, Gang(KUBERNETES, True)),
    "workload API: finished and cleaned, deleted": (
        KUBERNETES,
        True,
        True,
        False,
        False,
        True,
        Gang(KUBERNETES, False),
    ),
    "suspended: dropped": (VOLCANO, True, False, True, False, False, Gang(VOLCANO, False)),
    "launcher done: kept as it is": (VOLCANO, True, False, False, True, False, Gang(VOLCANO, True)),
    "launcher done: not created": (VOLCANO, False, False, False, True, False, Gang(VOLCANO, False)),
    "finished: kept": (VOLCANO, True, True, False, False, False, Gang(VOLCANO, True)),
    "finished, cleanPodPolicy cleans up: deleted": (
        VOLCANO,
        True,
        True,
        False,
        False,
        True,
        Gang(VOLCANO, False),
    ),
    "finished: never created": (VOLCANO, False, True, False, False, False, Gang(VOLCANO, False)),
}


@pytest.mark.parametrize(
    ("scheduler", "exists", "finished", "suspended", "done", "cleaned", "want"),
    CASES.values(),
    ids=CASES.keys(),
)
def test_the_podgroup(
    scheduler: GangScheduler,
    exists: bool,
    finished: bool,
    suspended: bool,
    done: bool,
    cleaned: bool,
    want: Gang,
) -> None:
    seen = observed(
        podgroups=frozenset({scheduler.api_version}) if exists else frozenset(),
        podgroups_declared=BOTH_DECLARED,
    )
    decided = gang_scheduling.decide(
        scheduler, seen, finished_before=finished, suspended=suspended, launcher_done=done, cleaned=cleaned
    )
    assert decided == want


def test_no_gang_scheduling_configured() -> None:
    decided = gang_scheduling.decide(
        None, observed(), finished_before=False, suspended=False, launcher_done=False, cleaned=False
    )
    assert decided == Gang()


@pytest.mark.parametrize(
    "scheduler", [VOLCANO, PLUGINS, KUBERNETES], ids=["volcano", "scheduler-plugins", "kubernetes"]
)
def test_a_scheduler_whose_podgroup_child_is_not_declared_is_not_used(scheduler: GangScheduler) -> None:
    """Only the other kind is declared: the Pods join no PodGroup and the job says why."""
    other = BOTH_DECLARED - {scheduler.api_version}
    seen = observed(podgroups=BOTH_DECLARED, podgroups_declared=other)
    decided = gang_scheduling.decide(
        scheduler, seen, finished_before=False, suspended=False, launcher_done=False, cleaned=False
    )
    assert decided == Gang(undeclared=scheduler)


def _declared(*children: tuple[str, str]) -> frozenset[str]:
    """The PodGroup apiVersions a CompositeController declaring ``children`` makes available."""
    spec = {"childResources": [{"apiVersion": a, "resource": r} for a, r in children]}
    return msgspec.convert({"spec": spec}, Controller).declared_podgroups


@pytest.mark.parametrize(
    ("children", "available"),
    [
        (((WORKLOAD_API_V1BETA1, "workloads"), (WORKLOAD_API_V1BETA1, "podgroups")), True),
        (((WORKLOAD_API_V1BETA1, "podgroups"),), False),
        (((WORKLOAD_API_V1BETA1, "workloads"),), False),
    ],
    ids=["both", "podgroups only", "workloads only"],
)
def test_the_workload_api_needs_both_children_declared(
    children: tuple[tuple[str, str], ...], available: bool
) -> None:
    """The PodGroup references the Workload: with one kind missing the job runs without gang scheduling."""
    seen = observed(podgroups_declared=_declared(*children))
    decided = gang_scheduling.decide(
        KUBERNETES, seen, finished_before=False, suspended=False, launcher_done=False, cleaned=False
    )
    assert decided == (Gang(KUBERNETES, True) if available else Gang(undeclared=KUBERNETES))


@pytest.mark.parametrize(
    ("scheduler", "refused"),
    [(None, True), (VOLCANO, True), (PLUGINS, True), (KUBERNETES, False)],
    ids=["no gang scheduling", "volcano", "scheduler-plugins", "kubernetes"],
)
def test_a_topology_key_only_the_workload_api_honours(scheduler: GangScheduler | None, refused: bool) -> None:
    """Ours: refused with a notice rather than ignored; the gang itself is decided as without it."""
    seen = observed(podgroups_declared=BOTH_DECLARED)
    flags = {"finished_before": False, "suspended": False, "launcher_done": False, "cleaned": False}
    without = gang_scheduling.decide(scheduler, seen, **flags)
    decided = gang_scheduling.with_topology(without, scheduler, "topology.kubernetes.io/zone")
    assert decided.refused_topology == ("topology.kubernetes.io/zone" if refused else "")
    assert (decided.scheduler, decided.podgroup) == (without.scheduler, without.podgroup)
    assert gang_scheduling.with_topology(without, scheduler, "") == without


HELD = {
    WORKLOAD_API_V1BETA1: msgspec.convert(
        {
            "conditions": [
                {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable"}
            ]
        },
        PodGroupStatus,
    )
}
WAIT = GangWait("Unschedulable")

# id: (scheduler, finished before, suspended, launcher done, ended, PodGroup statuses, want)
WAIT_CASES: dict[
    str, tuple[GangScheduler, bool, bool, bool, bool, dict[str, PodGroupStatus], GangWait | None]
] = {
    "held while the job runs: said": (KUBERNETES, False, False, False, False, HELD, WAIT),
    "placed: nothing to say": (KUBERNETES, False, False, False, False, {}, None),
    "the job ends in this sync: no longer said": (KUBERNETES, False, False, False, True, HELD, None),
    "finished before (the PodGroup kept): not said": (KUBERNETES, True, False, False, True, HELD, None),
    "suspended (the PodGroup dropped): not said": (KUBERNETES, False, True, False, False, HELD, None),
    "another backend's PodGroup: not this gang": (VOLCANO, False, False, False, False, HELD, None),
}


@pytest.mark.parametrize(
    ("scheduler", "finished", "suspended", "done", "ended", "statuses", "want"),
    WAIT_CASES.values(),
    ids=WAIT_CASES.keys(),
)
def test_whether_the_job_says_its_gang_waits(
    scheduler: GangScheduler,
    finished: bool,
    suspended: bool,
    done: bool,
    ended: bool,
    statuses: dict[str, PodGroupStatus],
    want: GangWait | None,
) -> None:
    """Said while the response keeps the PodGroup and the job has not ended; the rest of the gang's decision
    stays as it was."""
    seen = observed(podgroups=BOTH_DECLARED, podgroups_declared=BOTH_DECLARED, podgroup_statuses=statuses)
    flags = {"finished_before": finished, "suspended": suspended, "launcher_done": done, "cleaned": False}
    without = gang_scheduling.decide(scheduler, seen, **flags)
    decided = gang_scheduling.with_wait(without, seen, ended=ended)
    assert decided.waiting == want
    assert (decided.scheduler, decided.podgroup) == (without.scheduler, without.podgroup)


# Ours: new workers wait for the PodGroup that counts them (Metacontroller creates a response's Pods before
# its PodGroups). id: (gang decided, the observed PodGroup's minMember by apiVersion, the job's workers and
# whether its launcher is pending (WaitForWorkersReady), want: hold new workers)
HOLD_CASES: dict[str, tuple[Gang, dict[str, int | None], int, bool, bool]] = {
    "scaled up: the PodGroup still asks the old size": (
        Gang(VOLCANO, True),
        {VOLCANO_API_VERSION: 3},
        3,
        False,
        True,
    ),
    "scaled down: likewise until it matches": (
        Gang(PLUGINS, True),
        {SCHEDULER_PLUGINS_API_VERSION: 4},
        2,
        False,
        True,
    ),
    "the PodGroup matches": (Gang(VOLCANO, True), {VOLCANO_API_VERSION: 3}, 2, False, False),
    "a pending launcher is not counted": (Gang(VOLCANO, True), {VOLCANO_API_VERSION: 2}, 2, True, False),
    "no PodGroup yet: the scheduler waits for it by itself": (Gang(VOLCANO, True), {}, 2, False, False),
    "minMember 0 is written as none": (
        Gang(PLUGINS, True),
        {SCHEDULER_PLUGINS_API_VERSION: None},
        0,
        True,
        False,
    ),
    "the other scheduler's PodGroup is not read": (
        Gang(VOLCANO, True),
        {SCHEDULER_PLUGINS_API_VERSION: 2},
        2,
        False,
        False,
    ),
    "suspended: no PodGroup in the response": (
        Gang(VOLCANO, False),
        {VOLCANO_API_VERSION: 2},
        2,
        False,
        False,
    ),
    "no gang scheduling": (Gang(), {VOLCANO_API_VERSION: 2}, 2, False, False),
}


@pytest.mark.parametrize(
    ("gang", "sizes", "workers", "launcher_pending", "want"), HOLD_CASES.values(), ids=HOLD_CASES.keys()
)
def test_new_workers_wait_for_the_podgroup_that_counts_them(
    gang: Gang, sizes: dict[str, int | None], workers: int, launcher_pending: bool, want: bool
) -> None:
    specs = {version: PodGroupSpec(min_member=members) for version, members in sizes.items()}
    job = defaulted(mpijob().workers(workers))
    seen = observed(podgroup_specs=specs)
    assert gang_scheduling.holds_new_workers(gang, seen, job, launcher_pending=launcher_pending) is want
