"""What came from an API server, a kubeconfig or a file is hostile until shown otherwise: bounded reads and
JSON depth-checked before it is parsed. (Every line the doctor prints of it goes through
``app.cli.terminal.printable``.) Parsing uses the hook's own depth limit (``app.kube.depth.MAX_DEPTH``): JSON
nested deeper is refused before a parser recurses into it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import orjson

from app.kube.depth import MAX_DEPTH, deeper_than


class Hostile(ValueError):
    """What a server or a file sent cannot be used; the message says what and where, never the content."""


def parse_json(raw: bytes, where: str, depth: int = MAX_DEPTH) -> Any:
    """``raw`` parsed, or ``Hostile`` naming ``where``: nested deeper than ``depth`` levels, or not JSON."""
    if deeper_than(raw, depth):
        raise Hostile(f"{where}: JSON nested deeper than {depth} levels")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise Hostile(f"{where}: not JSON") from None


def read_file(path: Path, limit: int, what: str) -> bytes:
    """A regular file's bytes, at most ``limit`` of them: a FIFO, a device (``/dev/zero``) or a file larger
    than that is refused, naming the file and the problem only."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise Hostile(f"{what} {path}: cannot be read ({err.strerror})") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Hostile(f"{what} {path}: not a regular file")
        try:
            data = file.read(limit + 1)
        except OSError as err:
            raise Hostile(f"{what} {path}: cannot be read ({err.strerror})") from None
    if len(data) > limit:
        raise Hostile(f"{what} {path}: larger than {limit} bytes")
    return data


def bearer_token(raw: str | bytes, where: str) -> str:
    """A token fit for an ``Authorization`` header: visible ASCII after trimming the ends' whitespace. A token
    with a control character (a file that is not a token, a forged header line) is refused unechoed."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    token = text.strip()
    if not token:
        raise Hostile(f"{where}: empty")
    if not all("\x21" <= char <= "\x7e" for char in token):
        bad = any(char < "\x20" or char == "\x7f" for char in token)
        why = "contains control characters" if bad else "contains characters other than visible ASCII"
        raise Hostile(f"{where}: not a valid bearer token ({why})")
    return token
