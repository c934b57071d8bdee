"""The plan of one sync: each decision made once, from the job, what exists and the stored status.

The status (``status.next_status``) and the children (``desired.desired_children``) are rendered from it;
neither re-derives a decision. Decisions, in upstream's order:

1. Did the job finish before this sync? That is read from the stored status, never from a missing launcher,
   so a launcher deleted by its TTL is never re-created. A finished job keeps what exists, and cleanPodPolicy
   acts only once the status that says "finished" (with its completionTime) has been stored.
2. Otherwise: is it suspended, what does the launcher Job say, how many workers run, fail or were evicted?
   The job finishes in this sync when the launcher is done or a worker was evicted.
3. Which workers to return, and whether the launcher may be created (AtStartup, or every worker Ready).
4. With gang scheduling: whether the PodGroup is returned. It is, from the current spec, whenever workers
   may be created (so it is in the response that first creates them); a finished job keeps the one it has
   unless cleanPodPolicy cleans up; a suspended job has none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from app.api.defaults import Job
from app.api.types import CleanPodPolicy, ConditionType, JobStatus, LauncherCreationPolicy
from app.core.observed import Observed
from app.kube import names
from app.kube.gang import GangScheduler
from app.kube.request import ObservedJob, ObservedPod


class LauncherOutcome(StrEnum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class FailedPod:
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class LauncherState:
    """The observed launcher Job, summarised for the status."""

    outcome: LauncherOutcome
    running_pods: int
    failed_pods: int
    completion_time: str | None = None
    failure_reason: str | None = None
    failure_message: str | None = None
    # The newest failed launcher Pod (customize hook), which explains a backoff failure.
    newest_failed_pod: FailedPod | None = None

    @property
    def done(self) -> bool:
        return self.outcome != LauncherOutcome.RUNNING


@dataclass(frozen=True, slots=True)
class WorkerCounts:
    """Worker Pods by phase over upstream's worker list of this sync."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0
    evicted: int = 0


@dataclass(frozen=True)
class Plan:
    finished_before: bool
    suspended: bool
    launcher: LauncherState | None
    # Upstream's worker list: 0..counted_workers-1 (none while suspended or once the launcher is done).
    counted_workers: int
    worker_counts: WorkerCounts
    workers: tuple[int, ...]
    running_workers: tuple[str, ...]
    create_or_keep_launcher: bool
    # cleanPodPolicy has acted: the Worker replica status is cleared.
    workers_cleaned: bool = False
    # Gang scheduling with its PodGroup child declared; ``podgroup``: return the PodGroup.
    gang: GangScheduler | None = None
    podgroup: bool = False
    # WaitForWorkersReady and no launcher yet: the PodGroup must not count it (upstream #608).
    launcher_pending: bool = False

    @property
    def finishing(self) -> bool:
        """The job finishes in this sync: its launcher is done, or a worker was evicted."""
        if self.finished_before:
            return False
        return (self.launcher is not None and self.launcher.done) or self.worker_counts.evicted > 0


def make_plan(job: Job, observed: Observed, gang: GangScheduler | None = None) -> Plan:
    """``gang``: the configured gang scheduler, when the CompositeController declares its PodGroup child."""
    launcher = _launcher_state(observed)
    if finished(job.status):
        plan = _finished_plan(job, observed, launcher)
    else:
        plan = _active_plan(job, observed, launcher)
    if gang is None:
        return plan
    return replace(
        plan,
        gang=gang,
        podgroup=_podgroup_wanted(plan, gang.api_version in observed.podgroups),
        launcher_pending=not plan.finished_before and not plan.create_or_keep_launcher,
    )


def _podgroup_wanted(plan: Plan, exists: bool) -> bool:
    if plan.finished_before:
        return exists and not plan.workers_cleaned
    if plan.suspended:
        return False
    if plan.launcher is not None and plan.launcher.done:
        return exists  # upstream neither creates nor deletes it once the launcher is done
    return True


def finished(status: JobStatus) -> bool:
    """The stored status says Succeeded or Failed: the one place "is the job finished?" is answered."""
    terminal = (ConditionType.SUCCEEDED, ConditionType.FAILED)
    return any(c.type in terminal and c.status == "True" for c in status.conditions)


def _finished_plan(job: Job, observed: Observed, launcher: LauncherState | None) -> Plan:
    """Keep what exists; clean workers per cleanPodPolicy once completionTime is stored."""
    kept = sorted(observed.workers) if job.worker is not None else []
    cleaning = job.clean_pod_policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING) and bool(
        job.status.completion_time
    )
    if cleaning and job.clean_pod_policy == CleanPodPolicy.ALL:
        kept = []
    elif cleaning:
        kept = [i for i in kept if observed.workers[i].phase not in ("Running", "Pending")]
    return Plan(
        finished_before=True,
        suspended=bool(job.run_policy.suspend),
        launcher=launcher,
        counted_workers=0,
        worker_counts=WorkerCounts(),
        workers=tuple(kept),
        running_workers=_running(job, observed, kept),
        # A done launcher stays for its logs until its TTL removes it. One still running for a job that
        # already failed (evicted workers) is deleted: it can only hang on the missing ranks.
        create_or_keep_launcher=launcher is not None and launcher.done,
        workers_cleaned=cleaning,
    )


def _active_plan(job: Job, observed: Observed, launcher: LauncherState | None) -> Plan:
    suspended = bool(job.run_policy.suspend)
    launcher_done = launcher is not None and launcher.done
    counted = 0 if suspended or launcher_done else job.worker_replicas
    counts = _count_workers(observed, counted)
    finishing = launcher_done or counts.evicted > 0
    if finishing:
        # Keep the workers that exist, create none: cleanPodPolicy acts once "finished" is stored.
        workers = tuple(i for i in sorted(observed.workers) if i < job.worker_replicas)
    else:
        workers = tuple(range(counted))
    may_create = not finishing and _may_create_launcher(job, observed, counted)
    return Plan(
        finished_before=False,
        suspended=suspended,
        launcher=launcher,
        counted_workers=counted,
        worker_counts=counts,
        workers=workers,
        running_workers=_running(job, observed, workers),
        # A suspended job has no launcher: on resume a new one is built from the current template.
        create_or_keep_launcher=not suspended and (observed.launcher is not None or may_create),
    )


def _count_workers(observed: Observed, counted: int) -> WorkerCounts:
    active = succeeded = failed = evicted = 0
    for index in range(counted):
        pod = observed.workers.get(index)
        phase = pod.phase if pod is not None else ""
        if phase == "Failed":
            failed += 1
            evicted += pod is not None and pod.status is not None and pod.status.reason == "Evicted"
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Running":
            active += 1
    return WorkerCounts(active, succeeded, failed, evicted)


def _may_create_launcher(job: Job, observed: Observed, counted: int) -> bool:
    if job.launcher_creation_policy == LauncherCreationPolicy.AT_STARTUP:
        return True
    # Any other value waits for every worker Pod to be Ready, as upstream.
    return all((pod := observed.workers.get(i)) is not None and pod.ready for i in range(counted))


def _running(job: Job, observed: Observed, workers: tuple[int, ...] | list[int]) -> tuple[str, ...]:
    """Running workers this response keeps: a worker deleted by this very response is already gone."""
    return tuple(
        names.worker_name(job.name, i)
        for i in workers
        if (pod := observed.workers.get(i)) is not None and pod.phase == "Running"
    )


def _launcher_state(observed: Observed) -> LauncherState | None:
    launcher = observed.launcher
    if launcher is None:
        return None
    if launcher.condition("Complete") is not None:
        completion = launcher.status.completionTime if launcher.status else None
        return LauncherState(LauncherOutcome.SUCCEEDED, 0, launcher.failed_pods, completion_time=completion)
    if (failed := launcher.condition("Failed")) is not None:
        return LauncherState(
            LauncherOutcome.FAILED,
            0,
            launcher.failed_pods,
            failure_reason=failed.reason,
            failure_message=failed.message,
            newest_failed_pod=_newest_failed(observed.launcher_pods or []),
        )
    running = _running_launcher_pods(launcher, observed.launcher_pods)
    return LauncherState(LauncherOutcome.RUNNING, running, launcher.failed_pods)


def _running_launcher_pods(launcher: ObservedJob, pods: list[ObservedPod] | None) -> int:
    """Running launcher Pods; without the customize hook, the Job's ``ready`` count stands in."""
    if pods is not None:
        return sum(1 for pod in pods if pod.phase == "Running")
    return (launcher.status.ready if launcher.status else None) or 0


def _newest_failed(pods: list[ObservedPod]) -> FailedPod | None:
    failed = [pod for pod in pods if pod.phase == "Failed"]
    if not failed:
        return None
    newest = max(failed, key=lambda pod: pod.metadata.creationTimestamp or "")
    if newest.status is None:
        return None
    return FailedPod(newest.status.reason or "", newest.status.message or "")
