"""The shapes the checks read, checked once where objects come in (``gather`` from the API server, a
``--load``ed file), so the checks can trust them: a hostile answer becomes one message naming the object and
the field (``pods[3].status.conditions[0].type is not a string``), never an error inside a check.

A shape lists only the fields something reads; anything else may be anything. A field that is absent or
``null`` is fine unless ``Required`` (the checks read ``x.get(k) or {}``); a list's items are required.
Pods, the launcher Job and PodGroups are also decoded as the hook decodes them (``app.kube.request``),
which is how the doctor classifies them.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from app.cluster.untrusted import Hostile
from app.kube.request import ObservedLauncherJob, ObservedPod, ObservedPodGroup


class Required:
    """A field that must be present and not null."""

    def __init__(self, shape: object) -> None:
        self.shape = shape


class MapOf:
    """An object whose every value has one shape (labels, annotations, a ConfigMap's data)."""

    def __init__(self, shape: object) -> None:
        self.shape = shape


STRINGS = MapOf(str)
METADATA = {"name": Required(str), "labels": STRINGS, "annotations": STRINGS}
CONDITION = {"type": str, "status": str, "reason": str}
_STATE = {"waiting": {"reason": str}, "running": {}, "terminated": {}}
_CONTAINER_STATUS = {"name": str, "state": _STATE, "lastState": _STATE, "restartCount": int}
_CONTAINER = {
    "name": str,
    "restartPolicy": str,
    "resources": {"requests": MapOf(object), "limits": MapOf(object)},
}
POD = {
    "metadata": Required(METADATA),
    "spec": {
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "schedulingGates": [{"name": str}],
    },
    "status": {
        "phase": str,
        "conditions": [CONDITION],
        "containerStatuses": [_CONTAINER_STATUS],
        "initContainerStatuses": [_CONTAINER_STATUS],
    },
}
MPIJOB = {
    "metadata": Required(METADATA),
    "spec": {"runPolicy": {"suspend": object, "managedBy": object}},
    "status": {"conditions": [CONDITION]},
}
OBJECT = {"metadata": Required(METADATA), "spec": {}, "status": {"conditions": [CONDITION]}}
CONFIGMAP = {"metadata": Required(METADATA), "data": STRINGS}
_CHILD_RESOURCES = [{"apiVersion": str, "resource": str}]
# A CompositeController: only its children are read; an API group version's discovery, its resources' names.
CONTROLLER = {"metadata": Required(METADATA), "spec": {"childResources": _CHILD_RESOURCES}}
API_RESOURCES = {"resources": [{"name": str}]}
# Events are listed in a namespace, and only the job's own are kept: those must name what they are about.
EVENT = {"metadata": METADATA, "involvedObject": {"name": str}, "type": str, "reason": str, "count": int}
# A file written by ``mpijob doctor --save`` (``snapshot.Snapshot``).
SNAPSHOT = {
    "namespace": Required(str),
    "name": Required(str),
    "now": Required(str),
    "served": bool,
    "job": MPIJOB,
    "launcher": OBJECT,
    "pods": [POD],
    "service": OBJECT,
    "secret": OBJECT,
    "config": CONFIGMAP,
    "podgroups": [OBJECT],
    "workloads": [OBJECT],
    "events": [EVENT],
    "logs": MapOf(str),
    "workload_apis": MapOf([str]),
    "controller_children": [{"apiVersion": Required(str), "resource": Required(str)}],
    "controller_unreadable": str,
}


def check(value: Any, shape: object, where: str, path: str = "") -> None:
    """``Hostile`` naming ``where`` and the path of the first field not of its shape."""
    if value is None:
        if isinstance(shape, Required):
            raise Hostile(f"{where}: {path or 'the top level'} is missing or null")
        return
    if isinstance(shape, Required):
        check(value, shape.shape, where, path)
    elif isinstance(shape, dict):
        _object(value, where, path)
        for key, inner in shape.items():
            check(value.get(key), inner, where, _join(path, key))
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise Hostile(f"{where}: {path or 'the top level'} is not a list")
        for index, item in enumerate(value):
            check(item, Required(shape[0]), where, f"{path}[{index}]")
    elif isinstance(shape, MapOf):
        _object(value, where, path)
        for key, item in value.items():
            check(item, shape.shape, where, _join(path, key))
    elif shape is int and (not isinstance(value, int) or isinstance(value, bool)):
        raise Hostile(f"{where}: {path} is not an integer")
    elif shape is str and not isinstance(value, str):
        raise Hostile(f"{where}: {path} is not a string")
    elif shape is bool and not isinstance(value, bool):
        raise Hostile(f"{where}: {path} is not true or false")


def _object(value: Any, where: str, path: str) -> None:
    if not isinstance(value, dict):
        raise Hostile(f"{where}: {path or 'the top level'} is not an object")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def as_the_hook_reads(
    obj: dict[str, Any], kind: type[ObservedPod | ObservedLauncherJob | ObservedPodGroup], where: str
) -> None:
    """``Hostile`` if the hook's own decoder (``app.kube.request``) would refuse ``obj``."""
    try:
        msgspec.json.decode(orjson.dumps(obj), type=kind)
    except (msgspec.ValidationError, TypeError) as err:
        # msgspec names the field (``... - at `$.status.phase```): that much of its message, no value.
        at = str(err).rpartition(" - at ")[2] if " - at " in str(err) else "a field"
        raise Hostile(f"{where}: {at} is not of the shape a Kubernetes object has") from None


def snapshot(data: Any, where: str) -> None:
    """``Hostile`` unless ``data`` has the shape of what ``--save`` writes, its Pods and launcher Job as the
    hook reads them."""
    check(data, Required(SNAPSHOT), where)
    for index, pod in enumerate(data.get("pods") or []):
        as_the_hook_reads(pod, ObservedPod, f"{where}: pods[{index}]")
    if data.get("launcher") is not None:
        as_the_hook_reads(data["launcher"], ObservedLauncherJob, f"{where}: launcher")
    for index, group in enumerate(data.get("podgroups") or []):
        as_the_hook_reads(group, ObservedPodGroup, f"{where}: podgroups[{index}]")
