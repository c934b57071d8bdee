"""Cut JSON nested deeper than a limit, so an MPIJob the parser refuses can still be named and reported.

The CRD keeps unknown fields under a pod template's ``metadata``, so the apiserver stores nesting far
deeper than the hook's JSON parser accepts (~200 levels). ``prune`` replaces every value opened deeper
than ``limit`` by ``null`` and says where the first one was, so the caller can parse the rest and answer
with an ``Invalid`` condition instead of a 400 that Metacontroller would retry forever. One regular
expression walks strings and brackets at C speed; no recursion.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{}]', re.DOTALL)


def prune(raw: bytes, limit: int) -> tuple[bytes, str | None]:
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


def _path(stack: list[tuple[str, bool]]) -> str:
    """``spec.mpiReplicaSpecs.Worker.template.metadata.x[][]`` for the containers below the root."""
    path = ""
    for name, _ in stack[1:]:
        path += name if name == "[]" or not path else f".{name}"
    return path
