"""``finishing``: upstream ``updateMPIJobStatus``'s terminal conditions (and our eviction and failure policy
deviations, docs/compatibility.md), ``has_finished`` and cleanPodPolicy's timing."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.types import CleanPodPolicy, ConditionType
from app.core.observed import LauncherJobState
from app.core.policies import finishing
from app.core.policies.finishing import Ending, Finishing, has_finished
from tests.support.builders import MPIJobBuilder, mpijob
from tests.support.observed import condition, defaulted, launcher_job, observed, with_policy

RUNNING = launcher_job(ready=1)
COMPLETE = launcher_job(complete=True, completion_time="2026-05-04T09:05:00Z")
BACKOFF = launcher_job(failed="BackoffLimitExceeded", failed_pods=4)
DEADLINE = launcher_job(failed="DeadlineExceeded")
RETRYING = launcher_job(failed_pods=1)  # a failed Pod, no Failed condition: the Job retries it


def _state(launcher: Any) -> LauncherJobState | None:
    return observed(launcher).launcher_job_state


def _policed() -> MPIJobBuilder:
    return with_policy(mpijob(), 3)


# id: (job, launcher Job, evicted workers, the failure policy fails the job, the ending)
ENDINGS = {
    "no launcher Job yet": (mpijob(), None, 0, False, None),
    "launcher running": (mpijob(), RUNNING, 0, False, None),
    "launcher retrying a failed Pod is no end": (mpijob(), RETRYING, 0, False, None),
    "launcher complete: Succeeded": (mpijob(), COMPLETE, 0, False, Ending.SUCCEEDED),
    "launcher failed: Failed": (mpijob(), BACKOFF, 0, False, Ending.LAUNCHER_FAILED),
    "launcher past its deadline: Failed": (mpijob(), DEADLINE, 0, False, Ending.LAUNCHER_FAILED),
    # Upstream writes Failed/MPIJobEvicted but lets the job run on; we end it (docs/compatibility.md).
    "a worker evicted: Failed": (mpijob(), RUNNING, 1, False, Ending.EVICTED),
    "policy: launcher complete: Succeeded": (_policed(), COMPLETE, 0, False, Ending.SUCCEEDED),
    "policy: a failed launcher Job is the policy's to rule on": (_policed(), BACKOFF, 0, False, None),
    "policy: the deadline bounds the job": (_policed(), DEADLINE, 0, False, Ending.LAUNCHER_FAILED),
    "policy: an eviction is the policy's to rule on": (_policed(), RUNNING, 1, False, None),
    "policy: the policy fails the job": (_policed(), RUNNING, 0, True, Ending.FAILURE_POLICY),
    "policy: fails with the launcher Job failed too": (_policed(), BACKOFF, 0, True, Ending.FAILURE_POLICY),
}


@pytest.mark.parametrize(
    ("builder", "launcher", "evicted", "fails", "want"), ENDINGS.values(), ids=ENDINGS.keys()
)
def test_how_a_job_ends(
    builder: MPIJobBuilder, launcher: Any, evicted: int, fails: bool, want: Ending | None
) -> None:
    decided = finishing.decide(
        defaulted(builder), _state(launcher), finished_before=False, evicted=evicted, fails=fails
    )
    assert decided.ending == want
    assert decided.finishing == (want is not None)
    assert decided.cleaning is None


@pytest.mark.parametrize(
    ("ending", "condition_type"),
    [
        (Ending.SUCCEEDED, ConditionType.SUCCEEDED),
        (Ending.LAUNCHER_FAILED, ConditionType.FAILED),
        (Ending.EVICTED, ConditionType.FAILED),
        (Ending.FAILURE_POLICY, ConditionType.FAILED),
    ],
    ids=lambda value: str(value),
)
def test_each_ending_has_one_terminal_condition(ending: Ending, condition_type: ConditionType) -> None:
    assert ending.condition == condition_type


# id: (cleanPodPolicy, launcher Job, evicted, whether the next sync has clean-up to do)
CLEAN_UP = {
    "Running: workers to delete": ("Running", COMPLETE, 0, True),
    "All: workers to delete": ("All", BACKOFF, 0, True),
    "None and the launcher done: nothing to do": ("None", COMPLETE, 0, False),
    "None and an eviction: the running launcher goes": ("None", RUNNING, 1, True),
}


@pytest.mark.parametrize(("policy", "launcher", "evicted", "follows"), CLEAN_UP.values(), ids=CLEAN_UP.keys())
def test_a_finishing_sync_asks_for_the_clean_up_sync(
    policy: str, launcher: Any, evicted: int, follows: bool
) -> None:
    job = defaulted(mpijob().run_policy(cleanPodPolicy=policy))
    decided = finishing.decide(job, _state(launcher), finished_before=False, evicted=evicted, fails=False)
    assert decided.finishing and decided.clean_up_follows == follows


def test_a_sync_that_does_not_finish_asks_for_none() -> None:
    decided = finishing.decide(defaulted(), _state(RUNNING), finished_before=False, evicted=0, fails=False)
    assert decided == Finishing()


# id: (cleanPodPolicy, completionTime stored, what cleanPodPolicy deletes now)
CLEANING = {
    "Running, stored: the running workers go": ("Running", True, CleanPodPolicy.RUNNING),
    "All, stored: every worker goes": ("All", True, CleanPodPolicy.ALL),
    "None: workers stay": ("None", True, None),
    "Running, completionTime not stored yet: wait": ("Running", False, None),
}


@pytest.mark.parametrize(("policy", "stored", "want"), CLEANING.values(), ids=CLEANING.keys())
def test_cleanpodpolicy_acts_once_finished_is_stored(
    policy: str, stored: bool, want: CleanPodPolicy | None
) -> None:
    status: dict[str, Any] = {"conditions": [condition("Succeeded", "True", "MPIJobSucceeded")]}
    if stored:
        status["completionTime"] = "2026-05-04T09:05:00Z"
    job = defaulted(mpijob().run_policy(cleanPodPolicy=policy).status(status))
    # A launcher that is still there changes nothing: the stored status decides.
    decided = finishing.decide(job, _state(RUNNING), finished_before=True, evicted=1, fails=True)
    assert decided == Finishing(cleaning=want)


# id: (stored conditions, finished before)
FINISHED = {
    "no status": ([], False),
    "Running": ([condition("Running", "True", "MPIJobRunning")], False),
    "Succeeded": ([condition("Succeeded", "True", "MPIJobSucceeded")], True),
    "Failed": ([condition("Failed", "True", "MPIJobFailed")], True),
    "Failed=False (a restart turned it off)": ([condition("Failed", "False", "MPIJobFailed")], False),
}


@pytest.mark.parametrize(("conditions", "want"), FINISHED.values(), ids=FINISHED.keys())
def test_finished_is_read_from_the_stored_status(conditions: list[dict[str, str]], want: bool) -> None:
    assert has_finished(defaulted(mpijob().status({"conditions": conditions})).status) == want
