"""How long a job waited and ran, measured once, when the sync decides the transition that ends the wait.

Every value comes from the status's own timestamps, never from the hook's clock or memory, so any replica
that decides the same transition computes the same value:

- ``queued``: a job created suspended (Kueue) until it is first resumed: the ``Created`` condition's
  transition time to the ``startTime`` the resume writes.
- ``startup``: from ``startTime`` (its creation, or a resume) to ``Running=True``: each start is measured,
  so a job preempted and resumed is measured again. The next attempt of a restart by the failure policy is
  not a start: its time is in the run.
- ``run``: from the stored ``Running=True`` transition (with restarts, the last attempt's) to
  ``completionTime``, with the outcome; a job that finishes without ever running has no run.

A sync repeated before its status write lands (Metacontroller's cache, another replica) decides the same
transition again and measures it again, stamped as late as that sync (docs/operations.md, Metrics).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from app.api.types import ConditionType, JobStatus
from app.core.intents import Event, Milestone
from app.core.reasons import REASON_RESUMED, REASON_RUNNING


class Phase(StrEnum):
    QUEUED = "queued"
    STARTUP = "startup"
    RUN = "run"


@dataclass(frozen=True, slots=True)
class Timing:
    phase: Phase
    seconds: float
    # RUN only: succeeded or failed.
    outcome: str = ""


def phase_timings(
    stored: JobStatus, status: Mapping[str, Any], events: Iterable[Event]
) -> tuple[Timing, ...]:
    """What this sync's transitions (``events``) end, given the status before (``stored``) and after."""
    found: list[Timing | None] = []
    ran = [c for c in stored.conditions if c.type == ConditionType.RUNNING and c.status == "True"]
    was_running = ran[0].last_transition_time if ran else None
    restarting = any(c.type == ConditionType.RESTARTING and c.status == "True" for c in stored.conditions)
    for event in events:
        if event.reason == REASON_RESUMED and stored.start_time is None:
            created = _condition(status, ConditionType.CREATED, "True")
            found.append(_between(Phase.QUEUED, created, status.get("startTime")))
        elif event.reason == REASON_RUNNING and event.type == "Normal" and not (was_running or restarting):
            started = _condition(status, ConditionType.RUNNING, "True")
            found.append(_between(Phase.STARTUP, status.get("startTime"), started))
        elif event.milestone in (Milestone.SUCCEEDED, Milestone.FAILED) and was_running is not None:
            outcome = str(event.milestone)
            found.append(_between(Phase.RUN, was_running, status.get("completionTime"), outcome))
    return tuple(timing for timing in found if timing is not None)


def _condition(status: Mapping[str, Any], kind: ConditionType, value: str) -> str | None:
    """The transition time of the condition ``kind`` when it has status ``value``."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == value:
            return condition.get("lastTransitionTime") or None
    return None


def _between(phase: Phase, start: object, end: object, outcome: str = "") -> Timing | None:
    """The seconds from ``start`` to ``end`` (RFC 3339), or None when either is missing or they disagree."""
    try:
        seconds = (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds()
    except (TypeError, ValueError):
        return None
    return Timing(phase, seconds, outcome) if seconds >= 0 and start and end else None
