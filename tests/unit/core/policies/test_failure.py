"""``failure.decide``: our failure policy (docs/compatibility.md: "a worker Pod fails"; upstream has none:
without ``spec.failurePolicy`` nothing is decided, as upstream, until the launcher Job gives up)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from app.core.observed import Observed
from app.core.policies import failure
from app.core.policies.failure import Action, Restarts
from tests.support.builders import MPIJobBuilder, mpijob
from tests.support.observed import (
    condition,
    defaulted,
    launcher_job,
    launcher_pod,
    observed,
    with_policy,
    worker,
)

FAIL_ON_42 = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
IGNORE_OOM = {"action": "RestartJobAndIgnoreMaxRestarts", "onExitCodes": {"operator": "In", "values": [137]}}
LAUNCHER_ONLY_FAILS = {"action": "FailJob", "replicaTypes": ["Launcher"]}
ON_DISRUPTION = {"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]}


@dataclass(frozen=True)
class Want:
    """What the policy decides: the action on the deciding failure, and the record the status keeps."""

    action: Action | None = None
    # The Restarting or Failed reason, and the Pod that failed.
    reason: str = ""
    pod: str = ""
    recorded: tuple[int, int] | None = (0, 0)
    in_flight: bool = False
    counted: bool = False


def _policed(max_restarts: int | None = 2, *rules: dict[str, Any]) -> MPIJobBuilder:
    return with_policy(mpijob(), max_restarts, *rules)


def _running(*failed: Any) -> Observed:
    """A running attempt 0: the launcher Job and both workers, ``failed`` replacing some of them."""
    pods = {0: worker(0, attempt=0), 1: worker(1, attempt=0)}
    pods.update({int(pod.metadata.name.rsplit("-", 1)[1]): pod for pod in failed})
    return observed(launcher_job(ready=1, attempt=0), pods)


ERROR_1 = worker(1, "Failed", exit_code=1, attempt=0)
OOM_0 = worker(0, "Failed", exit_code=137, exit_reason="OOMKilled", attempt=0)
EXIT_42 = worker(1, "Failed", exit_code=42, attempt=0)
EVICTED_0 = worker(0, "Failed", reason="Evicted", attempt=0)
DISRUPTED_1 = worker(1, "Running", disrupted=True, attempt=0)
FAILED_LAUNCHER_POD = launcher_pod("Failed", exit_code=1, attempt=0)

# id: (job, observed, suspended, what the policy decides)
CASES: dict[str, tuple[MPIJobBuilder, Observed, bool, Want]] = {
    "no policy: a failed worker decides nothing (upstream)": (
        mpijob(),
        _running(ERROR_1),
        False,
        Want(recorded=None),
    ),
    "nothing failed": (_policed(), _running(), False, Want()),
    "a failed worker restarts, counted": (
        _policed(),
        _running(ERROR_1),
        False,
        Want(Action.RESTART, "WorkerError", "pi-worker-1", (1, 1), counted=True),
    ),
    "maxRestarts defaults to 0: the first failure fails": (
        _policed(None),
        _running(ERROR_1),
        False,
        Want(Action.FAIL, "MaxRestartsReached", "pi-worker-1"),
    ),
    "a FailJob rule on the exit code": (
        _policed(2, FAIL_ON_42),
        _running(EXIT_42),
        False,
        Want(Action.FAIL, "FailJobRule", "pi-worker-1"),
    ),
    "a rule that does not match: a counted restart": (
        _policed(2, FAIL_ON_42),
        _running(ERROR_1),
        False,
        Want(Action.RESTART, "WorkerError", "pi-worker-1", (1, 1), counted=True),
    ),
    "OOMKilled, restart not counted": (
        _policed(0, IGNORE_OOM),
        _running(OOM_0),
        False,
        Want(Action.RESTART, "WorkerOOMKilled", "pi-worker-0", (1, 0)),
    ),
    "an evicted worker": (
        _policed(),
        _running(EVICTED_0),
        False,
        Want(Action.RESTART, "WorkerEvicted", "pi-worker-0", (1, 1), counted=True),
    ),
    "a disrupted worker that still runs": (
        _policed(0, ON_DISRUPTION),
        _running(DISRUPTED_1),
        False,
        Want(Action.RESTART, "WorkerDisrupted", "pi-worker-1", (1, 0)),
    ),
    "the first failed worker decides": (
        _policed(),
        _running(OOM_0, ERROR_1),
        False,
        Want(Action.RESTART, "WorkerOOMKilled", "pi-worker-0", (1, 1), counted=True),
    ),
    "a surplus worker (scaled down) is no failure": (
        _policed(),
        observed(
            launcher_job(attempt=0), {0: worker(0, attempt=0), 2: worker(2, "Failed", exit_code=1, attempt=0)}
        ),
        False,
        Want(),
    ),
    "a launcher Pod the Job retries is no failure": (
        _policed(),
        observed(launcher_job(failed_pods=1, attempt=0), {}, [FAILED_LAUNCHER_POD]),
        False,
        Want(),
    ),
    "the launcher Job failed: its newest failed Pod": (
        _policed(2, LAUNCHER_ONLY_FAILS),
        observed(
            launcher_job(failed="BackoffLimitExceeded", failed_pods=1, attempt=0), {}, [FAILED_LAUNCHER_POD]
        ),
        False,
        Want(Action.FAIL, "FailJobRule", "pi-launcher-x1"),
    ),
    "the launcher Job failed, its Pods unseen: the Job": (
        _policed(),
        observed(launcher_job(failed="BackoffLimitExceeded", attempt=0)),
        False,
        Want(Action.RESTART, "LauncherError", "pi-launcher", (1, 1), counted=True),
    ),
    "past the deadline the job ends, whatever failed": (
        _policed(),
        observed(launcher_job(failed="DeadlineExceeded", attempt=0), {1: ERROR_1}),
        False,
        Want(),
    ),
    "the launcher succeeded: a worker that failed since does not count": (
        _policed(),
        observed(launcher_job(complete=True, attempt=0), {1: ERROR_1}),
        False,
        Want(),
    ),
    "suspended: no failure decides": (_policed(), _running(ERROR_1), True, Want()),
}


@pytest.mark.parametrize(("builder", "seen", "suspended", "want"), CASES.values(), ids=CASES.keys())
def test_the_failure_that_decides(
    builder: MPIJobBuilder, seen: Observed, suspended: bool, want: Want
) -> None:
    decided = failure.decide(defaulted(builder), seen, finished_before=False, suspended=suspended)
    ruling, found = decided.ruling, decided.failure
    assert (ruling.action if ruling else None) == want.action
    if want.action is Action.FAIL:
        assert ruling is not None and ruling.reason == want.reason
        assert decided.fails and not decided.restarting
    elif want.action is Action.RESTART:
        assert found is not None and found.reason == want.reason
        assert decided.restarting and not decided.fails
        assert ruling is not None and ruling.counted == want.counted
    assert (found.pod if found else "") == want.pod
    assert decided.recorded == want.recorded
    assert decided.in_flight == want.in_flight


def test_without_a_policy_every_child_counts() -> None:
    seen = _running(worker(1, attempt=3))
    assert failure.decide(defaulted(), seen, finished_before=False, suspended=False) == Restarts(seen)


def _stored(attempt: int, count: int, *conditions: dict[str, str]) -> dict[str, Any]:
    return {"conditions": list(conditions), "restartAttempt": attempt, "restartCount": count}


def test_an_older_attempt_still_being_deleted_holds_the_next() -> None:
    """Attempt 1 is stored; a worker of attempt 0 is still there (being deleted): it counts for nothing,
    and no failure decides until it is gone."""
    job = defaulted(_policed(3).status(_stored(1, 1)))
    old = worker(0, "Failed", exit_code=1, attempt=0)
    decided = failure.decide(
        job, observed(launcher_job(attempt=0), {0: old}), finished_before=False, suspended=False
    )
    assert decided.in_flight and decided.ruling is None
    assert decided.current.workers == {} and decided.current.launcher_job is None
    assert (decided.attempt, decided.recorded) == (1, (1, 1))


def test_the_count_continues_from_the_stored_record() -> None:
    job = defaulted(_policed(3).status(_stored(1, 1)))
    seen = observed(
        launcher_job(attempt=1), {0: worker(0, attempt=1), 1: worker(1, "Failed", exit_code=1, attempt=1)}
    )
    decided = failure.decide(job, seen, finished_before=False, suspended=False)
    assert decided.restarting and decided.recorded == (2, 2)
    assert decided.ruling is not None and decided.ruling.why == "no rule matched; restart 2 of 3"


def test_the_last_restart_used_fails_the_job() -> None:
    job = defaulted(_policed(1).status(_stored(1, 1)))
    seen = observed(launcher_job(attempt=1), {1: worker(1, "Failed", exit_code=1, attempt=1)})
    decided = failure.decide(job, seen, finished_before=False, suspended=False)
    assert decided.fails and decided.recorded == (1, 1)
    assert decided.ruling is not None and decided.ruling.reason == "MaxRestartsReached"


def test_a_finished_job_keeps_its_record_and_every_child() -> None:
    job = defaulted(_policed(3).status(_stored(2, 1, condition("Failed", "True", "MaxRestartsReached"))))
    seen = observed(launcher_job(attempt=0), {1: worker(1, "Failed", exit_code=1, attempt=2)})
    decided = failure.decide(job, seen, finished_before=True, suspended=False)
    assert decided == Restarts(seen, attempt=2, recorded=(2, 1))
