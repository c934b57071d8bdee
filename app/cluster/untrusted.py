"""What came from an API server or a file is hostile until shown otherwise: files read bounded, JSON
depth-checked before it is parsed. Errors name the source and the problem, never the content.

Parsing uses the hook's own depth limit (``app.kube.depth.MPIJOB_MAX_DEPTH``): JSON nested deeper is refused
before a parser recurses into it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import orjson

from app.kube.depth import MPIJOB_MAX_DEPTH, deeper_than


class Hostile(ValueError):
    """What a server or a file sent cannot be used; the message says what and where, never the content."""


def parse_json(raw: bytes, where: str, depth: int = MPIJOB_MAX_DEPTH) -> Any:
    """``raw`` parsed, or ``Hostile`` naming ``where``: nested deeper than ``depth`` levels, or not JSON."""
    if deeper_than(raw, depth):
        raise Hostile(f"{where}: JSON nested deeper than {depth} levels")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise Hostile(f"{where}: not JSON") from None


def read_file(path: Path, limit: int, what: str, *, pipes: bool = False) -> bytes:
    """A regular file's bytes, at most ``limit`` of them: a device (``/dev/zero``), a FIFO (unless ``pipes``:
    the user named it, as ``<(...)``) or a file larger than that is refused, naming the file and the problem
    only."""
    try:
        fd = os.open(path, os.O_RDONLY | (0 if pipes else os.O_NONBLOCK) | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise Hostile(f"{what} {path}: cannot be read ({err.strerror})") from None
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode))):
            raise Hostile(f"{what} {path}: not a regular file")
        try:
            data = file.read(limit + 1)
        except OSError as err:
            raise Hostile(f"{what} {path}: cannot be read ({err.strerror})") from None
    if len(data) > limit:
        raise Hostile(f"{what} {path}: larger than {limit} bytes")
    return data
