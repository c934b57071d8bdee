"""Recording hook requests and answers for ``mpijob replay`` (``MPI_OPERATOR_RECORD_DIR``; off by default).

Layout, shared by the recorder, ``examples/requests/`` and ``mpijob replay``: one directory per request,
named so that names sort oldest first, holding ``request.json`` (what Metacontroller posted),
``response.json`` (what the hook answered) and ``case.json`` (which hook, the HTTP status, the settings the
answer depends on, the parts of the answer that vary between runs). A record appears whole or not at all:
it is written under a dot-name and renamed. Folders are made 0700 and files 0600 whatever the umask: a
record is as private as the MPIJobs it copies.

Redaction (``app.server.redact``) happens before anything touches disk, for refused requests as for
answered ones. Request headers are never recorded. A body that is not a JSON object, or one nested deeper
than ``EXCHANGE_MAX_DEPTH``, is not recorded at all (counted as skipped): no record is better than a partial
one.

Bounds: at most ``max_requests`` records and ``max_bytes`` on disk (records found at start-up count); to
make room the oldest records are deleted, so the directory holds the most recent requests. A record larger
than ``max_bytes`` alone is not written. A full disk (ENOSPC, EDQUOT) deletes the oldest records too, one
per retry, at most ``FULL_DISK_RETRIES`` times.

Off the sync's path: the endpoint hands a copy of the body and the answer to a small queue (bounded in
requests and bytes) and returns; one thread redacts, encodes and writes. A full queue, a full disk or any
other failure loses that record (counted in ``mpi_operator_hook_recorded_requests``), never a sync; the
recorder logs at most one line a minute (``LogThrottle``), which says how many it held back.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import queue
import re
import shutil
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from app.kube import depth
from app.kube.depth import EXCHANGE_MAX_DEPTH
from app.server import logs
from app.server.redact import redact

log = logging.getLogger("mpi_operator_hook.record")

REQUEST, RESPONSE, CASE = "request.json", "response.json", "case.json"
HOOK_PATHS = {"sync": "/sync", "customize": "/customize"}
# The parts of an answer that differ from one run to the next, as ``mpijob replay`` patterns: segments
# separated by dots; ``*`` is any key or list item, ``[kind=Secret]`` a list item whose ``kind`` is Secret.
VOLATILE = (
    "status.conditions.*.lastTransitionTime",
    "status.conditions.*.lastUpdateTime",
    "status.startTime",
    "status.completionTime",
    "children.[kind=Secret].data",
    "children.[kind=Secret].stringData",
)
RECORD_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z-\d{6}-(sync|customize)-")
QUEUE_REQUESTS = 32
QUEUE_BYTES = 64 * 1024 * 1024
FAILURE_LOG_SECONDS = 60.0
FULL_DISK_RETRIES = 16
FULL_DISK = (errno.ENOSPC, errno.EDQUOT)
FILE_MODE, FOLDER_MODE = 0o600, 0o700

Endpoint = Callable[[bytes], Awaitable[tuple[int, bytes]]]


# --- what one record holds -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One request and the hook's answer, as the endpoint saw them."""

    hook: str
    request: bytes
    status: int
    answer: bytes
    at: datetime


@dataclass(frozen=True)
class Record:
    name: str
    files: dict[str, bytes]

    @property
    def size(self) -> int:
        return sum(len(content) for content in self.files.values())


def encode(value: Any) -> bytes:
    """Recorded JSON: indented, so a record can be read and edited by hand."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def case_metadata(
    hook: str, status: int, settings: Mapping[str, str], shows: str, **extra: Any
) -> dict[str, Any]:
    """``case.json``: what the record shows, and what replaying it needs and ignores."""
    return {
        "hook": hook,
        "shows": shows,
        **extra,
        "settings": dict(settings),
        "status": status,
        "volatile": list(VOLATILE),
    }


class Unrecordable(Exception):
    """Why an exchange is not recorded at all (counted as skipped, never written in part)."""


def make_record(exchange: Exchange, sequence: int, settings: Mapping[str, str]) -> Record:
    """The redacted record of ``exchange``; ``Unrecordable`` when it cannot be redacted whole: a request
    that is not a JSON object (its raw bytes could hold anything) or is nested deeper than
    ``EXCHANGE_MAX_DEPTH``."""
    if depth.deeper_than(exchange.request, EXCHANGE_MAX_DEPTH) or depth.deeper_than(
        exchange.answer, EXCHANGE_MAX_DEPTH
    ):
        raise Unrecordable(f"nested deeper than {EXCHANGE_MAX_DEPTH} levels")
    try:
        request = orjson.loads(exchange.request)
    except orjson.JSONDecodeError:
        request = None
    if not isinstance(request, dict):
        raise Unrecordable("the request is not a JSON object")
    try:
        answer = orjson.loads(exchange.answer)
    except orjson.JSONDecodeError:
        answer = {"error": "the answer was not JSON"}
    parent = request.get("parent")
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    namespace, name = str(metadata.get("namespace", "")), str(metadata.get("name", ""))
    stamp = exchange.at.astimezone(UTC)
    shows = f"recorded {exchange.hook} of {namespace or '-'}/{name or '-'}"
    case = case_metadata(
        exchange.hook,
        exchange.status,
        settings,
        shows,
        recorded=stamp.isoformat(timespec="microseconds").replace("+00:00", "Z"),
    )
    return Record(
        f"{stamp:%Y%m%dT%H%M%S.%fZ}-{sequence:06d}-{exchange.hook}-{_safe(namespace)}-{_safe(name)}",
        {REQUEST: encode(redact(request)), RESPONSE: encode(redact(answer)), CASE: encode(case)},
    )


def _safe(text: str) -> str:
    """A name from the request, as a file-name part: lower-case letters, digits, dots and dashes only."""
    return re.sub(r"[^a-z0-9.-]", "_", text.lower())[:63].strip(".") or "_"


# --- the log throttle --------------------------------------------------------------------------------------


class LogThrottle:
    """At most one line per ``FAILURE_LOG_SECONDS``, whatever goes wrong or right: a recorder that fails
    and recovers on every other request would otherwise log twice per request. Each line says how many
    were held back since the last one; every failure is counted in the metric all the same."""

    def __init__(self, logger: logging.Logger, clock: Callable[[], float], **fields: str) -> None:
        self._log, self._fields = logger, fields
        self._throttle = logs.Throttle(FAILURE_LOG_SECONDS, clock)
        self._lock = threading.Lock()  # failures come from the event loop (a full queue) and the writer
        self.failing = False

    def failure(self, level: int, what: str, reason: str) -> None:
        """One failure: a line if the minute allows one, else one more held back."""
        with self._lock:
            self.failing = True
            held_back = self._throttle.admit()
        if held_back is not None:
            logs.event(self._log, level, what, **self._fields, reason=reason, held_back=held_back)

    def success(self) -> None:
        """One success: after failures, ``recording requests again`` once the minute allows a line (until
        then the recorder still counts as failing, so the line comes with the next success after it)."""
        with self._lock:
            if not self.failing or (held_back := self._throttle.admit()) is None:
                return
            self.failing = False
        logs.event(self._log, logging.INFO, "recording requests again", **self._fields, held_back=held_back)


# --- the recorder ------------------------------------------------------------------------------------------


class RequestRecorder:
    """Takes exchanges from the endpoints without waiting and writes them from one thread, within bounds."""

    def __init__(
        self,
        directory: Path,
        *,
        max_requests: int,
        max_bytes: int,
        settings: Mapping[str, str],
        count: Callable[[str], None] = lambda result: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.settings = dict(settings)
        self._count = count
        self._queue: queue.Queue[Exchange | None] = queue.Queue(QUEUE_REQUESTS)
        self._queued_bytes = 0
        self._lock = threading.Lock()
        self._sequence = itertools.count()
        self._kept: deque[tuple[Path, int]] = deque()
        self._kept_bytes = 0
        self._throttle = LogThrottle(log, clock, directory=str(directory))
        self._thread = threading.Thread(target=self._run, name="request-recorder", daemon=True)
        self._thread.start()

    def wrap(self, hook: str, endpoint: Endpoint) -> Endpoint:
        """``endpoint``, recording each exchange after it answered (refused ones too, redacted alike)."""

        async def recorded(body: bytes) -> tuple[int, bytes]:
            status, payload = await endpoint(body)
            self.offer(hook, body, status, payload)
            return status, payload

        return recorded

    def offer(self, hook: str, body: bytes, status: int, answer: bytes) -> None:
        """Queue one exchange (a copy: the body's buffer is reused); never raises, never waits."""
        try:
            size = len(body) + len(answer)
            with self._lock:
                room = self._queued_bytes + size <= QUEUE_BYTES
                if room:
                    self._queued_bytes += size
            if not room:
                self._skip("the recorder's queue is full")
                return
            exchange = Exchange(hook, bytes(body), status, bytes(answer), datetime.now(UTC))
            try:
                self._queue.put_nowait(exchange)
            except queue.Full:
                self._release(size)
                self._skip("the recorder's queue is full")
        except Exception:
            log.exception("recording a request failed (the request was answered)")
            self._count("failed")

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (for at most ``timeout`` seconds), then end the thread."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _release(self, size: int) -> None:
        with self._lock:
            self._queued_bytes -= size

    def _skip(self, why: str) -> None:
        self._count("skipped")
        self._throttle.failure(logging.WARNING, "request not recorded", why)

    def _run(self) -> None:
        try:
            self._scan()
        except OSError as err:
            self._throttle.failure(
                logging.ERROR, "cannot read the record directory", err.strerror or str(err)
            )
        while (exchange := self._queue.get()) is not None:
            try:
                self._write(exchange)
            except Unrecordable as err:
                self._skip(str(err))
            except Exception as err:  # a directory gone, a disk full of others' files: lose this record
                self._count("failed")
                reason = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
                self._throttle.failure(logging.ERROR, "request not recorded", reason)
            finally:
                self._release(len(exchange.request) + len(exchange.answer))

    def _scan(self) -> None:
        """Count the records already there (a restart keeps its bounds); clear half-written ones."""
        for entry in sorted(self.directory.iterdir()):
            if entry.name.startswith(".record-") and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            elif RECORD_NAME.match(entry.name) and (entry / CASE).is_file():
                self._keep(entry, sum(f.stat().st_size for f in entry.iterdir() if f.is_file()))

    def _write(self, exchange: Exchange) -> None:
        record = make_record(exchange, next(self._sequence), self.settings)
        if record.size > self.max_bytes:
            raise Unrecordable("larger than the byte bound")
        self._make_room(record.size)
        for retry in range(FULL_DISK_RETRIES + 1):
            try:
                final = self._write_files(record)
                break
            except OSError as err:
                if err.errno not in FULL_DISK or retry == FULL_DISK_RETRIES or not self._kept:
                    raise
                self._drop_oldest()  # a full disk: the newest requests are worth more than the oldest
        self._keep(final, record.size)
        self._count("written")
        self._throttle.success()

    def _write_files(self, record: Record) -> Path:
        """Write ``record`` under a dot-name, private, and rename it: whole or not at all."""
        partial = self.directory / f".record-{record.name}"
        partial.mkdir(FOLDER_MODE)
        try:
            os.chmod(partial, FOLDER_MODE)  # mkdir's mode passes through the umask; the umask may be 0
            for name, content in record.files.items():
                write_private(partial / name, content)
            final = self.directory / record.name
            os.rename(partial, final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        return final

    def _keep(self, path: Path, size: int) -> None:
        self._kept.append((path, size))
        self._kept_bytes += size

    def _make_room(self, size: int) -> None:
        """Delete the oldest records until one more of ``size`` bytes fits both bounds."""
        while self._kept and (
            len(self._kept) >= self.max_requests or self._kept_bytes + size > self.max_bytes
        ):
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        oldest, kept = self._kept.popleft()
        shutil.rmtree(oldest, ignore_errors=True)
        self._kept_bytes -= kept
        self._count("pruned")


def write_private(path: Path, content: bytes) -> None:
    """A new file readable by its owner only, from its creation on (no moment at the umask's mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        os.fchmod(fd, FILE_MODE)
        out.write(content)
