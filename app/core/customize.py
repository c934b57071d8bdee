"""The customize hook: ask Metacontroller for the launcher Job's Pods (grandchildren we can't see).

With them ``/sync`` counts Running launcher Pods and explains launcher failures as upstream does. When
the CompositeController declares the PodGroup child of a gang scheduler (``app.kube.gang``), it also asks
for every PriorityClass: their values rank the replicas in the PodGroup's minResources, as upstream's
PriorityClass lister does.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.api.types import API_VERSION, KIND
from app.kube import names
from app.kube.gang import declares_a_podgroup
from app.kube.request import Controller, RequestError

PRIORITY_CLASSES = {"apiVersion": "scheduling.k8s.io/v1", "resource": "priorityclasses"}


class _Meta(msgspec.Struct, frozen=True):
    name: str = ""
    namespace: str = ""


class _Parent(msgspec.Struct, frozen=True):
    apiVersion: str = ""
    kind: str = ""
    metadata: _Meta = _Meta()


class _CustomizeRequest(msgspec.Struct, frozen=True):
    parent: _Parent
    controller: Controller = Controller()


_decoder = msgspec.json.Decoder(_CustomizeRequest)


def customize(body: bytes) -> dict[str, Any]:
    try:
        request = _decoder.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        raise RequestError("not a Metacontroller customize request") from None
    parent = request.parent
    if parent.kind != KIND or parent.apiVersion != API_VERSION:
        raise RequestError(f"parent must be a {KIND} of apiVersion {API_VERSION}")
    if not parent.metadata.name:
        raise RequestError("customize request has no parent name")
    selector = {
        names.JOB_NAME_LABEL: parent.metadata.name,
        names.JOB_ROLE_LABEL: names.LAUNCHER,
    }
    related: dict[str, Any] = {
        "apiVersion": "v1",
        "resource": "pods",
        "labelSelector": {"matchLabels": selector},
    }
    if parent.metadata.namespace:
        related["namespace"] = parent.metadata.namespace
    rules = [related]
    if declares_a_podgroup(request.controller):
        rules.append(dict(PRIORITY_CLASSES))  # no selector: all of them
    return {"relatedResources": rules}
