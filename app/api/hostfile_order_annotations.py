"""Ours: the hostfile order a job asks for, in two annotations (the glossary: docs/architecture.md).

``mpi-operator-hook/hostfile-order: topology`` asks for topology order: the hosts sorted by the labels of
the nodes they are bound to, so neighbouring ranks share a zone, block or rack; ``index`` (or no
annotation) keeps index order, upstream's. ``mpi-operator-hook/hostfile-order-labels`` names the order
labels, the node labels to sort by, coarsest first; without it the hook's setting applies
(``MPI_OPERATOR_HOSTFILE_ORDER_LABELS``). Read here, at the bottom layer, because validation refuses a
malformed value and every layer above reads the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from app.api.child_names import is_label_key

ORDER_ANNOTATION = "mpi-operator-hook/hostfile-order"
LABELS_ANNOTATION = "mpi-operator-hook/hostfile-order-labels"
# More levels than any network has (zone, block, sub-block, rack, host): a bound on each sync's work.
MAX_LABELS = 8
# The ConfigMap's ``hostfile-order`` table stops at this many bytes, so a ConfigMap of thousands of hosts
# keeps room for its hostfile (which always lists every host, in order); and the hostfile's first line is
# at most this long (the labels' keys at most 317 bytes each, a launcher Pod's name 253).
MAX_TABLE_BYTES = 16 * 1024
MAX_HEADER_BYTES = 128 + MAX_LABELS * 319 + 253


class HostfileOrderKind(StrEnum):
    INDEX = "index"
    TOPOLOGY = "topology"


def asks_topology_order(annotations: Mapping[str, str]) -> bool:
    """The job asks for its hostfile in topology order: an ordered job."""
    return annotations.get(ORDER_ANNOTATION, "").strip() == HostfileOrderKind.TOPOLOGY


def parse_labels(value: str) -> tuple[str, ...]:
    """Order labels: comma-separated node label keys, coarsest first; blanks dropped, a repeat kept once.
    ``ValueError`` (its message says what to write) unless each is a label key, at most ``MAX_LABELS``."""
    labels = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if len(labels) > MAX_LABELS:
        raise ValueError(f"at most {MAX_LABELS} node label keys, coarsest first")
    bad = [label for label in labels if not is_label_key(label)]
    if bad:
        raise ValueError(
            f"{bad[0]!r} is not a node label key: write comma-separated keys such as"
            " 'topology.kubernetes.io/zone, example.com/rack', coarsest first"
        )
    return labels


def order_labels(annotations: Mapping[str, str], default: tuple[str, ...]) -> tuple[str, ...] | None:
    """The order labels of a job in topology order (``default``: the hook's setting), or None when the job
    keeps index order. Call only for a valid job (``problems`` found nothing)."""
    if not asks_topology_order(annotations):
        return None
    own = annotations.get(LABELS_ANNOTATION, "")
    return parse_labels(own) if own.strip() else default


def problems(annotations: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """What is wrong with the two annotations: ``(annotation, value, what to write)`` each."""
    found = []
    order = annotations.get(ORDER_ANNOTATION)
    if order is not None and order.strip() not in tuple(HostfileOrderKind):
        found.append((ORDER_ANNOTATION, order, "must be 'topology' (sorted by node labels) or 'index'"))
    labels = annotations.get(LABELS_ANNOTATION)
    if labels is not None:
        try:
            parse_labels(labels)
        except ValueError as err:
            found.append((LABELS_ANNOTATION, labels, str(err)))
    return found
