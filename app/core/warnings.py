"""The ``Warning`` condition: what ``mpijob lint`` says about a running job, shown by ``kubectl describe``.

Non-terminal and advisory: it changes nothing the job does. It is always the *first* condition, because
``kubectl get mpijob`` shows the type of the *last* one as STATE and that must stay the job's life stage
(Created, Running, Succeeded, ...). It appears with the first finding, keeps its ``lastTransitionTime`` while
findings remain (the message and ``lastUpdateTime`` follow the findings), and is removed once they are fixed.
Only what the hook can see counts: fields the CRD pruned are gone before the hook sees the job.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.api.lint import Severity, lint
from app.api.types import ConditionType, JobStatus, MPIJob
from app.core.status import Condition, Event, conditions_from, timestamp, truncate

WARNING = ConditionType.WARNING.value
REASON_LINT = "LintWarnings"


def lint_message(parsed: MPIJob, raw: Mapping[str, Any] | None) -> str | None:
    """One message for every warning-or-worse finding on a job the hook's validation passed, or None."""
    try:
        findings = [f for f in lint(parsed, raw, validated=True) if f.severity is not Severity.INFO]
    except Exception as err:  # advisory: a lint bug must never stop a job from syncing, but must show
        return f"mpijob lint could not check this job ({type(err).__name__}); please report it"
    if not findings:
        return None
    parts = "; ".join(f"[{f.rule}] {f.path}: {f.message} (fix: {f.fix})" for f in findings)
    return truncate(f"mpijob lint: {len(findings)} finding{'s' if len(findings) > 1 else ''}: {parts}")


def without_warning(status: JobStatus) -> JobStatus:
    """The stored status minus our condition, so the lifecycle logic never sees it."""
    return status.model_copy(update={"conditions": [c for c in status.conditions if c.type != WARNING]})


def place_warning(
    status: dict[str, Any], previous: JobStatus, message: str | None, now: datetime
) -> tuple[Event, ...]:
    """Put the Warning condition first in ``status`` (or leave it out); an Event when it appears/changes."""
    conditions: list[Condition] = [c for c in status.get("conditions") or [] if c["type"] != WARNING]
    before = next((c for c in conditions_from(previous) if c["type"] == WARNING), None)
    if message is None:
        status["conditions"] = conditions
        return ()
    if before is not None and before.get("status") == "True" and before.get("message") == message:
        status["conditions"] = [before, *conditions]
        return ()
    stamp = timestamp(now)
    kept = before.get("lastTransitionTime") if before is not None and before.get("status") == "True" else None
    condition = {
        "type": WARNING,
        "status": "True",
        "reason": REASON_LINT,
        "message": message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": kept or stamp,
    }
    status["conditions"] = [condition, *conditions]
    return (Event("Warning", REASON_LINT, message),)
