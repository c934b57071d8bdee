"""The plan of one sync: every decision made once, from the job, what exists, the stored status and ``now``.

The status (``status.next_status``), the children (``desired.desired_children``), the metrics and the CLI
render it; none re-derives a decision. Decisions, in upstream's order:

1. Did the job finish before this sync? That is read from the stored status (``finished``, the one place
   this is answered), never from a missing launcher, so a launcher deleted by its TTL is never re-created.
   A finished job keeps what exists, and cleanPodPolicy acts only once the status that says "finished"
   (with its completionTime) has been stored.
2. Otherwise: is it suspended, what does the launcher Job say, how many workers run, fail or were evicted?
   The job finishes in this sync when the launcher is done or a worker was evicted.
3. Which workers to return, and whether the launcher may be created (AtStartup, or every worker Ready).
4. Gang scheduling: available only when the CompositeController declares the PodGroup child of the
   configured scheduler. The PodGroup is returned, from the current spec, whenever workers may be created
   (so it is in the response that first creates them); a finished job keeps the one it has unless
   cleanPodPolicy cleans up; a suspended job has none.
5. Which conditions change and why (``intents``), and the start and completion times.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from app.api.defaults import Job
from app.api.types import CleanPodPolicy, ConditionType, JobStatus, LauncherCreationPolicy, ReplicaType
from app.core import failures
from app.core import intents as i
from app.core.failures import Action, Decision, Failure
from app.core.observed import (
    Exit,
    LauncherOutcome,
    LauncherState,
    Observed,
    WorkerCounts,
    failed_exit,
    launcher_state,
)
from app.core.reasons import failure_message
from app.kube import names
from app.kube.gang import RESOURCE as PODGROUPS
from app.kube.gang import GangScheduler


@dataclass(frozen=True)
class Plan:
    finished_before: bool
    # The job finishes in this sync: its launcher is done, or a worker was evicted.
    finishing: bool
    suspended: bool
    launcher: LauncherState | None
    # Upstream's worker list: 0..counted_workers-1 (none while suspended or once the launcher is done).
    counted_workers: int
    worker_counts: WorkerCounts
    worker_indices: tuple[int, ...]
    running_worker_names: tuple[str, ...]
    keep_launcher: bool
    start_time: str | None
    completion_time: str | None
    # cleanPodPolicy has acted: the Worker replica status is cleared.
    workers_cleaned: bool = False
    # Gang scheduling with its PodGroup child declared; ``return_podgroup``: the response has the PodGroup.
    gang: GangScheduler | None = None
    return_podgroup: bool = False
    # WaitForWorkersReady and no launcher yet: the PodGroup must not count it (upstream #608).
    launcher_pending: bool = False
    conditions: tuple[i.ConditionIntent, ...] = ()
    # With a failure policy: the attempt and counted restarts the status records, and the restart or
    # failure it decided in this sync (``failures``). None without one.
    restart_attempt: int | None = None
    restart_count: int | None = None
    failure: Failure | None = None
    decision: Decision | None = None
    # The job finishes in this sync and the sync after the one that stores it has work left: cleanPodPolicy
    # deletes workers, or a launcher still running is deleted. With cleanPodPolicy None and a launcher that
    # is done, that sync would change nothing, so none is asked for.
    clean_up_follows: bool = False

    @property
    def finished(self) -> bool:
        """Finished before this sync or by it: the status this sync writes says Succeeded or Failed."""
        return self.finished_before or self.finishing

    @property
    def restarting(self) -> bool:
        """This sync decides a restart: the status it writes starts the next attempt."""
        return self.decision is not None and self.decision.action == Action.RESTART

    @property
    def follow_up_sync(self) -> bool:
        """Ask Metacontroller for another sync: nothing else triggers one (ignoreStatusChanges) once the
        status this sync writes is stored, yet that sync deletes children (a finished job's clean-up, the
        attempt a restart replaces)."""
        return self.clean_up_follows or self.restarting


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a plan is made from besides the job and what exists."""

    # The configured gang scheduler (``MPI_OPERATOR_GANG_SCHEDULING``), declared as a child or not.
    gang: GangScheduler | None
    # ``mpijob lint``'s findings on this job as one message, or None.
    warning: str | None
    now: datetime


def finished(status: JobStatus) -> bool:
    """The stored status says Succeeded or Failed: the one place "is the job finished?" is answered."""
    terminal = (ConditionType.SUCCEEDED, ConditionType.FAILED)
    return any(c.type in terminal and c.status == "True" for c in status.conditions)


def timestamp(now: datetime) -> str:
    """RFC 3339 with second precision, as ``metav1.Time`` serialises."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_plan(job: Job, observed: Observed, inputs: Inputs) -> Plan:
    """``job.status`` is the stored status without the lint Warning."""
    launcher = launcher_state(observed.launcher, observed.launcher_pods)
    gang = inputs.gang
    declared = gang if gang is not None and gang.api_version in observed.podgroups_declared else None
    if finished(job.status):
        plan = _finished_plan(job, observed, launcher)
    else:
        plan = _active_plan(job, observed, launcher, inputs.now)
    if declared is not None:
        plan = replace(
            plan,
            gang=declared,
            return_podgroup=_podgroup_wanted(plan, declared.api_version in observed.podgroups),
            launcher_pending=not plan.finished_before and not plan.keep_launcher,
        )
    undeclared = gang if declared is None else None
    advice = notices(plan.finished_before, undeclared, inputs.warning)
    return replace(plan, conditions=(*plan.conditions, *advice))


def _podgroup_wanted(plan: Plan, exists: bool) -> bool:
    if plan.finished_before:
        return exists and not plan.workers_cleaned
    if plan.suspended:
        return False
    if plan.launcher is not None and plan.launcher.done:
        return exists  # upstream neither creates nor deletes it once the launcher is done
    return True


def _cleans_workers(job: Job) -> bool:
    """cleanPodPolicy deletes workers of a finished job (all, or those still running)."""
    return job.clean_pod_policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING)


def _finished_plan(job: Job, observed: Observed, launcher: LauncherState | None) -> Plan:
    """Keep what exists; clean workers per cleanPodPolicy once completionTime is stored."""
    kept = sorted(observed.workers) if job.worker is not None else []
    cleaning = _cleans_workers(job) and bool(job.status.completion_time)
    if cleaning and job.clean_pod_policy == CleanPodPolicy.ALL:
        kept = []
    elif cleaning:
        kept = [i for i in kept if observed.workers[i].phase not in ("Running", "Pending")]
    attempt, count = _restart_record(job)
    return Plan(
        finished_before=True,
        finishing=False,
        suspended=bool(job.run_policy.suspend),
        launcher=launcher,
        counted_workers=0,
        worker_counts=WorkerCounts(),
        worker_indices=tuple(kept),
        running_worker_names=_running(job, observed, kept),
        # A done launcher stays for its logs until its TTL removes it. One still running for a job that
        # already failed (evicted workers) is deleted: it can only hang on the missing ranks.
        keep_launcher=launcher is not None and launcher.done,
        workers_cleaned=cleaning,
        conditions=(i.RemoveCondition(ConditionType.INVALID),),
        start_time=job.status.start_time,
        completion_time=job.status.completion_time,
        restart_attempt=attempt,
        restart_count=count,
    )


def _active_plan(job: Job, observed: Observed, launcher: LauncherState | None, now: datetime) -> Plan:
    suspended = bool(job.run_policy.suspend)
    stale: tuple[str, ...] = ()
    if job.failure_policy is not None:
        # Only the current attempt's children count; older ones are being deleted.
        attempts = failures.split(observed, job.status.restarts[0])
        observed, stale = attempts.current, attempts.stale
        launcher = launcher_state(observed.launcher, observed.launcher_pods)
    launcher_done = launcher is not None and launcher.done
    counted = 0 if suspended or launcher_done else job.worker_replicas
    counts = _count_workers(observed, counted)
    failure = decision = None
    if job.failure_policy is None:
        finishing = launcher_done or counts.evicted > 0
    else:
        failure, decision = _policy_decision(job, observed, launcher, held=suspended or bool(stale))
        ended = launcher is not None and launcher.ends_job
        finishing = ended or (decision is not None and decision.action == Action.FAIL)
    restarting = decision is not None and decision.action == Action.RESTART
    if finishing or restarting or (stale and not suspended):
        # Keep the workers that exist, create none. cleanPodPolicy acts once "finished" is stored; a restart
        # deletes the attempt once the status that starts the next one is stored (a sync that saw the old
        # status, from Metacontroller's cache or after a lost write, then decides the same restart again
        # from the same failed Pod), and the next attempt starts once nothing of the old one is left.
        workers = tuple(i for i in sorted(observed.workers) if i < job.worker_replicas)
    else:
        workers = tuple(range(counted))
    may_create = not (finishing or stale or restarting) and _may_create_launcher(job, observed, counted)
    attempt, count = _restart_record(job, decision)
    plan = Plan(
        finished_before=False,
        finishing=finishing,
        clean_up_follows=finishing and (_cleans_workers(job) or (launcher is not None and not launcher.done)),
        suspended=suspended,
        launcher=launcher,
        counted_workers=counted,
        worker_counts=counts,
        worker_indices=workers,
        running_worker_names=_running(job, observed, workers),
        # A suspended job has no launcher: on resume a new one is built from the current template.
        keep_launcher=not suspended and (observed.launcher is not None or may_create),
        start_time=job.status.start_time,
        completion_time=job.status.completion_time,
        restart_attempt=attempt,
        restart_count=count,
        failure=failure,
        decision=decision,
    )
    return _Stage(job, plan, observed, timestamp(now), in_flight=bool(stale)).decide()


def _policy_decision(
    job: Job, observed: Observed, launcher: LauncherState | None, *, held: bool
) -> tuple[Failure | None, Decision | None]:
    """The failure of the current attempt that decides, and what the failure policy does with it. None while
    ``held`` (suspended, or an old attempt still being deleted) or once the launcher ended the job: one that
    succeeded has succeeded, whatever its workers did since; one past activeDeadlineSeconds has failed (the
    deadline is the job's, not an attempt's)."""
    if held or (launcher is not None and launcher.ends_job):
        return None, None
    launcher_failed = launcher is not None and launcher.outcome == LauncherOutcome.FAILED
    failure = failures.first_failure(observed, launcher_failed, job.worker_replicas)
    return failure, (failures.decide(job, failure, job.status.restarts[1]) if failure is not None else None)


def _restart_record(job: Job, decision: Decision | None = None) -> tuple[int | None, int | None]:
    """The attempt and counted restarts the status records (None without a failure policy): as stored,
    or the next attempt when ``decision`` restarts the job."""
    if job.failure_policy is None:
        return None, None
    attempt, count = job.status.restarts
    if decision is not None and decision.action == Action.RESTART:
        return attempt + 1, count + decision.counted
    return attempt, count


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


# --- conditions and times ---------------------------------------------------------------------------


class _Stage:
    """Upstream ``updateMPIJobStatus`` for a job not finished before this sync: which conditions change,
    in upstream's order, and the start and completion times."""

    def __init__(self, job: Job, plan: Plan, observed: Observed, stamp: str, *, in_flight: bool) -> None:
        self.plan, self.observed, self.stamp = plan, observed, stamp
        self.policed = job.failure_policy is not None
        # A restart is under way: the old attempt's children are still being deleted.
        self.in_flight = in_flight
        self.stored = {c.type: c for c in job.status.conditions}
        self.who = f"MPIJob {job.namespace}/{job.name}"
        self.intents: list[i.ConditionIntent] = [i.RemoveCondition(ConditionType.INVALID)]
        self.start_time, self.completion_time = plan.start_time, plan.completion_time

    def set(self, kind: ConditionType, status: str, reason: str, message: str, **how: Any) -> None:
        """``how``: the rest of ``intents.SetCondition`` (write, event, milestone, stamp)."""
        self.intents.append(i.SetCondition(kind, status, reason, message, **how))

    def decide(self) -> Plan:
        plan = self.plan
        if not set(self.stored) - {ConditionType.INVALID}:
            message = f"{self.who} is created."
            self.set(
                ConditionType.CREATED,
                "True",
                i.REASON_CREATED,
                message,
                event="Normal",
                milestone=i.Milestone.CREATED,
            )
        resumed = self._suspension()
        if resumed or (self.start_time is None and not plan.suspended):
            self.start_time = self.stamp
        if plan.launcher is not None:
            self._launcher_outcome(plan.launcher)
        if plan.failure is not None and plan.decision is not None:
            self._failure_policy(plan.failure, plan.decision)
        elif plan.worker_counts.evicted and not self.policed:
            # Upstream leaves evicted jobs half-alive; we finish them so the launcher stops
            # (docs/compatibility.md).
            message = f"{plan.worker_counts.evicted}/{plan.counted_workers} workers are evicted"
            self.set(ConditionType.FAILED, "True", i.REASON_EVICTED, message, event="Warning")
            self.completion_time = self.completion_time or self.stamp
        self._running()
        return replace(
            plan,
            conditions=tuple(self.intents),
            start_time=self.start_time,
            completion_time=self.completion_time,
        )

    def _suspension(self) -> bool:
        """Suspended=True while suspended; Suspended=False once resumed. Returns whether it resumes now."""
        if self.plan.suspended:
            self.set(ConditionType.SUSPENDED, "True", i.REASON_SUSPENDED, "MPIJob suspended", event="Normal")
            return False
        stored = self.stored.get(ConditionType.SUSPENDED)
        if stored is None:
            return False
        self.set(ConditionType.SUSPENDED, "False", i.REASON_RESUMED, "MPIJob resumed", event="Normal")
        return (stored.status, stored.reason or "") != ("False", i.REASON_RESUMED)

    def _launcher_outcome(self, launcher: LauncherState) -> None:
        if launcher.outcome == LauncherOutcome.SUCCEEDED:
            self.completion_time = self.completion_time or launcher.completion_time or self.stamp
            message = f"{self.who} successfully completed."
            self.set(
                ConditionType.SUCCEEDED,
                "True",
                i.REASON_SUCCEEDED,
                message,
                event="Normal",
                milestone=i.Milestone.SUCCEEDED,
            )
        elif launcher.outcome == LauncherOutcome.FAILED and (not self.policed or launcher.ends_job):
            self.completion_time = self.completion_time or self.stamp
            reason, message = launcher_failure(self.who, launcher, _failed_workers(self.observed))
            self.set(
                ConditionType.FAILED, "True", reason, message, event="Warning", milestone=i.Milestone.FAILED
            )

    def _failure_policy(self, failure: Failure, decision: Decision) -> None:
        """A restart (Restarting=True, naming the Pod) or the job's failure, as the policy decided."""
        if decision.action == Action.RESTART:
            attempt = self.plan.restart_attempt
            message = f"{self.who} restarts as attempt {attempt} ({decision.why}): {failure.describe()}"
            self.set(
                ConditionType.RESTARTING,
                "True",
                failure.reason,
                i.truncate(message),
                event="Warning",
                milestone=i.Milestone.RESTARTED,
            )
            return
        self.completion_time = self.completion_time or self.stamp
        head = f"{self.who} has failed ({decision.why})"
        launcher = self.plan.launcher
        if (
            failure.replica == ReplicaType.LAUNCHER
            and launcher is not None
            and launcher.last_exit is not None
        ):
            message = failure_message(head, launcher.last_exit, [])  # with the launcher's last output
        else:
            message = f"{head}: {failure.describe()}"
        self.set(
            ConditionType.FAILED,
            "True",
            decision.reason,
            i.truncate(message),
            event="Warning",
            milestone=i.Milestone.FAILED,
        )

    def _running(self) -> None:
        plan = self.plan
        if self.in_flight or plan.restarting:
            return  # Restarting stays until the next attempt runs
        if plan.suspended:
            self.set(ConditionType.RUNNING, "False", i.REASON_SUSPENDED, f"{self.who} is suspended.")
        elif plan.finishing:
            # Upstream's synthetic condition for a job that finished before it was seen running.
            message = f"{self.who} is finished but Running condition was never set."
            stamp = self.completion_time or self.stamp
            self.set(
                ConditionType.RUNNING,
                "False",
                i.REASON_RUNNING,
                message,
                write=i.Write.IF_ABSENT,
                stamp=stamp,
            )
        elif (
            plan.launcher is not None
            and plan.launcher.running_pods >= 1
            and plan.worker_counts.active == plan.counted_workers
        ):
            self.set(ConditionType.RUNNING, "True", i.REASON_RUNNING, f"{self.who} is running.")


def _failed_workers(observed: Observed) -> list[Exit]:
    pods = (observed.workers[index] for index in sorted(observed.workers))
    return [exit for pod in pods if pod.phase == "Failed" and (exit := failed_exit(pod)) is not None]


def launcher_failure(who: str, launcher: LauncherState, workers: list[Exit]) -> tuple[str, str]:
    """Upstream ``updateMPIJobFailedStatus``: the Job's reason, plus the newest failed Pod's on backoff;
    the message then names the failed workers and the launcher's last words (``reasons``)."""
    reason = launcher.failure_reason or i.REASON_FAILED
    message = launcher.failure_message or f"{who} has failed"
    pod = launcher.newest_failed_pod
    if reason == i.REASON_BACKOFF_LIMIT_EXCEEDED and pod is not None:
        reason += "/" + pod.reason
        message += ": " + pod.message
    return reason, failure_message(message, launcher.last_exit, workers)


def notices(
    finished_before: bool, undeclared: GangScheduler | None, warning: str | None
) -> tuple[i.ConditionIntent, ...]:
    """GangSchedulingUnavailable, then the lint Warning: advisory conditions, kept first (``NOTICES``)."""
    gang: tuple[i.ConditionIntent, ...] = (i.RemoveCondition(ConditionType.GANG_SCHEDULING_UNAVAILABLE),)
    if undeclared is not None:
        # A finished job gets no new notice (and loses an old one once the overlay is applied).
        gang = () if finished_before else (_gang_unavailable(undeclared),)
    if warning is None:
        return (*gang, i.RemoveCondition(ConditionType.WARNING))
    lint = i.SetCondition(ConditionType.WARNING, "True", i.REASON_LINT, warning, i.Write.NOTICE, "Warning")
    return (*gang, lint)


def _gang_unavailable(scheduler: GangScheduler) -> i.SetCondition:
    message = (
        f"MPI_OPERATOR_GANG_SCHEDULING is {scheduler.scheduler_name!r} but the CompositeController does not"
        f" declare the PodGroup child ({scheduler.api_version} {PODGROUPS}); apply {scheduler.overlay}/."
        " The job runs without gang scheduling."
    )
    kind = ConditionType.GANG_SCHEDULING_UNAVAILABLE
    return i.SetCondition(kind, "True", i.REASON_PODGROUP_NOT_DECLARED, message, i.Write.NOTICE, "Warning")
