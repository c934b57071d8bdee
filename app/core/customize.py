"""The customize hook: ask Metacontroller for the launcher Job's Pods (grandchildren we can't see).

With them ``/sync`` counts Running launcher Pods and explains launcher failures as upstream does. When
the CompositeController declares the PodGroup child of a gang scheduler (``app.kube.gang``), it also asks
for every PriorityClass: their values rank the replicas in the PodGroup's minResources, as upstream's
PriorityClass lister does. An ordered job (``app.api.hostfile_order_annotations``: topology order)
asks for the Nodes too, bounded by a label selector. The request is decoded and checked by the wire layer
(``app.kube.request``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api.hostfile_order_annotations import order_labels
from app.core.config import SyncConfig
from app.kube import names
from app.kube.request import decode_customize_request

PRIORITY_CLASSES = {"apiVersion": "scheduling.k8s.io/v1", "resource": "priorityclasses"}
NODES = {"apiVersion": "v1", "resource": "nodes"}


def customize(
    body: bytes, config: SyncConfig, node_selector: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``node_selector``: ``MPI_OPERATOR_HOSTFILE_ORDER_NODE_SELECTOR`` as a labelSelector, if set."""
    request = decode_customize_request(body)
    parent = request.parent.metadata
    selector = {
        names.JOB_NAME_LABEL: parent.name,
        names.JOB_ROLE_LABEL: names.LAUNCHER,
    }
    related: dict[str, Any] = {
        "apiVersion": "v1",
        "resource": "pods",
        "labelSelector": {"matchLabels": selector},
    }
    if parent.namespace:
        related["namespace"] = parent.namespace
    rules = [related]
    if request.controller.declared_podgroups:
        rules.append(dict(PRIORITY_CLASSES))  # no selector: all of them
    try:
        labels = order_labels(parent.annotations, config.hostfile_order_labels)
    except ValueError:
        labels = None  # the sync calls the job invalid, and says why
    if labels:
        rules.append(node_rule(labels, node_selector))
    return {"relatedResources": rules}


def node_rule(labels: tuple[str, ...], node_selector: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Nodes an ordered job's sync is sent: those ``node_selector`` picks, else those with the job's
    coarsest order label (a node without it sorts after all that have it, as an unknown node does)."""
    selector = (
        dict(node_selector)
        if node_selector
        else {"matchExpressions": [{"key": labels[0], "operator": "Exists"}]}
    )
    return {**NODES, "labelSelector": selector}
