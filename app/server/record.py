"""Recording hook requests and answers for ``mpijob replay`` (``MPI_OPERATOR_RECORD_DIR``; off by default).

Layout, shared by the recorder, ``examples/requests/`` and ``mpijob replay``: one directory per request,
named so that names sort oldest first, holding ``request.json`` (what Metacontroller posted),
``response.json`` (what the hook answered) and ``case.json`` (which hook, the HTTP status, the settings the
answer depends on, the parts of the answer that vary between runs). A record appears whole or not at all:
it is written under a dot-name and renamed.

Redaction happens before anything touches disk: every Secret's ``data`` and ``stringData`` values, every
``env`` value whose name looks like a credential, and the same inside last-applied annotations (which
copy whole objects). Request headers are never recorded.

Bounds: at most ``max_requests`` records and ``max_bytes`` on disk (records found at start-up count); to
make room the oldest records are deleted, so the directory holds the most recent requests. A record larger
than ``max_bytes`` alone is not written.

Off the sync's path: the endpoint hands a copy of the body and the answer to a small queue (bounded in
requests and bytes) and returns; one thread redacts, encodes and writes. A full queue, a full disk or any
other failure loses that record (logged, counted in ``mpi_operator_hook_recorded_requests``), never a sync.
"""

from __future__ import annotations

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

from app.server import logs

log = logging.getLogger("mpi_operator_hook.record")

REQUEST, RESPONSE, CASE = "request.json", "response.json", "case.json"
HOOK_PATHS = {"sync": "/sync", "customize": "/customize"}
REDACTED = "<redacted>"
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
# An env var whose name says it holds a credential has its value redacted.
CREDENTIAL_NAME = re.compile(
    r"TOKEN|PASSW|SECRET|CREDENTIAL|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|AUTH|SESSION", re.IGNORECASE
)
LAST_APPLIED_SUFFIX = "last-applied-configuration"
RECORD_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z-\d{6}-(sync|customize)-")
QUEUE_REQUESTS = 32
QUEUE_BYTES = 64 * 1024 * 1024
FAILURE_LOG_SECONDS = 60.0

Endpoint = Callable[[bytes], Awaitable[tuple[int, bytes]]]


# --- redaction -----------------------------------------------------------------------------------------


def redact(value: Any) -> Any:
    """``value`` (decoded JSON) with Secret data, credential-like env values and their copies in
    last-applied annotations replaced by ``<redacted>``; keys are kept, so the shape replays the same."""
    if isinstance(value, list):
        return [redact(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: redact(item) for key, item in value.items()}
    if out.get("kind") == "Secret":
        for field in ("data", "stringData"):
            if isinstance(out.get(field), dict):
                out[field] = dict.fromkeys(out[field], REDACTED)
    if isinstance(out.get("name"), str) and "value" in out and CREDENTIAL_NAME.search(out["name"]):
        out["value"] = REDACTED  # an env var (or any name/value pair) that names a credential
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("annotations"), dict):
        annotations = metadata["annotations"]
        for key, text in annotations.items():
            if key.endswith(LAST_APPLIED_SUFFIX):
                annotations[key] = _redact_embedded(text)
    return out


def _redact_embedded(text: object) -> str:
    """A JSON object kept in an annotation, redacted and encoded again; anything else entirely."""
    try:
        inner = orjson.loads(text) if isinstance(text, str) else None
    except orjson.JSONDecodeError:
        inner = None
    if not isinstance(inner, dict):
        return REDACTED
    return orjson.dumps(redact(inner)).decode()


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


def make_record(exchange: Exchange, sequence: int, settings: Mapping[str, str]) -> Record | None:
    """The redacted record of ``exchange``; None when the request is not a JSON object (not redactable)."""
    try:
        request = orjson.loads(exchange.request)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(request, dict):
        return None
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
        self._last_failure_log = -FAILURE_LOG_SECONDS
        self._failing = False
        self._thread = threading.Thread(target=self._run, name="request-recorder", daemon=True)
        self._thread.start()

    def wrap(self, hook: str, endpoint: Endpoint) -> Endpoint:
        """``endpoint``, recording each exchange after it answered."""

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
        self._log_failure(logging.WARNING, "request not recorded", why)

    def _run(self) -> None:
        try:
            self._scan()
        except OSError as err:
            self._log_failure(logging.ERROR, "cannot read the record directory", err.strerror or str(err))
        while (exchange := self._queue.get()) is not None:
            try:
                self._write(exchange)
            except Exception as err:  # a full disk, a directory gone: lose this record, keep serving
                self._count("failed")
                reason = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
                self._log_failure(logging.ERROR, "request not recorded", reason)
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
        if record is None or record.size > self.max_bytes:
            self._skip("the request is not a JSON object" if record is None else "larger than the byte bound")
            return
        self._make_room(record.size)
        partial = self.directory / f".record-{record.name}"
        partial.mkdir()
        try:
            for name, content in record.files.items():
                (partial / name).write_bytes(content)
            final = self.directory / record.name
            os.rename(partial, final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        self._keep(final, record.size)
        self._count("written")
        if self._failing:
            self._failing = False
            logs.event(log, logging.INFO, "recording requests again", directory=str(self.directory))

    def _keep(self, path: Path, size: int) -> None:
        self._kept.append((path, size))
        self._kept_bytes += size

    def _make_room(self, size: int) -> None:
        """Delete the oldest records until one more of ``size`` bytes fits both bounds."""
        while self._kept and (
            len(self._kept) >= self.max_requests or self._kept_bytes + size > self.max_bytes
        ):
            oldest, kept = self._kept.popleft()
            shutil.rmtree(oldest, ignore_errors=True)
            self._kept_bytes -= kept
            self._count("pruned")

    def _log_failure(self, level: int, what: str, reason: str) -> None:
        """The first failure, then at most one line a minute while failures go on (each one is counted)."""
        now = time.monotonic()
        if self._failing and now - self._last_failure_log < FAILURE_LOG_SECONDS:
            return
        self._failing, self._last_failure_log = True, now
        logs.event(log, level, what, directory=str(self.directory), reason=reason)
