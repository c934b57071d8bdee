"""The advisory conditions: GangSchedulingUnavailable, then the lint Warning (``intents.NOTICES``).

They come first in the list and never describe the stage. Each is a notice (``Write.NOTICE``): a new
message replaces the old one while the transition time stays; it is removed once its cause is gone.
"""

from __future__ import annotations

from app.api.types import ConditionType
from app.core.intents import ConditionIntent, RemoveCondition, SetCondition, Write
from app.core.reasons import REASON_LINT, REASON_PODGROUP_NOT_DECLARED
from app.kube.gang import GangScheduler


def notices(
    finished_before: bool, undeclared: GangScheduler | None, warning: str | None
) -> tuple[ConditionIntent, ...]:
    """``undeclared``: the configured gang scheduler whose PodGroup child is not declared; ``warning``: the
    lint Warning's message."""
    gang: tuple[ConditionIntent, ...] = (RemoveCondition(ConditionType.GANG_SCHEDULING_UNAVAILABLE),)
    if undeclared is not None:
        # A finished job gets no new notice (and loses an old one once the overlay is applied).
        gang = () if finished_before else (_gang_unavailable(undeclared),)
    if warning is None:
        return (*gang, RemoveCondition(ConditionType.WARNING))
    lint = SetCondition(ConditionType.WARNING, "True", REASON_LINT, warning, Write.NOTICE, "Warning")
    return (*gang, lint)


def _gang_unavailable(scheduler: GangScheduler) -> SetCondition:
    message = (
        f"MPI_OPERATOR_GANG_SCHEDULING is {scheduler.scheduler_name!r} but the CompositeController does not"
        f" declare the PodGroup child ({scheduler.api_version} {' and '.join(scheduler.resources)});"
        f" apply {scheduler.overlay}/."
        " The job runs without gang scheduling."
    )
    kind = ConditionType.GANG_SCHEDULING_UNAVAILABLE
    return SetCondition(kind, "True", REASON_PODGROUP_NOT_DECLARED, message, Write.NOTICE, "Warning")
