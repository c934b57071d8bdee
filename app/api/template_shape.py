"""Shape checks of a replica's pod template, so hostile input becomes an ``Invalid`` condition, not a crash.

The CRD's schema already rejects these shapes, but the hook must not trust its caller: the child
builders read ``metadata.labels``, ``spec.containers[0].env`` and friends, and would raise on a string
where a list belongs. Checked here, before anything is built: the JSON type of every field a builder
reads, every integer within int64 (what the apiserver stores and the encoder writes) and the nesting
depth. The walk is iterative, so depth costs no recursion.
"""

from __future__ import annotations

from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# A Kubernetes pod template nests about 15 levels deep; anything far deeper is not a pod template.
MAX_TEMPLATE_DEPTH = 64

_LISTS_OF_OBJECTS = ("containers", "initContainers", "ephemeralContainers", "volumes")
_CONTAINER_LISTS_OF_OBJECTS = ("env", "volumeMounts")
_CONTAINER_LISTS_OF_STRINGS = ("command", "args")


def template_problems(template: Any, path: str) -> list[tuple[str, str]]:
    """``(field path, what is wrong)`` for each problem; empty when the builders can use the template."""
    if not isinstance(template, dict):
        return [(path, "must be an object")]
    problems = _bounded(template, path)
    if problems:
        return problems  # types below may be anything at all: report the size problem alone
    problems += _metadata_problems(template.get("metadata"), f"{path}.metadata")
    spec = template.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return [*problems, (f"{path}.spec", "must be an object")]
    return problems + _spec_problems(spec or {}, f"{path}.spec")


def _bounded(value: Any, path: str) -> list[tuple[str, str]]:
    """Every integer within int64 and the nesting at most ``MAX_TEMPLATE_DEPTH``; first problem only."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_TEMPLATE_DEPTH:
            return [(path, f"must not nest deeper than {MAX_TEMPLATE_DEPTH} levels")]
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            return [(path, "every integer must fit in 64 bits")]
    return []


def _metadata_problems(metadata: Any, path: str) -> list[tuple[str, str]]:
    if metadata is None:
        return []
    if not isinstance(metadata, dict):
        return [(path, "must be an object")]
    return [
        (f"{path}.{key}", "must be a map of strings to strings")
        for key in ("labels", "annotations")
        if not _string_map(metadata.get(key))
    ]


def _spec_problems(spec: dict[str, Any], path: str) -> list[tuple[str, str]]:
    problems = [
        (f"{path}.{key}", "must be a list of objects")
        for key in _LISTS_OF_OBJECTS
        if not _list_of(spec.get(key), dict)
    ]
    for key in ("dnsConfig", "overhead", "resources"):
        if spec.get(key) is not None and not isinstance(spec[key], dict):
            problems.append((f"{path}.{key}", "must be an object"))
    dns = spec.get("dnsConfig")
    if isinstance(dns, dict) and not _list_of(dns.get("searches"), str):
        problems.append((f"{path}.dnsConfig.searches", "must be a list of strings"))
    containers = spec.get("containers")
    if isinstance(containers, list) and containers and isinstance(containers[0], dict):
        problems += _container_problems(containers[0], f"{path}.containers[0]")
    return problems


def _container_problems(container: dict[str, Any], path: str) -> list[tuple[str, str]]:
    problems = [
        (f"{path}.{key}", "must be a list of objects")
        for key in _CONTAINER_LISTS_OF_OBJECTS
        if not _list_of(container.get(key), dict)
    ]
    problems += [
        (f"{path}.{key}", "must be a list of strings")
        for key in _CONTAINER_LISTS_OF_STRINGS
        if not _list_of(container.get(key), str)
    ]
    resources = container.get("resources")
    if resources is not None and not isinstance(resources, dict):
        problems.append((f"{path}.resources", "must be an object"))
    return problems


def _list_of(value: Any, kind: type) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, kind) for v in value))


def _string_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
