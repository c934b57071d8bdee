"""What ``mpijob replay`` reads and receives, bounded: DIR, its case files, the token file, the answers.

A recorded folder may come from anywhere, and the hook at ``--url`` may be anything, so neither is trusted.
A case file is read only when it is a regular file inside its case folder: a symbolic link (a case folder or
a case file) is refused, as is a FIFO or a device (never opened: checked with ``lstat`` first, then opened
with ``O_NOFOLLOW | O_NONBLOCK`` and checked again with ``fstat``). A file or an answer larger than
``MAX_BYTES`` is refused unread; JSON nested deeper than ``EXCHANGE_MAX_DEPTH`` is refused before it is
parsed.
One call to the hook takes at most ``--timeout`` seconds in all, however slowly the answer trickles in.
Whatever of the server's text is printed goes through ``printable``.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from typing import Any, cast

import orjson

from app.kube.depth import EXCHANGE_MAX_DEPTH, deeper_than

# The hook's own default body cap (app.settings, MPI_OPERATOR_MAX_BODY_BYTES): a case the hook would refuse
# with 413 cannot be replayed anyway, and an answer is held to the same bound.
MAX_BYTES = 160 * 1024 * 1024
# Longest line replay prints: a server's key or message may be any length.
LINE_CHARS = 400
# Grace after --timeout before the watchdog gives up on a call stuck below the streaming loop.
WATCHDOG_GRACE = 1.0


class Refused(Exception):
    """This case, or the hook's answer to it, cannot be used: the message says why, in one line."""


class TooDeep(Refused):
    """JSON nested deeper than ``EXCHANGE_MAX_DEPTH``: refused before it is parsed."""


class Unreachable(Exception):
    """The hook cannot be reached at all: no case can be compared."""


def size_text(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


# --- files -------------------------------------------------------------------------------------------------


def open_folder(name: str | Path, parent: int | None = None) -> int:
    """A case folder's descriptor; below ``parent`` a symbolic link is refused (DIR itself may be one)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | (os.O_NOFOLLOW if parent is not None else 0)
    try:
        return os.open(name, flags, dir_fd=parent)
    except OSError as err:
        if parent is not None and _is_link(parent, str(name)):
            raise Refused(
                "a symbolic link: refused (replay reads only folders and files inside DIR)"
            ) from None
        raise Refused(f"cannot read it: {err.strerror}") from None


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_case_file(folder: int, name: str, cap: int = MAX_BYTES) -> bytes | None:
    """The bytes of the regular file ``name`` in ``folder``; None when there is none."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        raise Refused(f"cannot read {name}: {err.strerror}") from None
    if stat.S_ISLNK(mode):
        raise Refused(f"{name} is a symbolic link: refused (replay reads only regular files inside DIR)")
    if not stat.S_ISREG(mode):
        raise Refused(f"{name} is not a regular file (a FIFO, a device or a folder): refused")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError as err:
        raise Refused(f"cannot read {name}: {err.strerror}") from None
    with open(fd, "rb", buffering=0) as file:
        facts = os.fstat(fd)
        if not stat.S_ISREG(facts.st_mode):  # replaced since the lstat
            raise Refused(f"{name} is not a regular file: refused")
        if facts.st_size > cap:
            raise Refused(
                f"{name} is {size_text(facts.st_size)}, over replay's {size_text(cap)} limit: not read"
            )
        data = _read_at_most(file, min(facts.st_size, cap) + 1)  # +1: it grew
    if len(data) > cap:  # grew since the fstat
        raise Refused(f"{name} is over replay's {size_text(cap)} limit")
    return data


def _read_at_most(file: Any, limit: int) -> bytes:
    """Up to ``limit`` bytes: a regular file gives them in one read, so they are not copied again."""
    chunks: list[bytes] = []
    left = limit
    while left > 0 and (chunk := file.read(left)):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)  # one chunk: that very object


def parse_json(raw: bytes | bytearray, what: str) -> Any:
    """``raw`` parsed, or ``Refused`` naming ``what``: not JSON, or nested deeper than
    ``EXCHANGE_MAX_DEPTH``."""
    if deeper_than(cast("bytes", raw), EXCHANGE_MAX_DEPTH):  # it uses bytes methods only, a bytearray's too
        raise TooDeep(f"{what} nests deeper than {EXCHANGE_MAX_DEPTH} levels: refused")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise Refused(f"{what} is not JSON: {err}") from None


# --- the hook ----------------------------------------------------------------------------------------------


def connect(url: str, headers: dict[str, str], timeout: float) -> Any:
    """One ``httpx.Client`` for every call (its connections reused); ``Unreachable`` for a URL it refuses."""
    import httpx

    try:
        return httpx.Client(base_url=url, timeout=timeout, headers=headers)
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as err:
        raise Unreachable(f"{type(err).__name__}: {err}") from None


def post(client: Any, path: str, body: bytes, timeout: float) -> tuple[int, bytearray]:
    """POST ``body`` to ``path``: the status and the answer, all within ``timeout`` seconds.

    The call runs in a daemon thread that the caller waits for at most ``timeout`` (and a grace): a server
    trickling its headers byte by byte is not caught by a per-read timeout. A call given up on is left to
    end by itself (its own deadline, the client's closing, or the process's exit)."""
    outcome: list[tuple[int, bytearray] | BaseException] = []

    def call() -> None:
        try:
            outcome.append(_stream(client, path, body, timeout))
        except BaseException as err:  # handed to the waiting thread
            outcome.append(err)

    worker = threading.Thread(target=call, name="replay-post", daemon=True)
    worker.start()
    worker.join(timeout + WATCHDOG_GRACE)
    if not outcome:
        raise Refused(f"no complete answer within --timeout {timeout:g} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _stream(client: Any, path: str, body: bytes, timeout: float) -> tuple[int, bytearray]:
    import httpx

    deadline = time.monotonic() + timeout
    try:
        with client.stream("POST", path, content=body) as reply:
            if reply.status_code in (401, 404, 405):
                return reply.status_code, bytearray()
            return reply.status_code, _bounded_body(reply, deadline, timeout)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol, httpx.InvalidURL) as err:
        raise Unreachable(f"{type(err).__name__}: {err}") from None
    except httpx.TimeoutException:
        raise Refused(f"no complete answer within --timeout {timeout:g} s") from None
    except httpx.HTTPError as err:
        raise Refused(f"the answer broke off: {type(err).__name__}: {err}") from None


def _bounded_body(reply: Any, deadline: float, timeout: float) -> bytearray:
    declared = reply.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BYTES:
        raise Refused(f"the answer is {size_text(int(declared))}, over replay's {size_text(MAX_BYTES)} limit")
    body = bytearray()  # grows in place: the answer is held once
    for chunk in reply.iter_raw():
        if len(body) + len(chunk) > MAX_BYTES:
            raise Refused(f"the answer is over replay's {size_text(MAX_BYTES)} limit: not read further")
        if time.monotonic() > deadline:
            raise Refused(f"no complete answer within --timeout {timeout:g} s")
        body += chunk
    return body
