"""The customize hook: ask Metacontroller for the launcher Job's Pods (grandchildren we can't see).

With them ``/sync`` counts Running launcher Pods and explains launcher failures as upstream does. When
the CompositeController declares the PodGroup child of a gang scheduler (``app.kube.gang``), it also asks
for every PriorityClass: their values rank the replicas in the PodGroup's minResources, as upstream's
PriorityClass lister does. The request is decoded and checked by the wire layer (``app.kube.request``).
"""

from __future__ import annotations

from typing import Any

from app.kube import names
from app.kube.request import decode_customize_request

PRIORITY_CLASSES = {"apiVersion": "scheduling.k8s.io/v1", "resource": "priorityclasses"}


def customize(body: bytes) -> dict[str, Any]:
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
    return {"relatedResources": rules}
