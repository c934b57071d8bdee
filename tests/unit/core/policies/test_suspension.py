"""``suspension.decide``: upstream's ``isMPIJobSuspended`` and its Suspended condition on resume."""

from __future__ import annotations

import pytest

from app.core.policies import suspension
from app.core.policies.suspension import Suspension
from tests.support.builders import mpijob
from tests.support.observed import condition, defaulted

CASES = {
    # id: (runPolicy.suspend, the stored Suspended condition or None, the decision)
    "never suspended": (False, None, Suspension(suspended=False)),
    "created suspended": (True, None, Suspension(suspended=True)),
    "still suspended": (True, condition("Suspended", "True", "MPIJobSuspended"), Suspension(suspended=True)),
    # Upstream: suspend false while Suspended=True -> Suspended=False/MPIJobResumed and startTime reset.
    "resumed by this sync": (
        False,
        condition("Suspended", "True", "MPIJobSuspended"),
        Suspension(suspended=False, resumed=True, resuming=True),
    ),
    "resumed earlier: the condition already says so": (
        False,
        condition("Suspended", "False", "MPIJobResumed"),
        Suspension(suspended=False, resumed=True, resuming=False),
    ),
    "Suspended=False with another reason is written again": (
        False,
        condition("Suspended", "False", "SomethingElse"),
        Suspension(suspended=False, resumed=True, resuming=True),
    ),
    "suspended again after a resume": (
        True,
        condition("Suspended", "False", "MPIJobResumed"),
        Suspension(suspended=True),
    ),
}


@pytest.mark.parametrize(("suspend", "stored", "want"), CASES.values(), ids=CASES.keys())
def test_suspension(suspend: bool, stored: dict[str, str] | None, want: Suspension) -> None:
    builder = mpijob().suspend(suspend)
    if stored is not None:
        builder.status({"conditions": [condition("Created", "True", "MPIJobCreated"), stored]})
    assert suspension.decide(defaulted(builder)) == want
