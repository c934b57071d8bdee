"""JSON Patch (RFC 6902) as the golden files use it: a strict ``apply`` and a deterministic ``diff``.

A shared golden file is its base plus a patch (tests/support/golden_store.py), so applying must fail loudly
rather than guess: ``add`` refuses an object member that already exists (the RFC would replace it), ``move``
refuses to overwrite one, and an index past the end, a missing member or an unknown operation is an error
naming the operation. ``diff`` always writes the same patch for the same two documents, aligns lists by what
their items are (a Kubernetes object by kind and name, a container or an env var by name, a condition by
type) so that one inserted child is one ``add``, and checks that its patch rebuilds the target exactly.
"""

from __future__ import annotations

import copy
import difflib
import json
from typing import Any

Patch = list[dict[str, Any]]
OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")


class PatchError(ValueError):
    """A patch that does not apply to the document it was given."""


def canonical(value: Any) -> str:
    """One text per JSON value: types kept apart (``1``, ``1.0`` and ``true`` differ), keys sorted."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- applying --------------------------------------------------------------------------------------------


def apply(document: Any, patch: Patch) -> Any:
    """``document`` with every operation of ``patch`` applied in order (the input is not changed)."""
    if not isinstance(patch, list):
        raise PatchError(f"a patch is a list of operations, not {type(patch).__name__}")
    result = copy.deepcopy(document)
    for index, operation in enumerate(patch):
        try:
            result = _apply_one(result, operation)
        except PatchError as error:
            raise PatchError(f"operation {index} {json.dumps(operation)[:200]}: {error}") from None
    return result


def _apply_one(document: Any, operation: Any) -> Any:
    if not isinstance(operation, dict) or operation.get("op") not in OPERATIONS:
        raise PatchError(f"not an operation (op is one of {', '.join(OPERATIONS)})")
    name = operation["op"]
    path = _pointer(operation, "path")
    if name in ("add", "replace", "test") and "value" not in operation:
        raise PatchError("no value")
    if name == "add":
        return _add(document, path, copy.deepcopy(operation["value"]))
    if name == "remove":
        return _remove(document, path)[0]
    if name == "replace":
        if not path:
            return copy.deepcopy(operation["value"])
        return _add(_remove(document, path)[0], path, copy.deepcopy(operation["value"]))
    if name == "test":
        if canonical(_get(document, path)) != canonical(operation["value"]):
            raise PatchError("the value differs")
        return document
    source = _pointer(operation, "from")
    if name == "copy":
        return _add(document, path, copy.deepcopy(_get(document, source)))
    if path[: len(source)] == source and path != source:
        raise PatchError("cannot move a value into itself")
    document, value = _remove(document, source)
    return _add(document, path, value)


def _pointer(operation: dict[str, Any], key: str) -> list[str]:
    pointer = operation.get(key)
    if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
        raise PatchError(f"{key} is not a JSON pointer")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer.split("/")[1:]]


def _index(container: list[Any], token: str, *, end: bool) -> int:
    if token == "-" and end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"{token!r} is not a list index")
    index = int(token)
    if index > len(container) or (index == len(container) and not end):
        raise PatchError(f"index {index} is past the end of a list of {len(container)}")
    return index


def _get(document: Any, path: list[str]) -> Any:
    value = document
    for depth, token in enumerate(path):
        where = "/" + "/".join(path[: depth + 1])
        if isinstance(value, dict):
            if token not in value:
                raise PatchError(f"{where} does not exist")
            value = value[token]
        elif isinstance(value, list):
            value = value[_index(value, token, end=False)]
        else:
            raise PatchError(f"{where}: the parent is not an object or a list")
    return value


def _add(document: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent = _get(document, path[:-1])
    token = path[-1]
    if isinstance(parent, dict):
        if token in parent:
            raise PatchError(f"/{'/'.join(path)} exists already")
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, end=True), value)
    else:
        raise PatchError(f"/{'/'.join(path)}: the parent is not an object or a list")
    return document


def _remove(document: Any, path: list[str]) -> tuple[Any, Any]:
    if not path:
        raise PatchError("cannot remove the whole document")
    parent = _get(document, path[:-1])
    _get(document, path)
    if isinstance(parent, dict):
        return document, parent.pop(path[-1])
    return document, parent.pop(_index(parent, path[-1], end=False))


# --- diffing ---------------------------------------------------------------------------------------------


def diff(base: Any, target: Any) -> Patch:
    """The patch that turns ``base`` into ``target``, checked by applying it."""
    patch = _diff(base, target, "")
    if canonical(apply(base, patch)) != canonical(target):
        raise AssertionError("json_patch.diff made a patch that does not rebuild its target")
    return patch


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _diff(base: Any, target: Any, path: str) -> Patch:
    if type(base) is not type(target):
        return [{"op": "replace", "path": path, "value": target}]
    if isinstance(base, dict):
        return _diff_objects(base, target, path)
    if isinstance(base, list):
        return _diff_lists(base, target, path)
    return [] if base == target else [{"op": "replace", "path": path, "value": target}]


def _diff_objects(base: dict[str, Any], target: dict[str, Any], path: str) -> Patch:
    """Members gone, new or changed; an object or a list only renamed (hook v1's keys) is one ``move``."""
    gone = sorted(k for k in base if k not in target)
    new = sorted(k for k in target if k not in base)
    patch: Patch = []
    moved: set[str] = set()
    for key in new:
        value = canonical(target[key])
        same = next((g for g in gone if g not in moved and canonical(base[g]) == value), None)
        if not isinstance(target[key], dict | list) or not target[key]:
            same = None  # a scalar renamed reads better as remove and add
        if same is not None:
            moved.add(same)
            patch.append({"op": "move", "from": f"{path}/{_escape(same)}", "path": f"{path}/{_escape(key)}"})
    patch += [{"op": "remove", "path": f"{path}/{_escape(key)}"} for key in gone if key not in moved]
    arrived = {op["path"] for op in patch if op["op"] == "move"}
    for key in sorted(target):
        where = f"{path}/{_escape(key)}"
        if key in base:
            patch += _diff(base[key], target[key], where)
        elif where not in arrived:
            patch.append({"op": "add", "path": where, "value": target[key]})
    return patch


def _identity(item: Any) -> tuple[str, ...]:
    """What a list item is, to align two lists: a Kubernetes object, a named or typed entry, or its value."""
    if isinstance(item, dict):
        meta = item.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            return ("object", str(item.get("kind")), str(meta.get("namespace")), meta["name"])
        for key in ("name", "type"):
            if isinstance(item.get(key), str):
                return (key, item[key])
    return ("value", canonical(item))


def _diff_lists(base: list[Any], target: list[Any], path: str) -> Patch:
    """Align by identity (difflib, no junk heuristic: deterministic); ``at`` is where the next base item
    sits once the operations so far are applied."""
    ids = [_identity(item) for item in base], [_identity(item) for item in target]
    matcher = difflib.SequenceMatcher(None, ids[0], ids[1], autojunk=False)
    patch: Patch = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        at = j1
        if tag == "equal":
            for offset in range(i2 - i1):
                patch += _diff(base[i1 + offset], target[j1 + offset], f"{path}/{at + offset}")
            continue
        paired = min(i2 - i1, j2 - j1)
        for offset in range(paired):
            old, new = base[i1 + offset], target[j1 + offset]
            if ids[0][i1 + offset][0] == "value" and ids[1][j1 + offset][0] == "value":
                patch += _diff(old, new, f"{path}/{at}")
            else:
                patch.append({"op": "replace", "path": f"{path}/{at}", "value": new})
            at += 1
        patch += [{"op": "remove", "path": f"{path}/{at}"} for _ in range(i2 - i1 - paired)]
        for offset in range(paired, j2 - j1):
            patch.append({"op": "add", "path": f"{path}/{at}", "value": target[j1 + offset]})
            at += 1
    return patch
