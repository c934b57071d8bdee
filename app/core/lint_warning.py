"""The ``Warning`` condition: what ``mpijob lint`` says about a running job, shown by ``kubectl describe``.

Non-terminal and advisory: it changes nothing the job does. It is a notice (``intents.NOTICES``), so it is
the *first* condition and STATE stays the job's stage. It appears with the first finding, keeps its
``lastTransitionTime`` while findings remain (the message and ``lastUpdateTime`` follow the findings), and
is removed once they are fixed.
Only what the hook can see counts: fields the CRD pruned are gone before the hook sees the job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api.defaults import Job
from app.api.lint import Severity, lint
from app.api.types import ConditionType, JobStatus, MPIJob
from app.core.messages import truncate


def lint_message(parsed: MPIJob, raw: Mapping[str, Any] | None, validated: Job) -> str | None:
    """One message for every warning-or-worse finding on a job the hook's validation passed (``validated``:
    that job, defaulted), or None."""
    try:
        findings = [f for f in lint(parsed, raw, validated=validated) if f.severity is not Severity.INFO]
    except Exception as err:  # advisory: a lint bug must never stop a job from syncing, but must show
        return f"mpijob lint could not check this job ({type(err).__name__}); please report it"
    if not findings:
        return None
    parts = "; ".join(f"[{f.rule}] {f.path}: {f.message} (fix: {f.fix})" for f in findings)
    return truncate(f"mpijob lint: {len(findings)} finding{'s' if len(findings) > 1 else ''}: {parts}")


def without_warning(status: JobStatus) -> JobStatus:
    """The stored status minus our condition, so the lifecycle logic never sees it."""
    return status.model_copy(
        update={"conditions": [c for c in status.conditions if c.type != ConditionType.WARNING]}
    )
