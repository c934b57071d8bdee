"""The install's settings a sync depends on, as upstream's command-line flags."""

from __future__ import annotations

from dataclasses import dataclass

from app.kube.gang import GangScheduler


@dataclass(frozen=True, slots=True)
class SyncConfig:
    """Hashable: a parent's verdict is remembered per parent bytes and ``SyncConfig``."""

    # ``--cluster-domain``: the suffix of the host names in the hostfile and discover_hosts.sh.
    cluster_domain: str = ""
    # ``--gang-scheduling``: the configured gang scheduler, if any.
    gang: GangScheduler | None = None
    # Metacontroller applies with dynamic-apply, so each child must fit its 256 KiB last-applied
    # annotation (``app.api.limits``); False under server-side apply.
    annotation_budget: bool = True
    # Ours: the order labels, coarsest first, of a job that asks for ``hostfile-order: topology``
    # without its own list (``MPI_OPERATOR_HOSTFILE_ORDER_LABELS``).
    hostfile_order_labels: tuple[str, ...] = ()
