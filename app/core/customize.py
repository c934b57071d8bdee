"""The customize hook: ask Metacontroller for the launcher Job's Pods (grandchildren we can't see).

With them ``/sync`` counts Running launcher Pods and explains launcher failures as upstream does.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.api.types import API_VERSION, KIND
from app.kube import names
from app.kube.request import RequestError


class _Meta(msgspec.Struct, frozen=True):
    name: str = ""
    namespace: str = ""


class _Parent(msgspec.Struct, frozen=True):
    apiVersion: str = ""
    kind: str = ""
    metadata: _Meta = _Meta()


class _CustomizeRequest(msgspec.Struct, frozen=True):
    parent: _Parent


_decoder = msgspec.json.Decoder(_CustomizeRequest)


def customize(body: bytes) -> dict[str, Any]:
    try:
        parent = _decoder.decode(body).parent
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        raise RequestError("not a Metacontroller customize request") from None
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
    return {"relatedResources": [related]}
