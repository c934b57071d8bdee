"""How ``mpijob replay`` compares answers: the volatile parts left out, children matched by kind and name.

Both sides are parsed JSON no deeper than ``EXCHANGE_MAX_DEPTH``, so the recursion here is bounded. What
it returns is printed: values are shown as JSON (control characters escaped) and cut to ``VALUE_CHARS``.
"""

from __future__ import annotations

from typing import Any

import orjson

from app.cli.terminal import cut

VALUE_CHARS = 60
ABSENT = object()


def without_volatile(value: Any, patterns: tuple[str, ...]) -> Any:
    """``value`` without the parts the patterns name (a copy)."""
    value = orjson.loads(orjson.dumps(value))
    for pattern in patterns:
        _drop(value, pattern.split("."))
    return value


def _drop(value: Any, segments: list[str]) -> None:
    head, rest = segments[0], segments[1:]
    if isinstance(value, dict):
        keys = [k for k in value if _matches(head, k, value[k])]
        for key in keys:
            if rest:
                _drop(value[key], rest)
            else:
                del value[key]
    elif isinstance(value, list):
        for index in reversed(range(len(value))):
            if _matches(head, str(index), value[index]):
                if rest:
                    _drop(value[index], rest)
                else:
                    del value[index]


def _matches(segment: str, key: str, item: Any) -> bool:
    if segment == "*":
        return True
    if segment.startswith("[") and segment.endswith("]") and "=" in segment:
        field_name, _, wanted = segment[1:-1].partition("=")
        return isinstance(item, dict) and str(item.get(field_name)) == wanted
    return segment == key


def diff(recorded: Any, replayed: Any, path: str = "") -> list[str]:
    """Each difference as ``path: recorded -> replayed``; children are matched by kind and name."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out = []
        for key in sorted(set(recorded) | set(replayed), key=str):
            where = f"{path}.{key}" if path and not str(key).startswith("[") else f"{path}{key}"
            old, new = recorded.get(key, ABSENT), replayed.get(key, ABSENT)
            if where == "children" and isinstance(old, list) and isinstance(new, list):
                out += diff(_by_identity(old), _by_identity(new), "children")
            else:
                out += diff(old, new, where)
        return out
    if isinstance(recorded, list) and isinstance(replayed, list):
        out = []
        for index in range(max(len(recorded), len(replayed))):
            out += diff(
                recorded[index] if index < len(recorded) else ABSENT,
                replayed[index] if index < len(replayed) else ABSENT,
                f"{path}[{index}]",
            )
        return out
    if recorded == replayed and type(recorded) is type(replayed):
        return []
    return [f"{path or '(answer)'}: {_show(recorded)} -> {_show(replayed)}"]


def _by_identity(children: list[Any]) -> dict[str, Any]:
    out = {}
    for index, child in enumerate(children):
        meta = child.get("metadata", {}) if isinstance(child, dict) else {}
        kind = child.get("kind", "?") if isinstance(child, dict) else "?"
        name = meta.get("name", f"#{index}") if isinstance(meta, dict) else f"#{index}"
        out[f"[{kind} {name}]"] = child
    return out


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = orjson.dumps(value).decode()
    return cut(text, VALUE_CHARS)
