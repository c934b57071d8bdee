"""Shape checks of a replica's pod template, so hostile input becomes an ``Invalid`` condition, not a crash.

The CRD's schema already rejects these shapes, but the hook must not trust its caller: the child
builders read ``metadata.labels``, ``spec.containers[0].env`` and friends, and would raise on a string
where a list belongs. Checked here, before anything is built: the JSON type of every field a builder
reads, and every integer within int64 (what the apiserver stores and the encoder writes). Nesting needs
no check of its own: the parent's JSON parser refuses anything deeper than ~200 levels (a 400), well
inside what the encoder writes (254).

The integer check is the encoder itself (C speed): it fails past 64 bits, and only a run of 19 digits in
its output (uint64 range, or a digit run inside a string) costs a walk of the template in Python.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_LONG_DIGIT_RUN = re.compile(rb"\d{19}")

_LISTS_OF_OBJECTS = ("containers", "initContainers", "ephemeralContainers", "volumes")
_CONTAINER_LISTS_OF_OBJECTS = ("env", "volumeMounts")
_CONTAINER_LISTS_OF_STRINGS = ("command", "args")


def template_problems(template: Any, path: str) -> list[tuple[str, str]]:
    """``(field path, what is wrong)`` for each problem; empty when the builders can use the template."""
    if not isinstance(template, dict):
        return [(path, "must be an object")]
    if not _integers_in_range(template):
        return [(path, "every integer must fit in 64 bits")]
    problems: list[tuple[str, str]] = []
    problems += _metadata_problems(template.get("metadata"), f"{path}.metadata")
    spec = template.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return [*problems, (f"{path}.spec", "must be an object")]
    return problems + _spec_problems(spec or {}, f"{path}.spec")


def _integers_in_range(value: Any) -> bool:
    try:
        encoded = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False  # beyond 64 bits (the nesting is bounded by the parser, see above)
    return _LONG_DIGIT_RUN.search(encoded) is None or _walk_in_range(value)


def _walk_in_range(value: Any) -> bool:
    """Every integer within int64, iteratively (no recursion, whatever the depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            return False
    return True


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
    for key in ("dnsConfig", "overhead", "resources", "securityContext"):
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
    for key in ("resources", "securityContext"):
        if container.get(key) is not None and not isinstance(container[key], dict):
            problems.append((f"{path}.{key}", "must be an object"))
    return problems


def _list_of(value: Any, kind: type) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, kind) for v in value))


def _string_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
