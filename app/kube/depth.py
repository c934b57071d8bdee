"""Cut JSON nested too deep, so an MPIJob the parsers refuse can still be named and reported.

The CRD keeps unknown fields under a pod template's ``metadata``, so the apiserver stores nesting far
deeper than the hook's JSON parsers accept (pydantic's ~200 levels, msgspec's ~1,000). ``prune`` replaces
every value opened deeper than ``MAX_DEPTH`` by ``null`` and says where the first one was, so the caller
can parse the rest and answer with an ``Invalid`` condition instead of a 400 that Metacontroller would
retry forever. One regular expression walks strings and brackets at C speed; no recursion.
"""

from __future__ import annotations

import re

import orjson

# The one limit: deeper than any pod template needs (~15 levels below the parent), well inside the parsers'.
MAX_DEPTH = 64

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{}]', re.DOTALL)


def prune(raw: bytes, limit: int = MAX_DEPTH) -> tuple[bytes, str | None]:
    """``raw`` with each container deeper than ``limit`` replaced by ``null``, and the first one's path."""
    out: list[bytes] = []
    stack: list[tuple[str, bool]] = []  # (name under its parent, is an array) per open container
    key = ""
    copied = 0
    cut_depth = 0  # depth of the container being cut, 0 when none
    first: str | None = None
    for match in _TOKEN.finditer(raw):
        token = match.group()
        if token[:1] == b'"':
            if token.endswith(b":"):
                key = token.rstrip(b": \t\r\n")[1:-1].decode("utf-8", "replace")
            continue
        if token in (b"{", b"["):
            name = "[]" if stack and stack[-1][1] else key
            stack.append((name, token == b"["))
            key = ""
            if not cut_depth and len(stack) > limit:
                cut_depth = len(stack)
                first = first or _path(stack)
                out.append(raw[copied : match.start()] + b"null")
        elif stack:
            if cut_depth == len(stack):
                cut_depth = 0
                copied = match.end()
            stack.pop()
    out.append(raw[copied:])
    return b"".join(out), first


def member(raw: bytes, name: str) -> bytes | None:
    """The bytes of the top-level object's member ``name`` when that is an object or an array, else None."""
    depth = 0
    wanted = False  # the last key at depth 1 was ``name``
    start: int | None = None
    for match in _TOKEN.finditer(raw):
        token = match.group()
        if token[:1] == b'"':
            if depth == 1:
                wanted = token.endswith(b":") and _name(token) == name
            continue
        if token in (b"{", b"["):
            depth += 1
            if depth == 2 and wanted:
                start = match.start()
            wanted = False
            continue
        if depth == 2 and start is not None:
            return raw[start : match.end()]
        depth -= 1
    return None


def _name(token: bytes) -> str:
    """A member's name as the parsers read it, escapes decoded (``"par\\u0065nt":`` is ``parent``)."""
    quoted = token.rstrip(b": \t\r\n")
    try:
        return str(orjson.loads(quoted))
    except orjson.JSONDecodeError:
        return quoted[1:-1].decode("utf-8", "replace")


def _path(stack: list[tuple[str, bool]]) -> str:
    """``spec.mpiReplicaSpecs.Worker.template.metadata.x[][]`` for the containers below the root."""
    path = ""
    for name, _ in stack[1:]:
        path += name if name == "[]" or not path else f".{name}"
    return path
