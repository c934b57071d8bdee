"""MPIJob conditions and the status document, with upstream's reasons, messages and transitions.

Conditions are plain dicts in wire shape. ``set_condition`` follows upstream ``setCondition``: same
status and reason → no change at all (so no timestamp moves); otherwise the condition is re-appended at
the end, keeping ``lastTransitionTime`` when only the reason changed. ``now`` is always passed in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.api.types import ConditionType, JobStatus

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


def is_true(conditions: list[Condition], kind: str) -> bool:
    condition = find(conditions, kind)
    return condition is not None and condition["status"] == "True"


def is_finished(conditions: list[Condition]) -> bool:
    return is_true(conditions, ConditionType.SUCCEEDED) or is_true(conditions, ConditionType.FAILED)


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


def replica_status(active: int = 0, succeeded: int = 0, failed: int = 0) -> dict[str, int]:
    """A ReplicaStatus without zero counts (they are ``omitempty`` upstream)."""
    return {k: v for k, v in (("active", active), ("succeeded", succeeded), ("failed", failed)) if v}
