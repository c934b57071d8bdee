"""Finishing and cleanup: did the job finish before this sync, does it end now and how, and what cleanup
follows.

"Finished" is read from the status the hook wrote earlier (``has_finished``), never from a missing
launcher Job: after its TTL deletes it, re-creating it would run the job again. How a job ends is decided
here only (``Ending``): without a failure policy, when its launcher Job is done or a worker is evicted;
with one, when the launcher Job ends it (succeeded, or past ``activeDeadlineSeconds``) or the policy fails
it. ``stage`` only says how the conditions announce it. cleanPodPolicy acts only once the status with
``completionTime`` is stored, so the status that says "finished" exists before anything is deleted; the
finishing sync asks for that next sync when it will have work.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.api.defaults import Job
from app.api.types import CleanPodPolicy, ConditionType, JobStatus
from app.core.observed import LauncherJobOutcome, LauncherJobState

_TERMINAL = (ConditionType.SUCCEEDED, ConditionType.FAILED)


class Ending(StrEnum):
    """How the job ends in this sync: its terminal condition (``condition``) and why."""

    # The launcher Job completed.
    SUCCEEDED = "Succeeded"
    # The launcher Job failed: without a failure policy, or past activeDeadlineSeconds with one.
    LAUNCHER_FAILED = "LauncherFailed"
    # A worker of upstream's list was evicted, without a failure policy (docs/compatibility.md).
    EVICTED = "Evicted"
    # The failure policy fails the job (a FailJob rule, or maxRestarts used up).
    FAILURE_POLICY = "FailurePolicy"

    @property
    def condition(self) -> ConditionType:
        return ConditionType.SUCCEEDED if self is Ending.SUCCEEDED else ConditionType.FAILED


@dataclass(frozen=True, slots=True)
class Finishing:
    # The job ends in this sync, and how (None: it does not).
    ending: Ending | None = None
    # The job finished before this sync and cleanPodPolicy deletes its workers now (All, or Running).
    cleaning: CleanPodPolicy | None = None
    # It finishes now and the sync after the one that stores that has work: cleanPodPolicy deletes
    # workers, or a launcher still running is deleted. With cleanPodPolicy None and a launcher that is done,
    # that sync would change nothing, so none is asked for.
    clean_up_follows: bool = False

    @property
    def finishing(self) -> bool:
        """The job finishes in this sync."""
        return self.ending is not None


def has_finished(status: JobStatus) -> bool:
    """The stored status says Succeeded or Failed: the one place "has the job finished?" is answered."""
    return any(c.type in _TERMINAL and c.status == "True" for c in status.conditions)


def decide(
    job: Job, launcher_job: LauncherJobState | None, *, finished_before: bool, evicted: int, fails: bool
) -> Finishing:
    """``finished_before``: the stored status says so (``has_finished``); ``evicted``: workers of upstream's
    list evicted; ``fails``: the failure policy fails the job in this sync."""
    if finished_before:
        stored = bool(job.status.completion_time)
        return Finishing(cleaning=CleanPodPolicy(job.clean_pod_policy) if stored and _cleans(job) else None)
    ending = _ending(job, launcher_job, evicted=evicted, fails=fails)
    launcher_running = launcher_job is not None and not launcher_job.done
    finishing = ending is not None
    return Finishing(ending, clean_up_follows=finishing and (_cleans(job) or launcher_running))


def _ending(job: Job, launcher: LauncherJobState | None, *, evicted: int, fails: bool) -> Ending | None:
    """Upstream ``updateMPIJobStatus``'s terminal conditions, and ours: the one place they are decided."""
    outcome = launcher.outcome if launcher is not None else None
    if outcome == LauncherJobOutcome.SUCCEEDED:
        return Ending.SUCCEEDED
    if not job.has_failure_policy:
        if outcome == LauncherJobOutcome.FAILED:
            return Ending.LAUNCHER_FAILED
        return Ending.EVICTED if evicted > 0 else None
    if launcher is not None and launcher.ends_job:  # failed past activeDeadlineSeconds: the job's deadline
        return Ending.LAUNCHER_FAILED
    return Ending.FAILURE_POLICY if fails else None


def _cleans(job: Job) -> bool:
    """cleanPodPolicy deletes workers of a finished job (all, or those still running)."""
    return job.clean_pod_policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING)
