"""The advisory conditions: GangSchedulingUnavailable (its PodGroup child undeclared, or a topology key the
backend cannot honour), then the lint Warning (``intents.NOTICES``).

They come first in the list and never describe the stage. Each is a notice (``Write.NOTICE``): a new
message replaces the old one while the transition time stays; it is removed once its cause is gone.
"""

from __future__ import annotations

from app.api.types import ConditionType
from app.core.intents import ConditionIntent, RemoveCondition, SetCondition, Write
from app.core.policies.gang_scheduling import Gang
from app.core.reasons import REASON_LINT, REASON_PODGROUP_NOT_DECLARED, REASON_TOPOLOGY_REFUSED
from app.kube.gang import KUBERNETES, GangScheduler
from app.kube.names import GANG_TOPOLOGY_ANNOTATION


def notices(
    finished_before: bool, gang: Gang, configured: GangScheduler | None, warning: str | None
) -> tuple[ConditionIntent, ...]:
    """``gang``: what the gang policy decided (an undeclared PodGroup child, a refused topology key);
    ``configured``: the setting's scheduler; ``warning``: the lint Warning's message."""
    unavailable: SetCondition | None = None
    if gang.undeclared is not None:
        unavailable = _gang_unavailable(gang.undeclared)
    elif gang.refused_topology:
        unavailable = _topology_refused(gang.refused_topology, configured)
    notice: tuple[ConditionIntent, ...] = (RemoveCondition(ConditionType.GANG_SCHEDULING_UNAVAILABLE),)
    if unavailable is not None:
        # A finished job gets no new notice (and loses an old one once the overlay is applied).
        notice = () if finished_before else (unavailable,)
    if warning is None:
        return (*notice, RemoveCondition(ConditionType.WARNING))
    lint = SetCondition(ConditionType.WARNING, "True", REASON_LINT, warning, Write.NOTICE, "Warning")
    return (*notice, lint)


def _gang_unavailable(scheduler: GangScheduler) -> SetCondition:
    message = (
        f"MPI_OPERATOR_GANG_SCHEDULING is {scheduler.scheduler_name!r} but the CompositeController does not"
        f" declare the PodGroup child ({scheduler.api_version} {' and '.join(scheduler.resources)});"
        f" apply {scheduler.overlay}/."
        " The job runs without gang scheduling."
    )
    kind = ConditionType.GANG_SCHEDULING_UNAVAILABLE
    return SetCondition(kind, "True", REASON_PODGROUP_NOT_DECLARED, message, Write.NOTICE, "Warning")


def _topology_refused(key: str, configured: GangScheduler | None) -> SetCondition:
    setting = configured.scheduler_name if configured is not None else ""
    message = (
        f"metadata.annotations[{GANG_TOPOLOGY_ANNOTATION}] asks that the gang share one {key!r} node label"
        f" value, which only MPI_OPERATOR_GANG_SCHEDULING={KUBERNETES} (the Workload API) can place; it is"
        f" {setting!r}. The job runs without the topology constraint: remove the annotation or change the"
        " setting."
    )
    kind = ConditionType.GANG_SCHEDULING_UNAVAILABLE
    return SetCondition(kind, "True", REASON_TOPOLOGY_REFUSED, message, Write.NOTICE, "Warning")
