"""ASGI middleware that keeps hostile or simply huge hook requests from taking the pod down.

- The body cap is enforced while reading, chunk by chunk, so a chunked body without Content-Length
  is cut off at the cap exactly like a declared one (413), never buffered whole first.
- Memory admission: each hook request reserves its declared size (the cap when undeclared) from one
  byte budget before its body is read; a request that cannot get its bytes within the wait time is
  answered 503 (Metacontroller retries with backoff). Small requests pass side by side; two huge ones
  run one after the other instead of together past the pod's memory limit.
- A body that trickles in slower than the read timeout is answered 408.
The app below sees an ordinary request whose body is already in memory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

GUARDED_PATHS = frozenset({"/sync", "/customize"})


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    memory_budget_bytes: int
    admission_wait_seconds: float
    read_timeout_seconds: float


class Rejected(Exception):
    """The request is refused before the app sees it; the message is fixed text, never input."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


class ByteBudget:
    """A counting semaphore over bytes, first come first served."""

    def __init__(self, total: int, on_change: Callable[[int], None] = lambda in_use: None) -> None:
        self.total = total
        self.in_use = 0
        self._on_change = on_change
        self._changed = asyncio.Condition()

    async def acquire(self, amount: int, wait_seconds: float) -> None:
        amount = min(amount, self.total)
        async with self._changed:
            try:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.in_use + amount <= self.total), wait_seconds
                )
            except TimeoutError:
                raise Rejected(503, "the hook is busy with other large requests; retry", "busy") from None
            self.in_use += amount
            self._on_change(self.in_use)

    async def release(self, amount: int) -> None:
        async with self._changed:
            self.in_use -= min(amount, self.total)
            self._on_change(self.in_use)
            self._changed.notify_all()


class BodyGuard:
    """Read, cap and admit the body of ``/sync`` and ``/customize`` before the app runs."""

    def __init__(
        self,
        app: ASGIApp,
        limits: Limits,
        on_reject: Callable[[str, str], None] = lambda hook, kind: None,
        on_bytes: Callable[[int], None] = lambda in_use: None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.budget = ByteBudget(limits.memory_budget_bytes, on_bytes)
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in GUARDED_PATHS or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        try:
            if declared is not None and declared > self.limits.max_body_bytes:
                raise Rejected(413, "request body too large", "too_large")
            reserved = declared if declared is not None else self.limits.max_body_bytes
            await self.budget.acquire(reserved, self.limits.admission_wait_seconds)
        except Rejected as rejected:
            await self._reject(scope, send, rejected)
            return
        try:
            try:
                body = await self._read(receive)
            except Rejected as rejected:
                await self._reject(scope, send, rejected)
                return
            await self.app(scope, _replay(body, receive), send)
        finally:
            await self.budget.release(reserved)

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.limits.read_timeout_seconds
        while True:
            remaining = deadline - time.monotonic()
            try:
                message = await asyncio.wait_for(receive(), max(remaining, 0.001))
            except TimeoutError:
                raise Rejected(408, "request body not received in time", "read_timeout") from None
            if message["type"] == "http.disconnect":
                raise Rejected(400, "client disconnected", "disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                raise Rejected(413, "request body too large", "too_large")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _reject(self, scope: Scope, send: Send, rejected: Rejected) -> None:
        self.on_reject(str(scope.get("path", "")).lstrip("/"), rejected.kind)
        body = b'{"error":"' + rejected.message.encode() + b'"}'
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if rejected.status in (408, 413):
            headers.append((b"connection", b"close"))  # the rest of the body is never read
        await send({"type": "http.response.start", "status": rejected.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            # A malformed length is refused by the HTTP server itself; anything odd here counts as "none".
            return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body once, then whatever the server says next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
