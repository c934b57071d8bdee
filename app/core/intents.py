"""What a sync wants done to the MPIJob's conditions, and the Events that announce it.

The plan decides every condition change as an intent (which type, to what, why, with which Event); the
status module is the one place that writes them (``status.apply``). The reasons are in ``reasons``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.api.types import ConditionType


class Milestone(StrEnum):
    """The transitions upstream counts in its ``mpi_operator_jobs_*_total`` metrics."""

    CREATED = "created"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    # Ours: a restart by the failure policy (``mpi_operator_hook_job_restarts_total``).
    RESTARTED = "restarted"


@dataclass(frozen=True)
class Event:
    """What upstream would have recorded as a Kubernetes Event; the shell posts and logs it and counts
    metrics."""

    type: str
    reason: str
    message: str
    milestone: Milestone | None = None
    # The same for every sync that decides this very transition (the condition's type and new status, and
    # the stored condition's transition time), so a repeated sync or another hook replica that posts it
    # again is recognised as a duplicate.
    key: str = ""


class Write(StrEnum):
    """How a condition is written; each rule is applied in ``status.apply`` only."""

    # Upstream ``setCondition``: the same status and reason change nothing (no timestamp moves); otherwise
    # the condition is re-appended, keeping ``lastTransitionTime`` when only the reason changed.
    STAGE = "stage"
    # The message is what the user acts on: a new message replaces the old one, while the transition time
    # stays that of the first (Invalid, the lint Warning, GangSchedulingUnavailable, GangScheduled).
    NOTICE = "notice"
    # Only when no condition of the type exists (upstream's synthetic Running of a job seen finished).
    IF_ABSENT = "if-absent"


@dataclass(frozen=True, slots=True)
class SetCondition:
    type: ConditionType
    status: str
    reason: str
    message: str
    write: Write = Write.STAGE
    # The Event type (``Normal``/``Warning``) that announces a change, if upstream announces one.
    event: str | None = None
    milestone: Milestone | None = None
    # IF_ABSENT: the condition's timestamps (else the sync's ``now``).
    stamp: str | None = None
    # The Event's message where upstream's differs from the condition's (its Running Event has no period).
    event_message: str | None = None


@dataclass(frozen=True, slots=True)
class RemoveCondition:
    type: ConditionType


ConditionIntent = SetCondition | RemoveCondition

# Conditions that advise and never describe the job's stage. They come first, in this order, because
# ``kubectl get mpijob`` shows the type of the *last* condition as STATE, which must stay the stage.
NOTICES = (ConditionType.WARNING, ConditionType.GANG_SCHEDULING_UNAVAILABLE, ConditionType.GANG_SCHEDULED)
