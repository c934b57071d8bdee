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
from app.core.observed import Exit, LauncherJobState
from app.core.policies.failure import Restarts
from app.core.policies.finishing import Ending
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
    # How the job ends in this sync (``finishing``), if it does.
    ending: Ending | None
    launcher_job: LauncherJobState | None
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
    """Renders the decisions as conditions, in upstream's order; decides nothing itself."""

    def __init__(self, job: Job, progress: Progress, stamp: str) -> None:
        self.progress, self.stamp = progress, stamp
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
        if progress.ending is not None:
            self._ending(progress.ending)
        elif progress.restarts.restarting:
            self._restarting()
        self._running()
        return Stage(tuple(self.intents), self.start_time, self.completion_time)

    def _suspension(self, suspension: Suspension) -> None:
        """Suspended=True while suspended; Suspended=False once resumed."""
        if suspension.suspended:
            self.set(ConditionType.SUSPENDED, "True", REASON_SUSPENDED, "MPIJob suspended", event="Normal")
        elif suspension.resumed:
            self.set(ConditionType.SUSPENDED, "False", REASON_RESUMED, "MPIJob resumed", event="Normal")

    def _ending(self, ending: Ending) -> None:
        """The terminal condition ``finishing`` decided, with upstream's reason and a message to act on."""
        launcher = self.progress.launcher_job
        if ending == Ending.SUCCEEDED:
            finished = launcher.completion_time if launcher is not None else None
            self.completion_time = self.completion_time or finished or self.stamp
            message = f"{self.who} successfully completed."
            self.set(
                ending.condition,
                "True",
                REASON_SUCCEEDED,
                message,
                event="Normal",
                milestone=Milestone.SUCCEEDED,
            )
            return
        self.completion_time = self.completion_time or self.stamp
        reason, message = self._failure_words(ending)
        # Upstream counts no failed job for an eviction (it never ends one).
        milestone = None if ending == Ending.EVICTED else Milestone.FAILED
        self.set(ending.condition, "True", reason, message, event="Warning", milestone=milestone)

    def _failure_words(self, ending: Ending) -> tuple[str, str]:
        """The Failed condition's reason and message for ``ending``."""
        if ending == Ending.LAUNCHER_FAILED:
            launcher = self.progress.launcher_job
            assert launcher is not None  # finishing: the launcher Job failed
            return launcher_failure(self.who, launcher, self.progress.restarts.current.failed_worker_exits())
        if ending == Ending.EVICTED:
            # Upstream leaves evicted jobs half-alive; we finish them so the launcher stops
            # (docs/compatibility.md).
            counts = self.progress.workers.counts
            return REASON_EVICTED, f"{counts.evicted}/{counts.listed} workers are evicted"
        return self._policy_failure()

    def _policy_failure(self) -> tuple[str, str]:
        """The failure policy's ruling that fails the job, naming the Pod (or the launcher's last words)."""
        restarts, launcher = self.progress.restarts, self.progress.launcher_job
        ruling, failure = restarts.ruling, restarts.failure
        assert ruling is not None and failure is not None  # finishing: the policy fails the job
        head = f"{self.who} has failed ({ruling.why})"
        if (
            failure.replica == ReplicaType.LAUNCHER
            and launcher is not None
            and launcher.last_exit is not None
        ):
            message = failure_message(head, launcher.last_exit, [])  # with the launcher's last output
        else:
            message = f"{head}: {failure.describe()}"
        return ruling.reason, truncate(message)

    def _restarting(self) -> None:
        """Restarting=True, naming the Pod whose failure the policy restarts the job for."""
        restarts = self.progress.restarts
        failure, ruling = restarts.failure, restarts.ruling
        assert failure is not None and ruling is not None  # failure: the policy restarts the job
        attempt = restarts.recorded[0] if restarts.recorded else None
        message = f"{self.who} restarts as attempt {attempt} ({ruling.why}): {failure.describe()}"
        self.set(
            ConditionType.RESTARTING,
            "True",
            failure.reason,
            truncate(message),
            event="Warning",
            milestone=Milestone.RESTARTED,
        )

    def _running(self) -> None:
        progress = self.progress
        if progress.restarts.in_flight or progress.restarts.restarting:
            return  # Restarting stays until the next attempt runs
        if progress.suspension.suspended:
            self.set(ConditionType.RUNNING, "False", REASON_SUSPENDED, f"{self.who} is suspended.")
        elif progress.ending is not None:
            # Upstream's synthetic condition for a job that finished before it was seen running.
            message = f"{self.who} is finished but Running condition was never set."
            stamp = self.completion_time or self.stamp
            self.set(
                ConditionType.RUNNING, "False", REASON_RUNNING, message, write=Write.IF_ABSENT, stamp=stamp
            )
        elif (
            progress.launcher_job is not None
            and progress.launcher_job.running_pods >= 1
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


def launcher_failure(who: str, launcher: LauncherJobState, workers: list[Exit]) -> tuple[str, str]:
    """Upstream ``updateMPIJobFailedStatus``: the Job's reason, plus the newest failed Pod's on backoff;
    the message then names the failed workers and the launcher's last words (``messages``)."""
    reason = launcher.failure_reason or REASON_FAILED
    message = launcher.failure_message or f"{who} has failed"
    pod = launcher.newest_failed_pod
    if reason == REASON_BACKOFF_LIMIT_EXCEEDED and pod is not None:
        reason += "/" + pod.reason
        message += ": " + pod.message
    return reason, failure_message(message, launcher.last_exit, workers)
