"""The MPIJob's next status, rendered from the plan: the one place conditions are written.

Conditions are plain dicts in wire shape. ``apply`` writes one intent of the plan by its rule
(``intents.Write``); ``order`` puts the notices first and leaves the stage conditions in upstream's order.
``now`` is always passed in; it is written only where something changed, so a steady job's status is
byte-for-byte the stored one (no write loop).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from app.api.defaults import Job
from app.api.types import ConditionType, JobStatus, ReplicaType
from app.core.intents import NOTICES, ConditionIntent, Event, RemoveCondition, SetCondition, Write
from app.core.messages import truncate
from app.core.observed import LauncherJobOutcome, LauncherJobState
from app.core.plan import Plan
from app.core.reasons import REASON_INVALID
from app.core.stage import timestamp

WireCondition = dict[str, str]


def conditions_from(status: JobStatus) -> list[WireCondition]:
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


def find(conditions: list[WireCondition], kind: str) -> WireCondition | None:
    return next((c for c in conditions if c["type"] == kind), None)


def apply(
    conditions: list[WireCondition], intent: ConditionIntent, now: datetime, attempt: int = 0
) -> Event | None:
    """Write one intent in place; return the Event that announces it, if it changed something.
    ``attempt``: the failure policy's attempt the status is in, part of the Event's key (Running and
    Restarting are removed rather than turned False, so each attempt's would otherwise look the same)."""
    if isinstance(intent, RemoveCondition):
        conditions[:] = [c for c in conditions if c["type"] != intent.type]
        return None
    current = find(conditions, intent.type)
    if not _changes(current, intent):
        return None
    stamp = intent.stamp or timestamp(now)
    before = (current or {}).get("lastTransitionTime", "-")
    key = f"{intent.type}/{intent.status}/{intent.reason}/{before}/{attempt}"
    new = {
        "type": str(intent.type),
        "status": intent.status,
        "reason": intent.reason,
        "message": intent.message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
    }
    if current is not None and current["status"] == intent.status and current.get("lastTransitionTime"):
        new["lastTransitionTime"] = current["lastTransitionTime"]
    _filter_out(conditions, intent.type)
    conditions.append({k: v for k, v in new.items() if v})
    if intent.event is None:
        return None
    message = intent.event_message or intent.message
    return Event(intent.event, intent.reason, message, intent.milestone, key)


def _changes(current: WireCondition | None, intent: SetCondition) -> bool:
    if current is None:
        return True
    if intent.write == Write.IF_ABSENT:
        return False
    same = current["status"] == intent.status and current.get("reason", "") == intent.reason
    if intent.write == Write.NOTICE:
        return not same or current.get("message", "") != intent.message
    return not same


def order(conditions: list[WireCondition]) -> list[WireCondition]:
    """Notices first (``intents.NOTICES``), then the stage conditions as written: the last is STATE."""
    notices = [c for kind in NOTICES for c in conditions if c["type"] == kind]
    return notices + [c for c in conditions if c["type"] not in NOTICES]


def write_conditions(
    stored: JobStatus, intents: Iterable[ConditionIntent], now: datetime, attempt: int = 0
) -> tuple[list[WireCondition], tuple[Event, ...]]:
    """The stored conditions with every intent applied, in order, and the Events of those that changed."""
    conditions = conditions_from(stored)
    events = [e for intent in intents if (e := apply(conditions, intent, now, attempt)) is not None]
    return order(conditions), tuple(events)


def _filter_out(conditions: list[WireCondition], kind: str) -> None:
    """Upstream ``filterOutCondition``: drop ``kind``; a terminal condition turns Running/Failed False."""
    related = {
        ConditionType.RUNNING: ConditionType.RESTARTING,
        ConditionType.RESTARTING: ConditionType.RUNNING,
    }
    dropped = {kind, related.get(ConditionType(kind), kind)} if kind in related else {kind}
    conditions[:] = [c for c in conditions if c["type"] not in dropped]
    if kind in (ConditionType.SUCCEEDED, ConditionType.FAILED):
        # Restarting is never set upstream; ours ends with the job too.
        ended = (ConditionType.RUNNING, ConditionType.FAILED, ConditionType.RESTARTING)
        for c in conditions:
            if c["type"] in ended:
                c["status"] = "False"


def replica_status(active: int = 0, succeeded: int = 0, failed: int = 0) -> dict[str, int]:
    """A ReplicaStatus without zero counts (they are ``omitempty`` upstream)."""
    return {k: v for k, v in (("active", active), ("succeeded", succeeded), ("failed", failed)) if v}


# --- the status document ---------------------------------------------------------------------------


def next_status(
    job: Job, plan: Plan, stored: JobStatus, now: datetime
) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """Upstream ``updateMPIJobStatus`` (and, for finished jobs, its cleanup), as one status and its Events.

    ``stored``: the status as Metacontroller sent it, the lint Warning included."""
    recorded = plan.restarts.recorded
    conditions, events = write_conditions(stored, plan.conditions, now, recorded[0] if recorded else 0)
    replicas = _finished_replicas(job.status, plan) if plan.finished_before else _active_replicas(job, plan)
    times = plan.stage.start_time, plan.stage.completion_time
    status = render(conditions, replicas, *times, job.metadata.generation)
    return _with_restarts(status, *(recorded or (None, None))), events


def _finished_replicas(stored: JobStatus, plan: Plan) -> dict[str, dict[str, int]] | None:
    replicas = stored_replica_statuses(stored)
    if plan.finish.cleaning is not None:
        replicas = {**(replicas or {}), ReplicaType.WORKER.value: {}}
    launcher = plan.launcher_job.state
    if launcher is not None and not launcher.done:
        # That launcher is deleted by this response (``launcher_creation``).
        replicas = {
            **(replicas or {}),
            ReplicaType.LAUNCHER.value: replica_status(failed=launcher.failed_pods),
        }
    return replicas


def _active_replicas(job: Job, plan: Plan) -> dict[str, dict[str, int]]:
    replicas = stored_replica_statuses(job.status) or {}
    if plan.launcher_job.state is not None:
        replicas[ReplicaType.LAUNCHER.value] = _launcher_replica_status(plan.launcher_job.state)
    elif plan.suspension.suspended:
        # As upstream, whose suspended job has a suspended launcher Job (ours has none:
        # docs/compatibility.md).
        replicas[ReplicaType.LAUNCHER.value] = {}
    counts = plan.workers.counts
    replicas[ReplicaType.WORKER.value] = replica_status(counts.active, counts.succeeded, counts.failed)
    return replicas


def _launcher_replica_status(launcher: LauncherJobState) -> dict[str, int]:
    if launcher.outcome == LauncherJobOutcome.SUCCEEDED:
        return replica_status(succeeded=1, failed=launcher.failed_pods)
    if launcher.outcome == LauncherJobOutcome.FAILED:
        return replica_status(failed=launcher.failed_pods)
    return replica_status(active=launcher.running_pods, failed=launcher.failed_pods)


def invalid_status(
    stored: JobStatus, generation: int | None, errors: str, now: datetime
) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """``Invalid=True`` listing every error (a notice: the message is what to fix); the rest as stored."""
    message = truncate(f"Found validation errors: {errors}")
    invalid = SetCondition(
        ConditionType.INVALID, "True", REASON_INVALID, message, Write.NOTICE, event="Warning"
    )
    conditions, events = write_conditions(stored, (invalid,), now)
    replicas = stored_replica_statuses(stored)
    status = render(conditions, replicas, stored.start_time, stored.completion_time, generation)
    return _with_restarts(status, stored.restart_attempt, stored.restart_count), events


def _with_restarts(status: dict[str, Any], attempt: int | None, count: int | None) -> dict[str, Any]:
    """The failure policy's record (``policies.failure``); kept as stored by a sync that decides nothing."""
    if attempt is not None:
        status["restartAttempt"] = attempt
    if count is not None:
        status["restartCount"] = count
    return status


def stored_replica_statuses(status: JobStatus) -> dict[str, dict[str, int]] | None:
    if status.replica_statuses is None:
        return None
    return {
        kind: replica_status(s.active, s.succeeded, s.failed) for kind, s in status.replica_statuses.items()
    }


def render(
    conditions: list[WireCondition],
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
