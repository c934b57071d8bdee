"""The stage conditions and times of a job not finished before this sync: upstream ``updateMPIJobStatus``.

Which conditions change, in upstream's order (Created, Suspended, the launcher's outcome, an eviction or
the failure policy's ruling, Running), and the start and completion times. The policies decided what
happened (``Progress``); this module only says how the conditions announce it, as intents that
``status.apply`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.api.defaults import Job
from app.api.types import ConditionType, ReplicaType
from app.core.intents import ConditionIntent, Milestone, RemoveCondition, SetCondition, Write
from app.core.messages import failure_message, truncate
from app.core.observed import Exit, LauncherOutcome, LauncherState
from app.core.policies.failure import Action, PodFailure, Restarts, Ruling
from app.core.policies.suspension import Suspension
from app.core.policies.worker_pods import WorkerPods
from app.core.reasons import (
    REASON_BACKOFF_LIMIT_EXCEEDED,
    REASON_CREATED,
    REASON_EVICTED,
    REASON_FAILED,
    REASON_RESUMED,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
)


def timestamp(now: datetime) -> str:
    """RFC 3339 with second precision, as ``metav1.Time`` serialises."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Progress:
    """What the policies decided in this sync, as the conditions announce it."""

    # The job finished before this sync: its stage stays as stored.
    finished_before: bool
    suspension: Suspension
    restarts: Restarts
    finishing: bool
    launcher: LauncherState | None
    workers: WorkerPods


@dataclass(frozen=True, slots=True)
class Stage:
    conditions: tuple[ConditionIntent, ...]
    start_time: str | None
    completion_time: str | None


def decide(job: Job, progress: Progress, now: datetime) -> Stage:
    if progress.finished_before:  # the stage stays as stored; an Invalid condition goes
        status = job.status
        return Stage((RemoveCondition(ConditionType.INVALID),), status.start_time, status.completion_time)
    return _Conditions(job, progress, timestamp(now)).decide()


class _Conditions:
    def __init__(self, job: Job, progress: Progress, stamp: str) -> None:
        self.progress, self.stamp = progress, stamp
        self.policed = job.failure_policy is not None
        self.stored = {c.type for c in job.status.conditions}
        self.who = f"MPIJob {job.namespace}/{job.name}"
        self.intents: list[ConditionIntent] = [RemoveCondition(ConditionType.INVALID)]
        self.start_time, self.completion_time = job.status.start_time, job.status.completion_time

    def set(self, kind: ConditionType, status: str, reason: str, message: str, **how: Any) -> None:
        """``how``: the rest of ``intents.SetCondition`` (write, event, milestone, stamp, event_message)."""
        self.intents.append(SetCondition(kind, status, reason, message, **how))

    def decide(self) -> Stage:
        progress = self.progress
        if not self.stored - {ConditionType.INVALID}:
            message = f"{self.who} is created."
            self.set(
                ConditionType.CREATED,
                "True",
                REASON_CREATED,
                message,
                event="Normal",
                milestone=Milestone.CREATED,
            )
        self._suspension(progress.suspension)
        if progress.suspension.resuming or (self.start_time is None and not progress.suspension.suspended):
            self.start_time = self.stamp
        if progress.launcher is not None:
            self._launcher_outcome(progress.launcher)
        restarts, evicted = progress.restarts, progress.workers.counts.evicted
        if restarts.failure is not None and restarts.ruling is not None:
            self._failure_policy(restarts.failure, restarts.ruling)
        elif evicted and not self.policed:
            # Upstream leaves evicted jobs half-alive; we finish them so the launcher stops
            # (docs/compatibility.md).
            message = f"{evicted}/{progress.workers.counts.listed} workers are evicted"
            self.set(ConditionType.FAILED, "True", REASON_EVICTED, message, event="Warning")
            self.completion_time = self.completion_time or self.stamp
        self._running()
        return Stage(tuple(self.intents), self.start_time, self.completion_time)

    def _suspension(self, suspension: Suspension) -> None:
        """Suspended=True while suspended; Suspended=False once resumed."""
        if suspension.suspended:
            self.set(ConditionType.SUSPENDED, "True", REASON_SUSPENDED, "MPIJob suspended", event="Normal")
        elif suspension.resumed:
            self.set(ConditionType.SUSPENDED, "False", REASON_RESUMED, "MPIJob resumed", event="Normal")

    def _launcher_outcome(self, launcher: LauncherState) -> None:
        if launcher.outcome == LauncherOutcome.SUCCEEDED:
            self.completion_time = self.completion_time or launcher.completion_time or self.stamp
            message = f"{self.who} successfully completed."
            self.set(
                ConditionType.SUCCEEDED,
                "True",
                REASON_SUCCEEDED,
                message,
                event="Normal",
                milestone=Milestone.SUCCEEDED,
            )
        elif launcher.outcome == LauncherOutcome.FAILED and (not self.policed or launcher.ends_job):
            self.completion_time = self.completion_time or self.stamp
            failed = self.progress.restarts.current.failed_worker_exits()
            reason, message = launcher_failure(self.who, launcher, failed)
            self.set(
                ConditionType.FAILED, "True", reason, message, event="Warning", milestone=Milestone.FAILED
            )

    def _failure_policy(self, failure: PodFailure, ruling: Ruling) -> None:
        """A restart (Restarting=True, naming the Pod) or the job's failure, as the policy ruled."""
        if ruling.action == Action.RESTART:
            attempt = self.progress.restarts.recorded[0] if self.progress.restarts.recorded else None
            message = f"{self.who} restarts as attempt {attempt} ({ruling.why}): {failure.describe()}"
            self.set(
                ConditionType.RESTARTING,
                "True",
                failure.reason,
                truncate(message),
                event="Warning",
                milestone=Milestone.RESTARTED,
            )
            return
        self.completion_time = self.completion_time or self.stamp
        head = f"{self.who} has failed ({ruling.why})"
        launcher = self.progress.launcher
        if (
            failure.replica == ReplicaType.LAUNCHER
            and launcher is not None
            and launcher.last_exit is not None
        ):
            message = failure_message(head, launcher.last_exit, [])  # with the launcher's last output
        else:
            message = f"{head}: {failure.describe()}"
        kind = ConditionType.FAILED
        self.set(kind, "True", ruling.reason, truncate(message), event="Warning", milestone=Milestone.FAILED)

    def _running(self) -> None:
        progress = self.progress
        if progress.restarts.in_flight or progress.restarts.restarting:
            return  # Restarting stays until the next attempt runs
        if progress.suspension.suspended:
            self.set(ConditionType.RUNNING, "False", REASON_SUSPENDED, f"{self.who} is suspended.")
        elif progress.finishing:
            # Upstream's synthetic condition for a job that finished before it was seen running.
            message = f"{self.who} is finished but Running condition was never set."
            stamp = self.completion_time or self.stamp
            self.set(
                ConditionType.RUNNING, "False", REASON_RUNNING, message, write=Write.IF_ABSENT, stamp=stamp
            )
        elif (
            progress.launcher is not None
            and progress.launcher.running_pods >= 1
            and progress.workers.counts.active == progress.workers.counts.listed
        ):
            # Upstream's Event says the same without the condition's period.
            message = f"{self.who} is running."
            self.set(
                ConditionType.RUNNING,
                "True",
                REASON_RUNNING,
                message,
                event="Normal",
                event_message=f"{self.who} is running",
            )


def launcher_failure(who: str, launcher: LauncherState, workers: list[Exit]) -> tuple[str, str]:
    """Upstream ``updateMPIJobFailedStatus``: the Job's reason, plus the newest failed Pod's on backoff;
    the message then names the failed workers and the launcher's last words (``messages``)."""
    reason = launcher.failure_reason or REASON_FAILED
    message = launcher.failure_message or f"{who} has failed"
    pod = launcher.newest_failed_pod
    if reason == REASON_BACKOFF_LIMIT_EXCEEDED and pod is not None:
        reason += "/" + pod.reason
        message += ": " + pod.message
    return reason, failure_message(message, launcher.last_exit, workers)
