"""``gang_scheduling``: upstream's PodGroup (created with the workers, none while suspended, neither created
nor deleted once the launcher Job is done), available only when the CompositeController declares the
PodGroup child (docs/compatibility.md: GangSchedulingUnavailable)."""

from __future__ import annotations

import pytest

from app.core.policies import gang_scheduling
from app.core.policies.gang_scheduling import Gang
from app.kube.gang import SCHEDULER_PLUGINS_API_VERSION, VOLCANO_API_VERSION, GangScheduler
from tests.support.observed import observed

VOLCANO = GangScheduler("volcano")
PLUGINS = GangScheduler("scheduler-plugins-scheduler")
BOTH_DECLARED = frozenset({VOLCANO_API_VERSION, SCHEDULER_PLUGINS_API_VERSION})

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


@pytest.mark.parametrize("scheduler", [VOLCANO, PLUGINS], ids=["volcano", "scheduler-plugins"])
def test_a_scheduler_whose_podgroup_child_is_not_declared_is_not_used(scheduler: GangScheduler) -> None:
    """Only the other kind is declared: the Pods join no PodGroup and the job says why."""
    other = BOTH_DECLARED - {scheduler.api_version}
    seen = observed(podgroups=BOTH_DECLARED, podgroups_declared=other)
    decided = gang_scheduling.decide(
        scheduler, seen, finished_before=False, suspended=False, launcher_done=False, cleaned=False
    )
    assert decided == Gang(undeclared=scheduler)
