"""Which worker Pods a response returns: upstream's worker list, what a finishing or restarting job keeps,
and what cleanPodPolicy leaves of a finished one.

Upstream lists workers ``0..replicas-1`` unless the job is suspended or its launcher is done (then none:
a suspended job has no workers). Every listed worker is returned, so a missing one is created and a
surplus one (scaled down) is deleted by omission. While the job finishes or restarts, none is created and
those that exist are kept: cleanPodPolicy acts once "finished" is stored, and a restart deletes the
attempt once the status that starts the next one is stored (a sync that saw the old status, from
Metacontroller's cache or after a lost write, then decides the same restart again from the same failed
Pod); the next attempt starts once nothing of the old one is left.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.defaults import Job
from app.api.types import CleanPodPolicy
from app.core.observed import Observed, WorkerCounts
from app.kube import names
from app.kube.pod_phase import PodPhase


@dataclass(frozen=True, slots=True)
class WorkerPods:
    # Upstream's worker list and its phases (the Worker replica status).
    counts: WorkerCounts
    # The workers the response returns, by index.
    indices: tuple[int, ...]
    # Those of them Running (the hostfile): a worker deleted by this very response is already gone.
    running: tuple[str, ...]


def listed(job: Job, *, suspended: bool, launcher_done: bool, finished_before: bool) -> int:
    """The length of upstream's worker list in this sync."""
    return 0 if finished_before or suspended or launcher_done else job.worker_replicas


def decide(
    job: Job,
    observed: Observed,
    counts: WorkerCounts,
    *,
    hold: bool,
    cleaning: CleanPodPolicy | None,
    finished_before: bool,
) -> WorkerPods:
    """``counts``: upstream's worker list (``listed``) by phase; ``hold``: create none, keep those that
    exist (the job finishes or restarts now, or an old attempt is being deleted); ``cleaning``: what
    cleanPodPolicy deletes of a finished job."""
    if finished_before:
        indices = _after_finish(job, observed, cleaning)
    elif hold:
        indices = tuple(i for i in sorted(observed.workers) if i < job.worker_replicas)
    else:
        indices = tuple(range(counts.listed))
    running = tuple(
        names.worker_name(job.name, i)
        for i in indices
        if (pod := observed.workers.get(i)) is not None and pod.phase == PodPhase.RUNNING
    )
    return WorkerPods(counts, indices, running)


def _after_finish(job: Job, observed: Observed, cleaning: CleanPodPolicy | None) -> tuple[int, ...]:
    """A finished job keeps what exists, until cleanPodPolicy deletes all workers or the running ones."""
    if job.worker_spec is None or cleaning == CleanPodPolicy.ALL:
        return ()
    kept = sorted(observed.workers)
    if cleaning == CleanPodPolicy.RUNNING:
        return tuple(i for i in kept if observed.workers[i].phase not in (PodPhase.RUNNING, PodPhase.PENDING))
    return tuple(kept)
