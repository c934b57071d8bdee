"""The advisory conditions: GangSchedulingUnavailable (its PodGroup child undeclared, or a topology key the
backend cannot honour), GangScheduled=False (the scheduler holds the gang), then the lint Warning
(``intents.NOTICES``).

They come first in the list and never describe the stage. Each is a notice (``Write.NOTICE``): a new
message replaces the old one while the transition time stays; it is removed once its cause is gone.
"""

from __future__ import annotations

from app.api.types import ConditionType
from app.core.intents import ConditionIntent, RemoveCondition, SetCondition, Write
from app.core.messages import one_line, truncate
from app.core.observed import GangWait
from app.core.policies.gang_scheduling import Gang
from app.core.reasons import REASON_LINT, REASON_PODGROUP_NOT_DECLARED, REASON_TOPOLOGY_REFUSED
from app.kube.gang import (
    KUBERNETES,
    WORKLOAD_API_OVERLAYS,
    WORKLOAD_API_RELEASES,
    WORKLOAD_API_VERSIONS,
    GangScheduler,
)
from app.kube.names import GANG_TOPOLOGY_ANNOTATION


def notices(
    finished_before: bool, gang: Gang, configured: GangScheduler | None, warning: str | None, group: str
) -> tuple[ConditionIntent, ...]:
    """``gang``: what the gang policy decided (an undeclared PodGroup child, a refused topology key, a gang
    the scheduler holds); ``configured``: the setting's scheduler; ``warning``: the lint Warning's message;
    ``group``: the PodGroup's name."""
    unavailable: SetCondition | None = None
    if gang.undeclared is not None:
        unavailable = _gang_unavailable(gang.undeclared)
    elif gang.refused_topology:
        unavailable = _topology_refused(gang.refused_topology, configured)
    notice: tuple[ConditionIntent, ...] = (RemoveCondition(ConditionType.GANG_SCHEDULING_UNAVAILABLE),)
    if unavailable is not None:
        # A finished job gets no new notice (and loses an old one once the overlay is applied).
        notice = () if finished_before else (unavailable,)
    notice = (*notice, _gang_waits(gang, group))
    if warning is None:
        return (*notice, RemoveCondition(ConditionType.WARNING))
    lint = SetCondition(ConditionType.WARNING, "True", REASON_LINT, warning, Write.NOTICE, "Warning")
    return (*notice, lint)


def _gang_unavailable(scheduler: GangScheduler) -> SetCondition:
    message = (
        f"MPI_OPERATOR_GANG_SCHEDULING is {scheduler.scheduler_name!r} but the CompositeController does not"
        f" declare the PodGroup child ({_children(scheduler)}); apply {_overlays(scheduler)}."
        " The job runs without gang scheduling."
    )
    kind = ConditionType.GANG_SCHEDULING_UNAVAILABLE
    return SetCondition(kind, "True", REASON_PODGROUP_NOT_DECLARED, message, Write.NOTICE, "Warning")


def _children(scheduler: GangScheduler) -> str:
    """``scheduling.k8s.io/v1beta1 (Kubernetes 1.37) or v1alpha2 (1.36) workloads and podgroups``."""
    resources = " and ".join(scheduler.resources)
    if not scheduler.kubernetes:
        return f"{scheduler.api_version} {resources}"
    newest, *older = WORKLOAD_API_VERSIONS
    versions = " or ".join(
        [f"{newest} (Kubernetes {WORKLOAD_API_RELEASES[newest]})"]
        + [f"{v.split('/')[1]} ({WORKLOAD_API_RELEASES[v]})" for v in older]
    )
    return f"{versions} {resources}"


def _overlays(scheduler: GangScheduler) -> str:
    """The overlay to apply; for the Workload API, the one for each release (the doctor says which)."""
    if not scheduler.kubernetes:
        return f"{scheduler.overlay}/"
    return " or ".join(f"{WORKLOAD_API_OVERLAYS[v]}/" for v in WORKLOAD_API_VERSIONS)


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


def _gang_waits(gang: Gang, group: str) -> ConditionIntent:
    """GangScheduled=False with the scheduler's reason and message while it holds the gang; not an Event:
    the scheduler posts its own, and a gang waiting for another to finish is normal under contention."""
    if gang.waiting is None or gang.scheduler is None:
        return RemoveCondition(ConditionType.GANG_SCHEDULED)
    waiting = gang.waiting
    message = (
        f"PodGroup {group} ({gang.scheduler.api_version}) {_says(waiting)}. No Pod of the gang starts until"
        " all of them fit at once."
    )
    reason = one_line(waiting.reason)
    return SetCondition(ConditionType.GANG_SCHEDULED, "False", reason, truncate(message), Write.NOTICE)


def _says(waiting: GangWait) -> str:
    said = one_line(waiting.message).rstrip(" .")
    if waiting.unplaced:  # scheduler-plugins: its phase, and the first Pod it could not place says why
        workers = "worker" if waiting.unplaced == 1 else "workers"
        why = f"({said})" if said else "(kubectl describe pod says why)"
        placed = f"the scheduler could not place {waiting.unplaced} of the job's {workers}"
        return f"is {waiting.phase}: {placed} {why}"
    where = f"is {waiting.phase}" if waiting.phase else "is not scheduled"
    if waiting.queue:
        where += f" in queue {waiting.queue}"
    return f"{where}: {said}" if said else where
