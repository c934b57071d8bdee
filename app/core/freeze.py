"""Keep every observed child exactly as it is: for jobs we must not change (invalid, external, deleting).

Metacontroller deletes any observed child left out of a response, so "change nothing" means returning
each one. Re-emitting the object we last applied (Metacontroller keeps it in an annotation) is a no-op
under its 3-way merge. Without that annotation (server-side apply) a stub of identity is returned,
which is a no-op for the ``OnDelete`` kinds and keeps the object for the others; the Workload API's
children (``Recreate``: any difference deletes them) get their stored spec back, which is immutable and so
exactly what was applied (a stub without it would be deleted and could not be created again).
"""

from __future__ import annotations

from typing import Any

import orjson

from app.kube import gang
from app.kube.names import CONTROLLER_UID_LABEL, LAST_APPLIED_ANNOTATION
from app.kube.request import Meta, ObservedImmutable, SyncRequest

_KINDS = (
    ("pods", "v1", "Pod"),
    ("launcher_jobs", "batch/v1", "Job"),
    ("services", "v1", "Service"),
    ("secrets", "v1", "Secret"),
    ("configmaps", "v1", "ConfigMap"),
    ("volcano_podgroups", gang.VOLCANO_API_VERSION, gang.KIND),
    ("scheduler_plugins_podgroups", gang.SCHEDULER_PLUGINS_API_VERSION, gang.KIND),
    ("workloads_v1beta1", gang.WORKLOAD_API_V1BETA1, gang.WORKLOAD_KIND),
    ("workload_podgroups_v1beta1", gang.WORKLOAD_API_V1BETA1, gang.KIND),
    ("workloads_v1alpha2", gang.WORKLOAD_API_V1ALPHA2, gang.WORKLOAD_KIND),
    ("workload_podgroups_v1alpha2", gang.WORKLOAD_API_V1ALPHA2, gang.KIND),
)


def frozen_children(request: SyncRequest) -> list[dict[str, Any]]:
    children = []
    for attribute, api_version, kind in _KINDS:
        for child in (getattr(request.children, attribute) or {}).values():
            stored = _as_last_applied(child.metadata, api_version, kind)
            if isinstance(child, ObservedImmutable) and child.spec is not None and "spec" not in stored:
                stored["spec"] = child.spec
            children.append(stored)
    return children


def _as_last_applied(meta: Meta, api_version: str, kind: str) -> dict[str, Any]:
    applied = meta.annotations.get(LAST_APPLIED_ANNOTATION)
    if applied:
        try:
            obj = orjson.loads(applied)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and obj.get("kind") == kind and obj.get("apiVersion") == api_version:
            # Metacontroller recorded its own ``controller-uid`` label here; it adds it again itself.
            labels = (obj.get("metadata") or {}).get("labels")
            if isinstance(labels, dict):
                labels.pop(CONTROLLER_UID_LABEL, None)
                if not labels:
                    del obj["metadata"]["labels"]
            return obj
    labels = {k: v for k, v in meta.labels.items() if k != CONTROLLER_UID_LABEL}
    metadata: dict[str, Any] = {"name": meta.name, "namespace": meta.namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}
