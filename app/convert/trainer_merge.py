"""What Trainer v2.3 makes of a runtime's pod template, given a TrainJob's ``trainer`` and ``runtimePatches``.

Only what a conversion onto an existing runtime needs: the patch is merged as Kubernetes' strategic merge
patch merges a PodTemplateSpec (maps and objects field by field; ``containers``, ``initContainers``,
``volumes``, ``imagePullSecrets`` and ``schedulingGates`` by name, ``volumeMounts`` by path; other lists
replaced), then ``trainer`` is applied as pkg/runtime/framework/plugins/jobset/builder.go and
pkg/runtime/core/trainingruntime.go apply it: image, command and args to the launcher's ``node`` container;
env and ``resourcesPerNode`` to it, and to the nodes' ``node`` container when the launcher is a node.
"""

from __future__ import annotations

import copy
from typing import Any

from app.convert import trainer

# A replicated job's Pods are PodTemplateSpecs: these lists merge by the key, the others are replaced.
_LIST_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "env": "name",
    "volumeMounts": "mountPath",
}
# ``retainKeys``: a patched volume replaces the runtime's volume of that name whole.
_REPLACED_ITEMS = {"volumes": "name"}


def merged(base: Any, patch: Any, key: str = "") -> Any:
    """``patch`` merged into ``base`` (neither is changed)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for name, value in patch.items():
            out[name] = merged(base[name], value, name) if name in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in {**_LIST_KEYS, **_REPLACED_ITEMS}:
        return _merged_list(base, patch, key)
    return copy.deepcopy(patch)


def _merged_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    field = _LIST_KEYS.get(key) or _REPLACED_ITEMS[key]
    out = [copy.deepcopy(item) for item in base]
    index = {item.get(field): i for i, item in enumerate(out) if isinstance(item, dict)}
    for item in patch:
        at = index.get(item.get(field)) if isinstance(item, dict) else None
        if at is None:
            out.append(copy.deepcopy(item))
        elif key in _REPLACED_ITEMS:
            out[at] = copy.deepcopy(item)
        else:
            out[at] = merged(out[at], item)
    return out


def trainer_applied(
    template: dict[str, Any], train: dict[str, Any], job_name: str, launcher_is_node: bool
) -> dict[str, Any]:
    """The pod template after Trainer applied the TrainJob's ``trainer`` to replicated job ``job_name``."""
    out = copy.deepcopy(template)
    containers = (out.get("spec") or {}).get("containers") or []
    for container in containers:
        if container.get("name") != trainer.MPI_CONTAINER:
            continue
        if job_name == trainer.LAUNCHER_JOB:
            container.update({k: copy.deepcopy(train[k]) for k in ("image", "command", "args") if k in train})
        if job_name == trainer.LAUNCHER_JOB or launcher_is_node:
            if "env" in train:
                container["env"] = merged(container.get("env") or [], train["env"], "env")
            if "resourcesPerNode" in train:
                container["resources"] = merged(container.get("resources") or {}, train["resourcesPerNode"])
    return out


def differences(wanted: Any, got: Any, path: str = "") -> list[str]:
    """The paths where ``got`` is not ``wanted`` (absent, empty and null count as the same)."""
    if isinstance(wanted, dict) and isinstance(got, dict):
        found: list[str] = []
        for name in sorted(set(wanted) | set(got)):
            where = f"{path}{name}" if name.startswith("[") else f"{path}.{name}"
            found += differences(wanted.get(name), got.get(name), where)
        return found
    if _named_items(wanted) and _named_items(got):
        return differences(_by_name(wanted), _by_name(got), path)
    if _empty(wanted) and _empty(got):
        return []
    return [] if wanted == got else [path.lstrip(".")]


def _named_items(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) and "name" in item for item in value)


def _by_name(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"[{item['name']}]": item for item in items}


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {}
