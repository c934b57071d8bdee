"""Find and cut JSON nested too deep, so an MPIJob nested deeper than ``MPIJOB_MAX_DEPTH`` can still be named
and reported.

The CRD keeps unknown fields under a pod template's ``metadata``, so the apiserver stores nesting far
deeper than the hook's JSON parsers accept (pydantic's ~200 levels, msgspec's ~1,000). ``deeper_than``
says whether a parent nests deeper than ``MPIJOB_MAX_DEPTH`` before it is parsed (bytes methods only, at C
speed); ``prune`` replaces every value opened deeper than ``MPIJOB_MAX_DEPTH`` by ``null`` and says where the
first one was, so the caller can parse the rest and answer with an ``Invalid`` condition instead of a 400 that
Metacontroller would retry forever. One regular expression walks strings and brackets; no recursion. The
rest of a request is read only where the hook needs it (msgspec skips what it does not read), so it is cut
only past msgspec's own limit (``app.kube.request``). The ``mpijob`` command holds its inputs to the
same limit.
"""

from __future__ import annotations

import re

import orjson

from app.api import field_path

# How deep an MPIJob may nest: deeper than any pod template needs (~15 levels below the parent), well inside
# the parsers'.
MPIJOB_MAX_DEPTH = 64
# How deep a whole request or answer may nest to be recorded and replayed (app/server/record.py,
# app/cli/replay_io.py): redacting recurses, and orjson encodes 254 levels.
EXCHANGE_MAX_DEPTH = 200

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[\[\]{}]', re.DOTALL)
# Brackets as ``(`` and ``)`` (valid JSON nests them properly, so their kind does not matter), quotes kept.
_AS_PARENTHESES = bytes.maketrans(b"[]{}", b"()()")
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'[]{}"')


def deeper_than(raw: bytes, limit: int = MPIJOB_MAX_DEPTH) -> bool:
    """Whether a container of the JSON ``raw`` opens deeper than ``limit`` (the outermost is at 1).

    Exact for valid JSON, at C speed: its brackets outside strings are a sequence of pairs; each pass drops
    the innermost ones (``bytes.replace`` does not rescan what it joined), so nesting ``d`` deep is gone
    after ``d`` passes, and ``n`` pairs can nest at most ``n`` deep."""
    pairs = _brackets(raw)
    for passes_left in range(limit, 0, -1):
        if len(pairs) <= 2 * passes_left:
            return False
        pairs = pairs.replace(b"()", b"")
    return bool(pairs)


def _brackets(raw: bytes) -> bytes:
    """The brackets of ``raw`` outside its strings, as ``(`` and ``)``."""
    # A backslash in a string starts a two-byte escape: once ``\\`` and then ``\"`` are gone, every quote
    # opens or closes a string.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in raw else raw
    # Two adjacent quotes have no bracket between them: dropping them keeps every other quote paired.
    quoted = unescaped.translate(_AS_PARENTHESES, _NOT_STRUCTURE).replace(b'""', b"")
    return b"".join(quoted.split(b'"')[::2])


def prune(raw: bytes, limit: int = MPIJOB_MAX_DEPTH) -> tuple[bytes, str | None]:
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
    """``spec.mpiReplicaSpecs[Worker].template.metadata.x[][]`` for the containers below the root (the
    walk counts no list elements: ``[]``)."""
    return field_path.join(field_path.ANY_INDEX if name == "[]" else name for name, _ in stack[1:])
