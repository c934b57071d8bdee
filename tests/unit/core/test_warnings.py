"""The lint ``Warning`` condition in status: first in the list (never kubectl's STATE), advisory only.

The lifecycle scenarios (``test_lifecycle``: scale-up-and-down, lint-warning) show it appear, follow the
findings and go away; here are the rules of its placement and bookkeeping, and an invariant over every
golden status.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from app.api.defaults import with_defaults
from app.api.types import JobStatus, MPIJob
from app.core.intents import Event
from app.core.lint_warning import lint_message
from app.core.notices import notices
from app.core.policies.gang_scheduling import Gang
from app.core.reasons import REASON_LINT
from app.core.status import WireCondition, write_conditions
from tests.support import golden_store
from tests.support.builders import JOB_UID, mpijob, sync_request
from tests.support.golden_cases import run
from tests.unit.api.test_lint import CASES

T0 = datetime(2026, 5, 4, 9, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 5, 4, 9, 0, 10, tzinfo=UTC)
CREATED = {"type": "Created", "status": "True", "reason": "MPIJobCreated"}


def previous(*conditions: dict[str, Any]) -> JobStatus:
    return JobStatus.model_validate({"conditions": list(conditions)})


WARNING = "Warning"


def message_for(job: dict[str, Any]) -> str | None:
    """The Warning's message for ``job`` as the hook computes it: parsed, defaulted, then linted."""
    parsed = MPIJob.model_validate(job)
    return lint_message(parsed, job, with_defaults(parsed))


def place_warning(
    stored: JobStatus, message: str | None, now: datetime
) -> tuple[list[WireCondition], tuple[Event, ...]]:
    """The stored conditions after the lint Warning's intent, as a sync writes them."""
    return write_conditions(stored, notices(False, Gang(), None, message, "pi"), now)


def stored_warning(message: str) -> dict[str, str]:
    stamp = "2026-05-04T09:00:00Z"
    return {"type": WARNING, "status": "True", "reason": REASON_LINT, "message": message,
            "lastUpdateTime": stamp, "lastTransitionTime": stamp}  # fmt: skip


def test_the_warning_goes_first_and_announces_itself() -> None:
    conditions, events = place_warning(previous(CREATED), "m1", T0)
    assert [c["type"] for c in conditions] == [WARNING, "Created"]
    assert conditions[0]["lastTransitionTime"] == "2026-05-04T09:00:00Z"
    assert [(e.type, e.reason) for e in events] == [("Warning", REASON_LINT)]


def test_an_unchanged_warning_is_byte_for_byte_the_stored_one() -> None:
    stored = stored_warning("m1")
    assert place_warning(previous(stored, CREATED), "m1", T1) == ([stored, CREATED], ())


def test_a_new_message_keeps_the_transition_time() -> None:
    stored = stored_warning("m1")
    conditions, _ = place_warning(previous(CREATED, stored), "m2", T1)
    warning = conditions[0]
    assert (warning["message"], warning["lastUpdateTime"], warning["lastTransitionTime"]) == (
        "m2",
        "2026-05-04T09:00:10Z",
        "2026-05-04T09:00:00Z",
    )


def test_no_finding_no_condition() -> None:
    stored = {"type": WARNING, "status": "True", "reason": REASON_LINT, "message": "m1"}
    assert place_warning(previous(stored, CREATED), None, T1) == ([CREATED], ())


def test_the_message_lists_warnings_not_infos() -> None:

    tripped = CASES["np-mismatch"][0]()
    message = message_for(tripped)
    assert message is not None and message.startswith("mpijob lint: 1 finding: [np-mismatch] ")
    no_command = mpijob("pi").build()
    no_command["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0].pop("command")
    no_command["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0].pop("args")
    assert message_for(no_command) is None  # launcher-command is info


def _statuses() -> list[dict[str, Any]]:
    found = [golden_store.load(p)["status"] for p in golden_store.stored("response.json")]
    for steps in golden_store.stored("steps.yaml"):
        found += [s["status"] for s in golden_store.load(steps) or [] if "status" in s]
    return found


def test_state_is_never_the_warning_in_any_golden_status() -> None:
    statuses = [s for s in _statuses() if s.get("conditions")]
    with_warning = [s for s in statuses if any(c["type"] == WARNING for c in s["conditions"])]
    assert with_warning, "some golden status shows a Warning"
    for status in statuses:
        assert status["conditions"][-1]["type"] != WARNING
        assert all(c["type"] != WARNING for c in status["conditions"][1:])


def test_a_lint_failure_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core import lint_warning

    def broken(*_: Any, **__: Any) -> list[Any]:
        raise KeyError("bug")

    monkeypatch.setattr(lint_warning, "lint", broken)
    job = mpijob("pi").build()
    assert message_for(job) == ("mpijob lint could not check this job (KeyError); please report it")


def test_an_ordered_open_mpi_job_with_a_mapping_of_its_own_is_warned_in_status() -> None:
    """The hook's own sync reports ``hostfile-order-not-followed`` in the Warning, as ``mpijob lint`` does."""
    tripped = CASES["hostfile-order-not-followed"][0]()
    message = message_for(tripped)
    assert message is not None and message.startswith(
        "mpijob lint: 1 finding: [hostfile-order-not-followed] "
    )
    tripped["metadata"].update(namespace="default", uid=JOB_UID, generation=1)
    [warning] = [c for c in run(sync_request(tripped))["status"]["conditions"] if c["type"] == WARNING]
    assert warning["message"] == message
    assert message_for(CASES["hostfile-order-not-followed"][1]()) is None
