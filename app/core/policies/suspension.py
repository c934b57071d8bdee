"""Suspension (``runPolicy.suspend``): whether the job is suspended, and whether this sync resumes it.

A suspended job has no launcher Job and no workers (``worker_pods``, ``launcher_creation``); on resume both
are built anew from the current templates, as Kueue expects. Resuming restarts the job's clock: upstream
resets ``startTime`` when its Suspended condition turns False.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.defaults import Job
from app.api.types import ConditionType
from app.core.reasons import REASON_RESUMED


@dataclass(frozen=True, slots=True)
class Suspension:
    suspended: bool
    # Not suspended now but once was: the stored status has a Suspended condition (written False).
    resumed: bool = False
    # This sync resumes it: that stored condition does not say False/MPIJobResumed yet.
    resuming: bool = False


def decide(job: Job) -> Suspension:
    """From the spec and the stored Suspended condition."""
    if job.run_policy.suspend:
        return Suspension(suspended=True)
    stored = {c.type: c for c in job.status.conditions}.get(ConditionType.SUSPENDED)
    if stored is None:
        return Suspension(suspended=False)
    resuming = (stored.status, stored.reason or "") != ("False", REASON_RESUMED)
    return Suspension(suspended=False, resumed=True, resuming=resuming)
