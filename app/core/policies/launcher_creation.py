"""Launcher creation (``launcherCreationPolicy``): whether the response has the launcher Job.

``AtStartup`` creates it with the workers; ``WaitForWorkersReady`` once every listed worker is Ready (any
other value waits too, as upstream). One that exists is kept, except while the job is suspended (a
suspended job has no launcher: on resume a new one is built from the current template). None is created
while the job finishes or restarts, or while an old attempt is still being deleted. A finished job keeps a
launcher that is done, for its logs, until its TTL removes it; one still running (the job failed by an
eviction) is deleted: it can only hang on the missing ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.defaults import Job
from app.api.types import LauncherCreationPolicy
from app.core.observed import LauncherJobState, Observed


@dataclass(frozen=True, slots=True)
class LauncherJobDecision:
    # The observed launcher Job of the current attempt, summarised (None: it does not exist).
    state: LauncherJobState | None
    # The response has the launcher Job: kept, or created now.
    keep: bool
    # No launcher yet and the job has not finished: a PodGroup must not count it (upstream #608).
    pending: bool = False


def decide(
    job: Job, observed: Observed, listed: int, *, finished_before: bool, suspended: bool, hold: bool
) -> LauncherJobDecision:
    """``listed``: upstream's worker list; ``hold``: create nothing (the job finishes or restarts now, or
    an old attempt is being deleted)."""
    state = observed.launcher_job_state
    if finished_before:
        return LauncherJobDecision(state, keep=state is not None and state.done)
    may_create = not hold and _may_create(job, observed, listed)
    keep = not suspended and (observed.launcher_job is not None or may_create)
    return LauncherJobDecision(state, keep, pending=not keep)


def _may_create(job: Job, observed: Observed, listed: int) -> bool:
    if job.launcher_creation_policy == LauncherCreationPolicy.AT_STARTUP:
        return True
    return all((pod := observed.workers.get(i)) is not None and pod.ready for i in range(listed))
