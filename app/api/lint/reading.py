"""What the lint rules read from a job: its replicas' containers and pod specs, as written (any shape)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api import field_path
from app.api.defaults import Job
from app.api.types import ReplicaType

LAUNCHER = field_path.replica_spec(ReplicaType.LAUNCHER)
WORKER = field_path.replica_spec(ReplicaType.WORKER)


def get(node: Any, *keys: str) -> Any:
    for key in keys:
        if type(node) is not dict and not isinstance(node, Mapping):  # a dict, nearly always: no ABC check
            return None
        node = node.get(key)
    return node


def containers(job: Job, kind: ReplicaType) -> list[dict[str, Any]]:
    replica = job.replica(kind)
    containers = get(replica.template if replica else None, "spec", "containers")
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def pod_spec(job: Job, kind: ReplicaType) -> Mapping[str, Any]:
    replica = job.replica(kind)
    pod = get(replica.template if replica else None, "spec")
    return pod if isinstance(pod, Mapping) else {}
