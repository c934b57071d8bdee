"""``make_plan``: the policies composed once, in upstream's order, and the stage conditions that announce
them (upstream ``updateMPIJobStatus``; our deviations: docs/compatibility.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from app.core.intents import SetCondition
from app.core.observed import Observed
from app.core.plan import Inputs, Plan, make_plan
from app.core.policies.finishing import Ending
from tests.support.builders import MPIJobBuilder, mpijob
from tests.support.observed import (
    condition,
    defaulted,
    launcher_job,
    observed,
    with_policy,
    worker,
    workers,
)

NOW = datetime(2026, 5, 4, 9, 10, tzinfo=UTC)
STARTED = {
    "conditions": [condition("Created", "True", "MPIJobCreated")],
    "startTime": "2026-05-04T09:00:00Z",
}
RUNNING = {
    **STARTED,
    "conditions": [*STARTED["conditions"], condition("Running", "True", "MPIJobRunning")],
}


def _started(builder: MPIJobBuilder, status: dict[str, Any] = STARTED) -> MPIJobBuilder:
    return builder.status(status)


@dataclass(frozen=True)
class Want:
    """What the plan decides, as the rest of the hook reads it."""

    # The conditions set, as (type, status, reason), in order.
    conditions: tuple[tuple[str, str, str], ...]
    ending: Ending | None = None
    launcher_job: bool = True
    worker_indices: tuple[int, ...] = (0, 1)
    follow_up: bool = False


# Upstream's synthetic Running=False of a job that ends: written only if no Running condition exists.
ENDED = ("Running", "False", "MPIJobRunning")
RUNNING_JOB = launcher_job(ready=1)
ALL_UP = workers("Running", "Running")
OOM_1 = {0: worker(0, attempt=0), 1: worker(1, "Failed", exit_code=137, exit_reason="OOMKilled", attempt=0)}

# id: (job, observed, what the plan decides)
CASES: dict[str, tuple[MPIJobBuilder, Observed, Want]] = {
    "first sync: Created; launcher Job and workers created": (
        mpijob(),
        observed(),
        Want((("Created", "True", "MPIJobCreated"),)),
    ),
    "launcher and every worker running: Running": (
        _started(mpijob()),
        observed(RUNNING_JOB, ALL_UP),
        Want((("Running", "True", "MPIJobRunning"),)),
    ),
    "a worker still pending: not Running yet": (
        _started(mpijob()),
        observed(RUNNING_JOB, workers("Running", "Pending")),
        Want(()),
    ),
    "launcher complete: Succeeded, workers kept until it is stored": (
        _started(mpijob(), RUNNING),
        observed(launcher_job(complete=True, completion_time="2026-05-04T09:09:00Z"), ALL_UP),
        Want((("Succeeded", "True", "MPIJobSucceeded"), ENDED), Ending.SUCCEEDED, follow_up=True),
    ),
    "launcher complete, cleanPodPolicy None: no clean-up sync": (
        _started(mpijob().run_policy(cleanPodPolicy="None")),
        observed(launcher_job(complete=True), {}),
        Want(
            (("Succeeded", "True", "MPIJobSucceeded"), ENDED),
            Ending.SUCCEEDED,
            worker_indices=(),
        ),
    ),
    "launcher Job failed: Failed with its reason": (
        _started(mpijob(), RUNNING),
        observed(launcher_job(failed="BackoffLimitExceeded", failed_pods=7), ALL_UP),
        Want((("Failed", "True", "BackoffLimitExceeded"), ENDED), Ending.LAUNCHER_FAILED, follow_up=True),
    ),
    "launcher Pod failed, the Job retries it: still running": (
        _started(mpijob(), RUNNING),
        observed(launcher_job(failed_pods=1, ready=1), ALL_UP),
        Want((("Running", "True", "MPIJobRunning"),)),
    ),
    "a worker evicted: Failed, the running launcher deleted next sync": (
        _started(mpijob().run_policy(cleanPodPolicy="None"), RUNNING),
        observed(RUNNING_JOB, {0: worker(0), 1: worker(1, "Failed", reason="Evicted")}),
        Want((("Failed", "True", "MPIJobEvicted"), ENDED), Ending.EVICTED, follow_up=True),
    ),
    "policy: a worker OOMKilled restarts the job, nothing created": (
        _started(with_policy(mpijob(), 3), RUNNING),
        observed(launcher_job(ready=1, attempt=0), OOM_1),
        Want((("Restarting", "True", "WorkerOOMKilled"),), follow_up=True),
    ),
    "policy: maxRestarts used up fails the job": (
        _started(with_policy(mpijob(), 0), RUNNING),
        observed(launcher_job(ready=1, attempt=0), OOM_1),
        Want((("Failed", "True", "MaxRestartsReached"), ENDED), Ending.FAILURE_POLICY, follow_up=True),
    ),
    "suspended: no launcher Job, no workers": (
        _started(mpijob().suspend(), RUNNING),
        observed(RUNNING_JOB, ALL_UP),
        Want(
            (("Suspended", "True", "MPIJobSuspended"), ("Running", "False", "MPIJobSuspended")),
            launcher_job=False,
            worker_indices=(),
        ),
    ),
    "finished before: the stage stays, only what exists is kept": (
        _started(
            mpijob().run_policy(cleanPodPolicy="None"),
            {**RUNNING, "conditions": [condition("Succeeded", "True", "MPIJobSucceeded")]},
        ),
        observed(launcher_job(complete=True), ALL_UP),
        Want((), launcher_job=True),
    ),
}


def _plan(builder: MPIJobBuilder, seen: Observed) -> Plan:
    return make_plan(defaulted(builder), seen, Inputs(gang=None, warning=None, now=NOW))


@pytest.mark.parametrize(("builder", "seen", "want"), CASES.values(), ids=CASES.keys())
def test_the_plan(builder: MPIJobBuilder, seen: Observed, want: Want) -> None:
    plan = _plan(builder, seen)
    written = tuple(
        (str(c.type), c.status, c.reason) for c in plan.stage.conditions if isinstance(c, SetCondition)
    )
    assert written == want.conditions
    assert plan.finish.ending == want.ending
    assert plan.writes_finished == (plan.finished_before or want.ending is not None)
    assert plan.launcher_job.keep == want.launcher_job
    assert plan.workers.indices == want.worker_indices
    assert plan.follow_up_sync == want.follow_up


def test_the_ending_sets_the_completion_time() -> None:
    """Succeeded takes the launcher Job's completionTime (upstream), any other ending the sync's time."""
    done = "2026-05-04T09:09:00Z"
    succeeded = _plan(_started(mpijob()), observed(launcher_job(complete=True, completion_time=done)))
    failed = _plan(_started(mpijob()), observed(launcher_job(failed="BackoffLimitExceeded")))
    running = _plan(_started(mpijob()), observed(RUNNING_JOB, ALL_UP))
    assert (succeeded.stage.completion_time, failed.stage.completion_time) == (done, "2026-05-04T09:10:00Z")
    assert running.stage.completion_time is None


def test_a_restart_records_the_next_attempt_and_names_the_pod() -> None:
    plan = _plan(_started(with_policy(mpijob(), 3), RUNNING), observed(launcher_job(attempt=0), OOM_1))
    assert plan.restarts.recorded == (1, 1)
    (restarting,) = (c for c in plan.stage.conditions if isinstance(c, SetCondition))
    assert restarting.message == (
        "MPIJob default/pi restarts as attempt 1 (no rule matched; restart 1 of 3): worker pi-worker-1:"
        " container worker exited with code 137 (OOMKilled)"
    )
    # Hold: the failed worker is kept until the status naming attempt 1 is stored; nothing is created.
    assert plan.workers.indices == (0, 1) and plan.launcher_job.keep


def test_a_launcher_failure_message_names_the_failed_workers() -> None:
    failed = {0: worker(0), 1: worker(1, "Failed", exit_code=1)}
    plan = _plan(_started(mpijob()), observed(launcher_job(failed="BackoffLimitExceeded"), failed))
    (ended,) = (c for c in plan.stage.conditions if isinstance(c, SetCondition) and c.type == "Failed")
    assert ended.message == (
        "BackoffLimitExceeded. Failed workers: pi-worker-1: container worker exited with code 1 (Error)"
    )
