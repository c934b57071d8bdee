"""``mpijob render --nodes FILE``: the Nodes and Pods of ``kubectl get nodes,pods -o yaml`` (a ``List``, or
a stream of the same objects), read as the hook reads them in a sync request.

Each object is checked by the request's own types (``app.kube.request``), so what the render observes is
what the hook would: a Node's labels, a Pod's node, labels, phase and creation time. Worker Pods are found
by name, launcher Pods by the labels the hook finds them by; nothing here orders anything (the hook's plan
does, in ``app.core.policies.hostfile_order``). The order of the file's objects changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from app.cli.yamlio import read_text, source_name
from app.kube import names
from app.kube.request import ObservedNode, ObservedPod
from app.kube.yamltext import Document, InputError, iter_documents

# What the file should hold, for every message that says it does not.
_EXPECTED = "give what `kubectl get nodes,pods -o yaml` prints"
# YAML dates (an unquoted creationTimestamp) become JSON strings as the API server writes them.
_JSON = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


@dataclass(frozen=True, slots=True)
class _Object:
    """One Node or Pod of the file: as a request carries it (JSON), and as the hook decodes it."""

    data: dict[str, Any]
    pod: ObservedPod | None = None


@dataclass(frozen=True, slots=True)
class Cluster:
    source: str
    # Node name -> the Node, as the file has it.
    nodes: dict[str, dict[str, Any]]
    # (namespace, name) -> the Pod ("" for a Pod that names no namespace).
    pods: dict[tuple[str, str], _Object]

    def node_of(self, namespace: str, pod: str) -> str:
        """The node the file binds this Pod to ("" when it is not there or not bound)."""
        found = self.pods.get((namespace, pod)) or self.pods.get(("", pod))
        return found.pod.spec.nodeName if found is not None and found.pod is not None else ""

    def launcher_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        """The job's launcher Pods, by the labels the hook finds them by."""
        found = []
        for (pod_namespace, _), obj in sorted(self.pods.items()):
            labels = obj.pod.metadata.labels if obj.pod is not None else {}
            ours = (
                labels.get(names.JOB_NAME_LABEL) == job and labels.get(names.JOB_ROLE_LABEL) == names.LAUNCHER
            )
            if ours and pod_namespace in ("", namespace):
                found.append(obj.data)
        return found


def read_cluster(path: str) -> Cluster:
    """The Nodes and Pods of ``path`` (``-``: standard input); ``InputError`` for anything else."""
    source = source_name(path)
    nodes: dict[str, dict[str, Any]] = {}
    pods: dict[tuple[str, str], _Object] = {}
    for doc in iter_documents(read_text(path), source):
        kind, name, obj = _checked(doc)
        if kind == "Node":
            nodes[name] = obj.data
        else:
            assert obj.pod is not None
            pods[obj.pod.metadata.namespace, name] = obj
    if not nodes:
        raise InputError(f"{source}: no Node in it: {_EXPECTED}")
    return Cluster(source, nodes, pods)


def _checked(doc: Document) -> tuple[str, str, _Object]:
    data = doc.data
    where = f"{doc.source}: document {doc.index + 1}"
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in ("Node", "Pod"):
        what = (kind or "object without kind") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"{where} ({str(what)[:60]}) is neither a Node nor a Pod: {_EXPECTED}")
    assert isinstance(data, dict)
    line = doc.line_of("")
    where = f"{doc.source}:{line}" if line else where
    try:
        body = orjson.dumps(data, option=_JSON)
        decoded = msgspec.json.decode(body, type=ObservedPod if kind == "Pod" else ObservedNode)
    except (TypeError, orjson.JSONEncodeError, msgspec.ValidationError) as err:
        raise InputError(f"{where}: not a {kind}: {str(err)[:200]}") from None
    if not decoded.metadata.name:
        raise InputError(f"{where}: a {kind} without metadata.name: {_EXPECTED}")
    pod = decoded if isinstance(decoded, ObservedPod) else None
    return kind, decoded.metadata.name, _Object(orjson.loads(body), pod)
