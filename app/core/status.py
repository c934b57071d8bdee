"""The MPIJob's next status, rendered from the plan, with upstream's reasons, messages and transitions.

Conditions are plain dicts in wire shape. ``set_condition`` follows upstream ``setCondition``: same
status and reason → no change at all (so no timestamp moves); otherwise the condition is re-appended at
the end, keeping ``lastTransitionTime`` when only the reason changed. A transition upstream announces with
an Event records it here, in ``ConditionLog``. ``now`` is always passed in; it is written only where
something changed, so a steady job's status is byte-for-byte the stored one (no write loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from app.api.defaults import Job
from app.api.types import ConditionType, JobStatus, ReplicaType
from app.core.plan import LauncherOutcome, LauncherState, Plan
from app.kube.gang import RESOURCE as PODGROUPS
from app.kube.gang import GangScheduler

Condition = dict[str, str]

REASON_CREATED = "MPIJobCreated"
REASON_RUNNING = "MPIJobRunning"
REASON_SUSPENDED = "MPIJobSuspended"
REASON_RESUMED = "MPIJobResumed"
REASON_SUCCEEDED = "MPIJobSucceeded"
REASON_FAILED = "MPIJobFailed"
REASON_EVICTED = "MPIJobEvicted"
REASON_INVALID = "ValidationError"
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
REASON_PODGROUP_NOT_DECLARED = "PodGroupChildNotDeclared"
MESSAGE_LIMIT = 1024


def timestamp(now: datetime) -> str:
    """RFC 3339 with second precision, as ``metav1.Time`` serialises."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate(message: str) -> str:
    """Upstream ``truncateMessage``: longer than 1,024 bytes → first 1,021 and ``...``."""
    raw = message.encode()
    if len(raw) <= MESSAGE_LIMIT:
        return message
    return raw[: MESSAGE_LIMIT - 3].decode(errors="ignore") + "..."


def conditions_from(status: JobStatus) -> list[Condition]:
    out = []
    for c in status.conditions:
        condition = {"type": c.type, "status": c.status}
        for key, value in (
            ("reason", c.reason),
            ("message", c.message),
            ("lastUpdateTime", c.last_update_time),
            ("lastTransitionTime", c.last_transition_time),
        ):
            if value:
                condition[key] = value
        out.append(condition)
    return out


def find(conditions: list[Condition], kind: str) -> Condition | None:
    return next((c for c in conditions if c["type"] == kind), None)


def set_condition(
    conditions: list[Condition], kind: str, status: str, reason: str, message: str, now: datetime
) -> bool:
    """Set a condition in place; return whether anything changed."""
    current = find(conditions, kind)
    if current is not None and current["status"] == status and current.get("reason", "") == reason:
        return False
    stamp = timestamp(now)
    new = {
        "type": str(kind),
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
    }
    if current is not None and current["status"] == status and current.get("lastTransitionTime"):
        new["lastTransitionTime"] = current["lastTransitionTime"]
    _filter_out(conditions, kind)
    conditions.append({k: v for k, v in new.items() if v})
    return True


def remove_condition(conditions: list[Condition], kind: str) -> bool:
    before = len(conditions)
    conditions[:] = [c for c in conditions if c["type"] != kind]
    return len(conditions) != before


def _filter_out(conditions: list[Condition], kind: str) -> None:
    """Upstream ``filterOutCondition``: drop ``kind``; a terminal condition turns Running/Failed False."""
    related = {
        ConditionType.RUNNING: ConditionType.RESTARTING,
        ConditionType.RESTARTING: ConditionType.RUNNING,
    }
    dropped = {kind, related.get(ConditionType(kind), kind)} if kind in related else {kind}
    conditions[:] = [c for c in conditions if c["type"] not in dropped]
    if kind in (ConditionType.SUCCEEDED, ConditionType.FAILED):
        for c in conditions:
            if c["type"] in (ConditionType.RUNNING, ConditionType.FAILED):
                c["status"] = "False"


def replica_status(active: int = 0, succeeded: int = 0, failed: int = 0) -> dict[str, int]:
    """A ReplicaStatus without zero counts (they are ``omitempty`` upstream)."""
    return {k: v for k, v in (("active", active), ("succeeded", succeeded), ("failed", failed)) if v}


# --- events ----------------------------------------------------------------------------------------


class Milestone(StrEnum):
    """The transitions upstream counts in its ``mpi_operator_jobs_*_total`` metrics."""

    CREATED = "created"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class Event:
    """What upstream would have recorded as a Kubernetes Event; the shell logs it and counts metrics."""

    type: str
    reason: str
    message: str
    milestone: Milestone | None = None


class ConditionLog:
    """The job's conditions as this sync rewrites them, with the Events their transitions announce."""

    def __init__(self, previous: JobStatus, now: datetime) -> None:
        self.conditions = conditions_from(previous)
        self.events: list[Event] = []
        self.now = now

    def set(
        self,
        kind: str,
        status: str,
        reason: str,
        message: str,
        event: str | None = None,
        milestone: Milestone | None = None,
    ) -> bool:
        """Set a condition; when it changed and ``event`` names a type, record that Event."""
        changed = set_condition(self.conditions, kind, status, reason, message, self.now)
        if changed and event is not None:
            self.events.append(Event(event, reason, message, milestone))
        return changed

    def has(self, kind: str) -> bool:
        return find(self.conditions, kind) is not None


# --- the status document ---------------------------------------------------------------------------


@dataclass
class _Times:
    start: str | None
    completion: str | None


def next_status(
    job: Job, plan: Plan, now: datetime, undeclared: GangScheduler | None = None
) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """Upstream ``updateMPIJobStatus`` (and, for finished jobs, its cleanup), as one status and its Events.

    ``undeclared``: the configured gang scheduler, when the CompositeController lacks its PodGroup child.
    """
    log = ConditionLog(job.status, now)
    remove_condition(log.conditions, ConditionType.INVALID)
    if plan.finished_before:
        replicas = _finished_replica_statuses(job.status, plan)
        times = _Times(job.status.start_time, job.status.completion_time)
    else:
        replicas, times = _active_status(job, plan, log)
    # A finished job gets no new notice, and loses an old one once the overlay is applied.
    if not (plan.finished_before and undeclared is not None):
        _record_gang_scheduling(log, undeclared)
    status = render(log.conditions, replicas, times.start, times.completion, job.metadata.generation)
    return status, tuple(log.events)


def _finished_replica_statuses(previous: JobStatus, plan: Plan) -> dict[str, dict[str, int]] | None:
    replicas = previous_replica_statuses(previous)
    if plan.workers_cleaned:
        replicas = {**(replicas or {}), ReplicaType.WORKER.value: {}}
    if plan.launcher is not None and not plan.launcher.done:
        # That launcher is deleted by this response (see the plan).
        launcher = replica_status(failed=plan.launcher.failed_pods)
        replicas = {**(replicas or {}), ReplicaType.LAUNCHER.value: launcher}
    return replicas


def _active_status(job: Job, plan: Plan, log: ConditionLog) -> tuple[dict[str, dict[str, int]], _Times]:
    previous = job.status
    stamp = timestamp(log.now)
    if not log.conditions:
        message = f"MPIJob {job.namespace}/{job.name} is created."
        log.set(ConditionType.CREATED, "True", REASON_CREATED, message, "Normal", Milestone.CREATED)
    start = stamp if previous.start_time is None and not plan.suspended else previous.start_time
    times = _Times(start, previous.completion_time)
    if _record_suspension(log, plan):
        times.start = stamp
    replicas = previous_replica_statuses(previous) or {}
    if plan.launcher is not None:
        replicas[ReplicaType.LAUNCHER.value] = _launcher_replica_status(plan.launcher)
        _record_launcher_outcome(job, plan.launcher, log, times)
    elif plan.suspended and ReplicaType.LAUNCHER.value in replicas:
        replicas[ReplicaType.LAUNCHER.value] = {}  # its launcher Job is gone while suspended
    counts = plan.worker_counts
    replicas[ReplicaType.WORKER.value] = replica_status(counts.active, counts.succeeded, counts.failed)
    if counts.evicted:
        # Upstream leaves evicted jobs half-alive; we finish them so the launcher stops (README: deviations).
        message = f"{counts.evicted}/{plan.counted_workers} workers are evicted"
        log.set(ConditionType.FAILED, "True", REASON_EVICTED, message, "Warning")
        times.completion = times.completion or stamp
    _record_running(job, plan, log, times)
    return replicas, times


def _record_gang_scheduling(log: ConditionLog, undeclared: GangScheduler | None) -> None:
    """Say why a job configured for gang scheduling runs without a PodGroup, until the overlay is applied."""
    kind = ConditionType.GANG_SCHEDULING_UNAVAILABLE
    if undeclared is None:
        remove_condition(log.conditions, kind)
        return
    message = (
        f"MPI_OPERATOR_GANG_SCHEDULING is {undeclared.scheduler_name!r} but the CompositeController does not"
        f" declare the PodGroup child ({undeclared.api_version} {PODGROUPS}); apply {undeclared.overlay}/."
        " The job runs without gang scheduling."
    )
    if log.set(kind, "True", REASON_PODGROUP_NOT_DECLARED, message, "Warning"):
        # First, not last: the last condition is the job's state (kubectl's STATE column).
        log.conditions.insert(0, log.conditions.pop())


def _record_suspension(log: ConditionLog, plan: Plan) -> bool:
    """Suspended=True while suspended; Suspended=False once resumed. Returns whether it resumed now."""
    if plan.suspended:
        log.set(ConditionType.SUSPENDED, "True", REASON_SUSPENDED, "MPIJob suspended", "Normal")
        return False
    if not log.has(ConditionType.SUSPENDED):
        return False
    return log.set(ConditionType.SUSPENDED, "False", REASON_RESUMED, "MPIJob resumed", "Normal")


def _launcher_replica_status(launcher: LauncherState) -> dict[str, int]:
    if launcher.outcome == LauncherOutcome.SUCCEEDED:
        return replica_status(succeeded=1, failed=launcher.failed_pods)
    if launcher.outcome == LauncherOutcome.FAILED:
        return replica_status(failed=launcher.failed_pods)
    return replica_status(active=launcher.running_pods, failed=launcher.failed_pods)


def _record_launcher_outcome(job: Job, launcher: LauncherState, log: ConditionLog, times: _Times) -> None:
    if launcher.outcome == LauncherOutcome.SUCCEEDED:
        message = f"MPIJob {job.namespace}/{job.name} successfully completed."
        times.completion = times.completion or launcher.completion_time or timestamp(log.now)
        log.set(ConditionType.SUCCEEDED, "True", REASON_SUCCEEDED, message, "Normal", Milestone.SUCCEEDED)
    elif launcher.outcome == LauncherOutcome.FAILED:
        reason, message = launcher_failure(job, launcher)
        times.completion = times.completion or timestamp(log.now)
        log.set(ConditionType.FAILED, "True", reason, message, "Warning", Milestone.FAILED)


def launcher_failure(job: Job, launcher: LauncherState) -> tuple[str, str]:
    """Upstream ``updateMPIJobFailedStatus``: the Job's reason, plus the newest failed Pod's on backoff."""
    reason = launcher.failure_reason or REASON_FAILED
    message = launcher.failure_message or f"MPIJob {job.namespace}/{job.name} has failed"
    pod = launcher.newest_failed_pod
    if reason == REASON_BACKOFF_LIMIT_EXCEEDED and pod is not None:
        reason += "/" + pod.reason
        message += ": " + pod.message
    return reason, truncate(message)


def _record_running(job: Job, plan: Plan, log: ConditionLog, times: _Times) -> None:
    who = f"MPIJob {job.namespace}/{job.name}"
    if plan.suspended:
        log.set(ConditionType.RUNNING, "False", REASON_SUSPENDED, f"{who} is suspended.")
    elif plan.finishing:
        if not log.has(ConditionType.RUNNING):
            # Upstream's synthetic condition for a job that finished before it was seen running.
            stamp = times.completion or timestamp(log.now)
            log.conditions.append(
                {
                    "type": ConditionType.RUNNING.value,
                    "status": "False",
                    "reason": REASON_RUNNING,
                    "message": f"{who} is finished but Running condition was never set.",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                }
            )
    elif (
        plan.launcher is not None
        and plan.launcher.running_pods >= 1
        and plan.worker_counts.active == plan.counted_workers
    ):
        log.set(ConditionType.RUNNING, "True", REASON_RUNNING, f"{who} is running.")


def invalid_status(
    previous: JobStatus, generation: int | None, errors: str, now: datetime
) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """``Invalid=True`` listing every error; everything else as stored.

    Unlike other conditions the message matters here: it tells the user what to fix now, so a new message
    replaces the old one, while the transition time stays that of the first invalid spec.
    """
    message = truncate(f"Found validation errors: {errors}")
    log = ConditionLog(previous, now)
    current = find(log.conditions, ConditionType.INVALID)
    if current is None or current.get("message") != message:
        remove_condition(log.conditions, ConditionType.INVALID)
        log.set(ConditionType.INVALID, "True", REASON_INVALID, message, "Warning")
        if current is not None and current["status"] == "True" and current.get("lastTransitionTime"):
            log.conditions[-1]["lastTransitionTime"] = current["lastTransitionTime"]
    replicas = previous_replica_statuses(previous)
    status = render(log.conditions, replicas, previous.start_time, previous.completion_time, generation)
    return status, tuple(log.events)


def previous_replica_statuses(status: JobStatus) -> dict[str, dict[str, int]] | None:
    if status.replica_statuses is None:
        return None
    return {
        kind: replica_status(s.active, s.succeeded, s.failed) for kind, s in status.replica_statuses.items()
    }


def render(
    conditions: list[Condition],
    replica_statuses: dict[str, dict[str, int]] | None,
    start_time: str | None,
    completion_time: str | None,
    generation: int | None,
) -> dict[str, Any]:
    """The status document Metacontroller writes (it replaces the parent's status wholesale)."""
    status: dict[str, Any] = {"conditions": conditions}
    if replica_statuses is not None:
        status["replicaStatuses"] = replica_statuses
    if start_time:
        status["startTime"] = start_time
    if completion_time:
        status["completionTime"] = completion_time
    if generation is not None:
        # Metacontroller injects this on every write; returning it keeps our view equal to the stored one.
        status["observedGeneration"] = generation
    return status
