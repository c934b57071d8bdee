"""Finishing and cleanup: did the job finish before this sync, does it finish now, and what cleanup follows.

"Finished" is read from the status the hook wrote earlier (``has_finished``), never from a missing
launcher: after the launcher Job's TTL deletes it, re-creating it would run the job again. A job finishes
when its launcher is done or a worker is evicted; with a failure policy, when the launcher ends it
(succeeded, or past ``activeDeadlineSeconds``) or the policy fails it. cleanPodPolicy acts only once the
status with ``completionTime`` is stored, so the status that says "finished" exists before anything is
deleted; the finishing sync asks for that next sync when it will have work.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.defaults import Job
from app.api.types import CleanPodPolicy, ConditionType, JobStatus
from app.core.observed import LauncherState

_TERMINAL = (ConditionType.SUCCEEDED, ConditionType.FAILED)


@dataclass(frozen=True, slots=True)
class Finishing:
    # The job finishes in this sync.
    finishing: bool = False
    # The job finished before this sync and cleanPodPolicy deletes its workers now (All, or Running).
    cleaning: CleanPodPolicy | None = None
    # It finishes now and the sync after the one that stores that has work: cleanPodPolicy deletes
    # workers, or a launcher still running is deleted. With cleanPodPolicy None and a launcher that is done,
    # that sync would change nothing, so none is asked for.
    clean_up_follows: bool = False


def has_finished(status: JobStatus) -> bool:
    """The stored status says Succeeded or Failed: the one place "has the job finished?" is answered."""
    return any(c.type in _TERMINAL and c.status == "True" for c in status.conditions)


def decide(
    job: Job, launcher: LauncherState | None, *, finished_before: bool, evicted: int, fails: bool
) -> Finishing:
    """``finished_before``: the stored status says so (``has_finished``); ``evicted``: workers of upstream's
    list evicted; ``fails``: the failure policy fails the job in this sync."""
    if finished_before:
        stored = bool(job.status.completion_time)
        return Finishing(cleaning=CleanPodPolicy(job.clean_pod_policy) if stored and _cleans(job) else None)
    if job.failure_policy is None:
        finishing = (launcher is not None and launcher.done) or evicted > 0
    else:
        finishing = (launcher is not None and launcher.ends_job) or fails
    launcher_running = launcher is not None and not launcher.done
    return Finishing(finishing=finishing, clean_up_follows=finishing and (_cleans(job) or launcher_running))


def _cleans(job: Job) -> bool:
    """cleanPodPolicy deletes workers of a finished job (all, or those still running)."""
    return job.clean_pod_policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING)
