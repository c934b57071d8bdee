"""ASGI middleware that keeps hostile or simply huge hook requests from taking the pod down.

- The body cap is enforced while reading, chunk by chunk, so a chunked body without Content-Length
  is cut off at the cap exactly like a declared one (413), never buffered whole first.
- Memory admission: each hook request charges its bytes to one byte budget: a declared body when the
  request is admitted (it is about to be read), a body of unknown length (chunked) as it arrives, so a
  trickled chunked body holds only what it sent. Small requests pass side by side; two huge ones run one
  after the other instead of together past the pod's memory limit.
- A deadline, counted from the moment the request's headers were complete (``connections.ARRIVED``): its
  work must start within ``admission_wait_seconds``, waiting for room or for its turn on a busy loop
  included, reading its body not. Past it the answer is 503 at once (Metacontroller retries with backoff)
  instead of an answer its caller has stopped waiting for. Under load, requests queue until then: no cliff.
- A body that trickles in slower than the read timeout is answered 408.
- A caller without the hook's credential (``app/server/auth.py``) is answered 401 before anything else:
  no bytes reserved, no body read.
The guard then answers the request itself through the endpoint registered for its path, with the body
in one buffer (a bytearray filled in place when the length is declared, never copied again), so peak
memory stays near one body and a small sync pays for no web framework. Other paths pass through.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from app.server import logs
from app.server.budget import ByteBudget, Rejected
from app.server.connections import ARRIVED

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("mpi_operator_hook")
Endpoint = Callable[[bytes], Awaitable[tuple[int, bytes]]]
# Given the hook and a request's headers, why its caller is refused (None: admitted); it counts the refusal.
Authenticate = Callable[[str, Iterable[tuple[bytes, bytes]]], str | None]

UNAUTHORIZED = "unauthorized: this hook answers only callers with its credential (Authorization: Bearer)"
# One log line per this many seconds for refused callers, however many there are (a flood must not fill logs).
UNAUTHORIZED_LOG_SECONDS = 10.0


SPARE_BUFFER_BYTES = 64 << 20
# A body of unknown length (chunked) is charged to the budget in steps of this much beyond what arrived.
CHARGE_STEP_BYTES = 1 << 20
# A Content-Length longer than this many digits is past any body cap (and past what int() should parse).
MAX_LENGTH_DIGITS = 18
LATE = "the hook is busy: this request waited past its deadline; retry"


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    admission_wait_seconds: float
    read_timeout_seconds: float
    # The largest body buffer kept between requests (``SpareBuffer``); 0 keeps none.
    spare_buffer_bytes: int = SPARE_BUFFER_BYTES


class Charge:
    """One request's bytes in the budget, taken as its body is known to arrive, and its deadline: the loop
    time by which its work must start (waiting for room counts; reading the body does not)."""

    def __init__(self, budget: ByteBudget, deadline: float) -> None:
        self.budget = budget
        self.deadline = deadline
        self.held = 0

    async def up_to(self, total: int) -> None:
        """Hold at least ``total`` bytes, waiting for room until the deadline (503 past it)."""
        total = min(total, self.budget.total)
        if total <= self.held:
            return
        wait = max(self.deadline - asyncio.get_running_loop().time(), 0.0)
        await self.budget.acquire(total - self.held, wait)
        self.held = total

    def check_deadline(self) -> None:
        if asyncio.get_running_loop().time() > self.deadline:
            raise Rejected(503, LATE, "busy")

    def release(self) -> None:
        held, self.held = self.held, 0
        if held:
            self.budget.release(held)


class SpareBuffer:
    """One large body buffer kept for the next large request.

    A fresh 30 MB buffer costs ~10 ms of page faults before the first byte lands in it (about a third of
    what reading the body costs); a reused one costs none. At most one buffer, of at most ``max_bytes``,
    is kept, so the idle cost is bounded (README, Operations). A buffer is taken back only once nothing
    refers to it any more (its view releases cleanly), so no request ever sees another's bytes.
    """

    MIN_BYTES = 1 << 20

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._spare: bytearray | None = None

    def take(self, size: int) -> bytearray:
        spare = self._spare
        if spare is not None and self.MIN_BYTES <= size <= len(spare):
            self._spare = None
            return spare
        return bytearray(size)

    def give_back(self, buffer: bytearray, view: memoryview) -> None:
        try:
            view.release()
        except BufferError:
            return  # still referenced (a traceback, say): let it go with its last reference
        if self.MIN_BYTES <= len(buffer) <= self.max_bytes and (
            self._spare is None or len(self._spare) < len(buffer)
        ):
            self._spare = buffer


class BodyGuard:
    """Read, cap and admit the body of each endpoint's requests, then answer them with the endpoint."""

    def __init__(
        self,
        app: ASGIApp,
        limits: Limits,
        endpoints: Mapping[str, Endpoint],
        budget: ByteBudget,
        on_reject: Callable[[str, str], None] = lambda hook, kind: None,
        authenticate: Authenticate | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.endpoints = endpoints
        self.budget = budget
        self.on_reject = on_reject
        self.spare = SpareBuffer(limits.spare_buffer_bytes)
        self.authenticate = authenticate
        self._unauthorized_log = logs.Throttle(UNAUTHORIZED_LOG_SECONDS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.endpoints.get(scope.get("path", "")) if scope["type"] == "http" else None
        if endpoint is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if self.authenticate is not None:
            refusal = self.authenticate(_hook(scope), scope.get("headers", ()))
            if refusal is not None:
                await self._refuse_caller(scope, send, refusal)
                return
        loop = asyncio.get_running_loop()
        charge = Charge(self.budget, scope.get(ARRIVED, loop.time()) + self.limits.admission_wait_seconds)
        try:
            await self._admit_and_answer(scope, receive, send, endpoint, charge)
        except Rejected as rejected:
            await self._reject(scope, send, rejected)
        finally:
            charge.release()

    async def _admit_and_answer(
        self, scope: Scope, receive: Receive, send: Send, endpoint: Endpoint, charge: Charge
    ) -> None:
        """Charge the body's bytes, read it, and answer with ``endpoint`` unless the deadline has passed."""
        declared = _content_length(scope)
        if declared is not None and declared > self.limits.max_body_bytes:
            raise Rejected(413, "request body too large", "too_large")
        await charge.up_to(declared or 0)  # a declared body is charged at once: it is about to be read
        buffer = self.spare.take(declared or 0)
        size = await self._read(receive, buffer, charge)
        charge.check_deadline()  # its answer would come too late for a caller that waits ~10 s
        body = memoryview(buffer)[:size]
        try:
            status, payload = await endpoint(body)  # type: ignore[arg-type]  # bytes-like is enough
        except Exception:
            # Endpoints answer their own errors; this is a bug around them (metrics, logging).
            log.exception("hook endpoint failed unexpectedly (request body not logged)")
            self.on_reject(_hook(scope), "internal")
            status, payload = 503, b'{"error":"internal error in the hook; see the hook\'s logs"}'
        self.spare.give_back(buffer, body)
        del body
        await _respond(send, status, payload)

    async def _read(self, receive: Receive, buffer: bytearray, charge: Charge) -> int:
        """Read the whole body into ``buffer`` (the declared size, grown as needed when chunked): its size.
        The time spent reading moves the deadline: it is a limit on waiting, the read timeout on reading."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(self.limits.read_timeout_seconds):  # one timer, not one per chunk
                return await self._fill(receive, buffer, charge)
        except TimeoutError:
            raise Rejected(408, "request body not received in time", "read_timeout") from None
        finally:
            charge.deadline += loop.time() - started

    async def _fill(self, receive: Receive, body: bytearray, charge: Charge) -> int:
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Rejected(400, "client disconnected", "disconnected")
            chunk = message.get("body", b"")
            if size + len(chunk) > self.limits.max_body_bytes:
                raise Rejected(413, "request body too large", "too_large")
            if size + len(chunk) > charge.held:  # a body of unknown length: charged as it arrives
                await charge.up_to(size + len(chunk) + CHARGE_STEP_BYTES)
            body[size : size + len(chunk)] = chunk
            size += len(chunk)
            if not message.get("more_body", False):
                return size  # may be shorter than declared (the server refuses longer bodies)

    async def _refuse_caller(self, scope: Scope, send: Send, refusal: str) -> None:
        """401, the same answer whatever was wrong; the reason goes to the (throttled) log, not the caller."""
        hook = _hook(scope)
        self.on_reject(hook, "unauthorized")
        suppressed = self._unauthorized_log.admit()
        if suppressed is not None:
            logs.event(
                log, logging.WARNING, "refused", hook=hook, status=401, reason=refusal, since_last=suppressed
            )
        body = b'{"error":"' + UNAUTHORIZED.encode() + b'"}'
        challenge = [(b"www-authenticate", b'Bearer realm="mpi-operator-hook"')]
        await _respond(send, 401, body, close=True, extra=challenge)

    async def _reject(self, scope: Scope, send: Send, rejected: Rejected) -> None:
        hook = _hook(scope)
        self.on_reject(hook, rejected.kind)
        logs.refused(log, hook, rejected.status, rejected.message)
        body = b'{"error":"' + rejected.message.encode() + b'"}'
        # The rest of a refused body is never read: close the connection after answering.
        await _respond(send, rejected.status, body, close=rejected.status in (408, 413, 503))


def _hook(scope: Scope) -> str:
    return str(scope.get("path", "")).lstrip("/")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            # A malformed length is refused by the HTTP server itself; anything odd here counts as "none".
            if not (text.isascii() and text.isdigit()):
                return None
            return int(text) if len(text) <= MAX_LENGTH_DIGITS else sys.maxsize  # past any cap: 413
    return None


async def _respond(
    send: Send, status: int, payload: bytes, *, close: bool = False, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    headers.extend(extra)
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
