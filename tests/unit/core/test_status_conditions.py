"""Condition helpers against upstream pkg/controller/mpi_job_controller_status.go.

``setCondition``: same status and reason → nothing changes (message-only changes are ignored); same status,
new reason → ``lastTransitionTime`` kept; otherwise the condition is removed and re-appended at the end.
``filterOutCondition``: Running and Restarting replace each other; setting Succeeded or Failed turns every
remaining Running and Failed condition "False" in place, keeping reason, message and both timestamps.
``truncateMessage``: over 1,024 bytes → the first 1,021 and "...".
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from app.api.types import ConditionType, JobStatus
from app.core.intents import SetCondition
from app.core.messages import truncate
from app.core.policies.finishing import has_finished
from app.core.stage import timestamp
from app.core.status import WireCondition, apply, conditions_from

T0 = "2026-05-04T09:00:00Z"
T1 = "2026-05-04T09:05:30Z"
NOW = datetime(2026, 5, 4, 9, 5, 30, 123456, tzinfo=UTC)  # renders as T1


def cond(
    kind: str, status: str, reason: str, message: str, updated: str = T0, transitioned: str = T0
) -> WireCondition:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": updated,
        "lastTransitionTime": transitioned,
    }


CREATED = cond("Created", "True", "MPIJobCreated", "MPIJob ns/pi is created.")
RUNNING = cond("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running.")
SUSPENDED_RUNNING = cond("Running", "False", "MPIJobSuspended", "MPIJob ns/pi is suspended.")
SUSPENDED = cond("Suspended", "True", "MPIJobSuspended", "MPIJob suspended")
EVICTED = cond("Failed", "True", "MPIJobEvicted", "1/2 workers are evicted")
RESTARTING = cond("Restarting", "True", "Restarting", "restarting")


def flipped(condition: WireCondition) -> WireCondition:
    return {**condition, "status": "False"}


# (id, conditions before, (type, status, reason, message), changed?, conditions after)
CASES: list[tuple[str, list[WireCondition], tuple[str, str, str, str], bool, list[WireCondition]]] = [
    (
        "first condition is appended",
        [],
        ("Created", "True", "MPIJobCreated", "MPIJob ns/pi is created."),
        True,
        [cond("Created", "True", "MPIJobCreated", "MPIJob ns/pi is created.", T1, T1)],
    ),
    (
        "new type appended at the end",
        [CREATED],
        ("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running."),
        True,
        [CREATED, cond("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running.", T1, T1)],
    ),
    (
        "same status and reason is no change",
        [CREATED, RUNNING],
        ("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running."),
        False,
        [CREATED, RUNNING],
    ),
    (
        "message-only change is ignored",
        [CREATED, EVICTED],
        ("Failed", "True", "MPIJobEvicted", "2/2 workers are evicted"),
        False,
        [CREATED, EVICTED],
    ),
    (
        "reason change with same status keeps lastTransitionTime",
        [CREATED, SUSPENDED_RUNNING, SUSPENDED],
        (
            "Running",
            "False",
            "MPIJobRunning",
            "MPIJob ns/pi is finished but Running condition was never set.",
        ),
        True,
        [
            CREATED,
            SUSPENDED,
            cond(
                "Running",
                "False",
                "MPIJobRunning",
                "MPIJob ns/pi is finished but Running condition was never set.",
                T1,
                T0,
            ),
        ],
    ),
    (
        "status change moves both times and re-appends at the end",
        [CREATED, SUSPENDED_RUNNING, SUSPENDED],
        ("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running."),
        True,
        [CREATED, SUSPENDED, cond("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running.", T1, T1)],
    ),
    (
        "resume: Suspended True to False",
        [CREATED, SUSPENDED, SUSPENDED_RUNNING],
        ("Suspended", "False", "MPIJobResumed", "MPIJob resumed"),
        True,
        [CREATED, SUSPENDED_RUNNING, cond("Suspended", "False", "MPIJobResumed", "MPIJob resumed", T1, T1)],
    ),
    (
        "Succeeded flips Running and Failed to False in place",
        [CREATED, RUNNING, EVICTED],
        ("Succeeded", "True", "MPIJobSucceeded", "MPIJob ns/pi successfully completed."),
        True,
        [
            CREATED,
            flipped(RUNNING),
            flipped(EVICTED),
            cond("Succeeded", "True", "MPIJobSucceeded", "MPIJob ns/pi successfully completed.", T1, T1),
        ],
    ),
    (
        "Failed flips Running in place and replaces the old Failed",
        [CREATED, RUNNING, EVICTED],
        ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        True,
        [
            CREATED,
            flipped(RUNNING),
            cond(
                "Failed",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                T1,
                T0,
            ),
        ],
    ),
    (
        "Failed after a flipped Failed moves both times",
        [CREATED, flipped(RUNNING), flipped(EVICTED)],
        ("Failed", "True", "MPIJobFailed", "MPIJob ns/pi has failed"),
        True,
        [
            CREATED,
            flipped(RUNNING),
            cond("Failed", "True", "MPIJobFailed", "MPIJob ns/pi has failed", T1, T1),
        ],
    ),
    (
        "Succeeded leaves Suspended and Created alone",
        [CREATED, cond("Suspended", "False", "MPIJobResumed", "MPIJob resumed"), SUSPENDED_RUNNING],
        ("Succeeded", "True", "MPIJobSucceeded", "done"),
        True,
        [
            CREATED,
            cond("Suspended", "False", "MPIJobResumed", "MPIJob resumed"),
            SUSPENDED_RUNNING,
            cond("Succeeded", "True", "MPIJobSucceeded", "done", T1, T1),
        ],
    ),
    (
        "unchanged Succeeded does not flip Running",
        [CREATED, RUNNING, cond("Succeeded", "True", "MPIJobSucceeded", "done")],
        ("Succeeded", "True", "MPIJobSucceeded", "done"),
        False,
        [CREATED, RUNNING, cond("Succeeded", "True", "MPIJobSucceeded", "done")],
    ),
    (
        "Running replaces Restarting",
        [CREATED, RESTARTING],
        ("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running."),
        True,
        [CREATED, cond("Running", "True", "MPIJobRunning", "MPIJob ns/pi is running.", T1, T1)],
    ),
    (
        "Restarting replaces Running",
        [CREATED, RUNNING],
        ("Restarting", "True", "Restarting", "restarting"),
        True,
        [CREATED, cond("Restarting", "True", "Restarting", "restarting", T1, T1)],
    ),
    (
        "Running False does not flip anything",
        [CREATED, EVICTED, RUNNING],
        ("Running", "False", "MPIJobSuspended", "MPIJob ns/pi is suspended."),
        True,
        [CREATED, EVICTED, cond("Running", "False", "MPIJobSuspended", "MPIJob ns/pi is suspended.", T1, T1)],
    ),
    (
        "empty reason and message are omitted",
        [],
        ("Created", "True", "", ""),
        True,
        [{"type": "Created", "status": "True", "lastUpdateTime": T1, "lastTransitionTime": T1}],
    ),
    (
        "empty reason equals a missing reason",
        [{"type": "Created", "status": "True", "lastUpdateTime": T0, "lastTransitionTime": T0}],
        ("Created", "True", "", "now with a message"),
        False,
        [{"type": "Created", "status": "True", "lastUpdateTime": T0, "lastTransitionTime": T0}],
    ),
]


@pytest.mark.parametrize(
    ("before", "args", "changed", "after"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_stage_condition_is_written_as_upstream_setcondition(
    before: list[WireCondition], args: tuple[str, str, str, str], changed: bool, after: list[WireCondition]
) -> None:
    conditions = copy.deepcopy(before)
    same_list = conditions
    kind, status, reason, message = args
    intent = SetCondition(ConditionType(kind), status, reason, message, event="Normal")
    assert (apply(conditions, intent, NOW) is not None) is changed
    assert conditions == after
    assert conditions is same_list  # updated in place, like the status the caller renders


def test_the_written_type_is_a_plain_str() -> None:
    conditions: list[WireCondition] = []
    apply(conditions, SetCondition(ConditionType.SUCCEEDED, "True", "MPIJobSucceeded", "done"), NOW)
    assert conditions == [cond("Succeeded", "True", "MPIJobSucceeded", "done", T1, T1)]
    assert type(conditions[0]["type"]) is str


@pytest.mark.parametrize(
    ("message", "want"),
    [
        ("", ""),
        ("short", "short"),
        ("a" * 1023, "a" * 1023),
        ("a" * 1024, "a" * 1024),
        ("a" * 1025, "a" * 1021 + "..."),
        ("b" * 5000, "b" * 1021 + "..."),
        ("é" * 512, "é" * 512),  # exactly 1,024 bytes
        # 1,021 bytes would split the 511th "é"; the partial character is dropped.
        ("é" * 513, "é" * 510 + "..."),
        ("x" + "é" * 600, "x" + "é" * 510 + "..."),
    ],
    ids=[
        "empty",
        "short",
        "1023 bytes",
        "1024 bytes kept",
        "1025 bytes truncated",
        "5000 bytes truncated",
        "1024 bytes of 2-byte characters kept",
        "multi-byte character not split",
        "multi-byte boundary aligned",
    ],
)
def test_truncate(message: str, want: str) -> None:
    got = truncate(message)
    assert got == want
    assert len(got.encode()) <= 1024


@pytest.mark.parametrize(
    ("now", "want"),
    [
        (datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC), "2026-05-04T09:00:30Z"),
        (datetime(2026, 5, 4, 9, 0, 30, 999999, tzinfo=UTC), "2026-05-04T09:00:30Z"),
        (datetime(2026, 5, 4, 11, 0, 30, tzinfo=timezone(timedelta(hours=2))), "2026-05-04T09:00:30Z"),
        (datetime(2026, 5, 3, 23, 30, tzinfo=timezone(timedelta(hours=-5))), "2026-05-04T04:30:00Z"),
        (datetime(2024, 2, 29, 0, 0, tzinfo=UTC), "2024-02-29T00:00:00Z"),
    ],
    ids=["UTC", "sub-second dropped", "positive offset", "negative offset crossing midnight", "leap day"],
)
def test_timestamp(now: datetime, want: str) -> None:
    assert timestamp(now) == want


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        ([], False),
        ([CREATED, RUNNING], False),
        ([CREATED, cond("Succeeded", "True", "MPIJobSucceeded", "done")], True),
        ([CREATED, EVICTED], True),
        ([CREATED, flipped(EVICTED), flipped(RUNNING)], False),
        ([CREATED, cond("Succeeded", "False", "x", "y")], False),
        ([CREATED, cond("Succeeded", "Unknown", "x", "y")], False),
    ],
    ids=["none", "running", "succeeded", "failed", "failed false", "succeeded false", "succeeded unknown"],
)
def test_finished(conditions: list[WireCondition], want: bool) -> None:
    assert has_finished(JobStatus.model_validate({"conditions": conditions})) is want


@pytest.mark.parametrize(
    ("status", "want"),
    [
        ({}, []),
        (
            {"conditions": [CREATED, {"type": "Running", "status": "False"}]},
            [CREATED, {"type": "Running", "status": "False"}],
        ),
    ],
    ids=["no conditions", "wire shape kept, empty fields omitted"],
)
def test_conditions_from(status: dict[str, Any], want: list[WireCondition]) -> None:
    assert conditions_from(JobStatus.model_validate(status)) == want
