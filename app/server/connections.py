"""Connection limits that act before any request is authenticated, so no client can hold the hook's capacity.

uvicorn (0.55, httptools) has none of them: an idle connection is never timed out before its first request,
header bytes are buffered without bound until the header ends, and ``limit_concurrency`` counts idle
connections, so 63 silent connections turned every request into a 503, probes included. Its h11 protocol caps
an unfinished header's size (``h11_max_incomplete_event_size``) but not its time, and parses slower; Go's
``ReadHeaderTimeout`` and nginx's ``client_header_timeout`` are what the deadlines below follow.
``GuardedProtocol`` is uvicorn's own httptools protocol with these limits added where the bytes arrive:

- **header deadline**: a request's line and headers must be complete within ``header_timeout_seconds`` of the
  connection opening (or of the request's first byte on a kept-alive connection), as Go's
  ``http.Server.ReadHeaderTimeout``; else the connection is closed (408 when some bytes came).
- **header bytes**: counted while they arrive, before the parser has them all: past ``max_header_bytes``
  the answer is 431 and the connection is closed, so a header nobody finishes costs at most that much.
- **body deadline**: a body must be complete within ``body_timeout_seconds`` of its headers (408), for every
  path; ``guard.BodyGuard`` enforces the same on the hooks' bodies and answers first.
- **connections**: at most ``max_connections`` per process. A new connection beyond it closes the
  connection that has waited longest without a request in progress (503 if it had sent part of one), so
  idle or trickling clients can never lock out the probes or Metacontroller; only when none has been idle
  for ``MIN_IDLE_SECONDS`` (all busy, or a burst of new callers) is the newcomer itself answered 503.
- **idle keep-alive**: uvicorn's ``timeout_keep_alive`` closes a connection idle between requests.

The protocol finds its ``ConnectionPolicy`` on the app it serves (the hook's ``HookApp`` carries one); an app
without one (bench/noop_app.py) gets the defaults. This subclasses uvicorn internals (``on_message_begin``
and friends), so ``tests/hook/test_hostile_clients.py`` drives it through a real ``mpijob serve`` over real
sockets: an upgrade that changes them fails there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.server import logs

log = logging.getLogger("mpi_operator_hook")

# The loop time a request's headers were complete, in its ASGI scope: the guard's deadline counts from it.
ARRIVED = "mpi_operator_hook.arrived"
# A connection is evicted only once it has been idle this long: a burst of new callers gets its turn.
MIN_IDLE_SECONDS = 1.0
# One log line per this many seconds for connections closed by a limit, with how many since the last line.
REFUSED_LOG_SECONDS = 60.0


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 2048
    max_header_bytes: int = 32 * 1024
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 20.0
    # The protocol's body deadline stands behind the body guard's (same length, started a little later):
    # this much later, so that on the hooks the guard answers and counts first.
    body_deadline_grace_seconds: float = 1.0


@dataclass
class ConnectionPolicy:
    """The limits of one server process and the connections it has open, oldest idle first."""

    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    on_refuse: Callable[[str], None] = lambda reason: None
    on_open: Callable[[int], None] = lambda count: None
    clock: Callable[[], float] = time.monotonic
    _open: int = 0
    # Connections with no request in progress, in the order they became so (the first is evicted first).
    _idle: dict[GuardedProtocol, float] = field(default_factory=dict)
    _log: logs.Throttle = field(default_factory=lambda: logs.Throttle(REFUSED_LOG_SECONDS))

    def admit(self, protocol: GuardedProtocol) -> bool:
        """Room for a new connection: by evicting the longest idle one when full; False when none has been
        idle for ``MIN_IDLE_SECONDS`` (a burst of new callers is not evicted before it could speak)."""
        if self._open >= self.limits.max_connections:
            victim = self._evictable()
            if victim is None:
                return False
            victim.evict()
        self._open += 1
        self.on_open(self._open)
        self.idle(protocol)
        return True

    def _evictable(self) -> GuardedProtocol | None:
        for protocol, since in self._idle.items():
            return protocol if self.clock() - since >= MIN_IDLE_SECONDS else None
        return None

    def idle(self, protocol: GuardedProtocol) -> None:
        self._idle.pop(protocol, None)
        self._idle[protocol] = self.clock()

    def busy(self, protocol: GuardedProtocol) -> None:
        self._idle.pop(protocol, None)

    def closed(self, protocol: GuardedProtocol) -> None:
        self._idle.pop(protocol, None)
        self._open -= 1
        self.on_open(self._open)

    def refused(self, reason: str) -> None:
        """Count a connection closed by a limit; log at most one line a minute, however many there are."""
        self.on_refuse(reason)
        held = self._log.admit()
        if held is not None:
            logs.event(log, logging.WARNING, "connection closed by a limit", reason=reason, since_last=held)

    @property
    def open_connections(self) -> int:
        return self._open


def find_policy(app: Any) -> ConnectionPolicy | None:
    """The policy of the app uvicorn serves, under whatever middleware uvicorn wrapped it in."""
    for _ in range(8):
        policy = getattr(app, "connection_policy", None)
        if isinstance(policy, ConnectionPolicy):
            return policy
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


def default_policy(config: Any) -> ConnectionPolicy:
    """For an app without a policy: the defaults, one per server (its config), so that its connections are
    counted together."""
    policy: ConnectionPolicy | None = getattr(config, "mpi_operator_hook_connections", None)
    if policy is None:
        policy = ConnectionPolicy()
        config.mpi_operator_hook_connections = policy
    return policy


def _answer(status: int, reason: bytes, message: bytes) -> bytes:
    body = b'{"error":"' + message + b'"}'
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
        % (status, reason, len(body))
    ) + body


HEADER_TIMEOUT = _answer(408, b"Request Timeout", b"request headers not received in time")
BODY_TIMEOUT = _answer(408, b"Request Timeout", b"request body not received in time")
HEADER_TOO_LARGE = _answer(431, b"Request Header Fields Too Large", b"request headers too large")
BUSY = _answer(503, b"Service Unavailable", b"the hook has too many connections; retry")


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits above, enforced before the app sees a request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = find_policy(self.app) or default_policy(self.config)
        self._admitted = False
        self._stopped = False  # closed by a limit: the parser's remaining callbacks are ignored
        self._reading_headers = False
        self._raw_header_bytes = 0  # received while the header is incomplete
        self._received_any = False
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.policy.admit(self):
            self._stopped = True
            self.policy.refused("too_many_connections")
            transport.write(BUSY)
            transport.close()
            return
        self._admitted = True
        self._arm(self.policy.limits.header_timeout_seconds, self._header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._admitted:
            self._admitted = False
            self.policy.closed(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._stopped:
            return
        self._received_any = True
        super().data_received(data)
        if self._reading_headers and not self._stopped:
            self._raw_header_bytes += len(data)
            if self._raw_header_bytes > self.policy.limits.max_header_bytes:
                self._stop(HEADER_TOO_LARGE, "header_too_large")

    def on_message_begin(self) -> None:
        if self._stopped:
            return
        super().on_message_begin()
        self._reading_headers = True
        self._raw_header_bytes = 0
        if self._deadline is None:  # the next request on a kept-alive connection: its headers' deadline
            self._arm(self.policy.limits.header_timeout_seconds, self._header_timeout)

    def on_headers_complete(self) -> None:
        if self._stopped:
            return
        self._reading_headers = False
        limits = self.policy.limits
        if _header_size(self.url, self.headers) > limits.max_header_bytes:
            self._stop(HEADER_TOO_LARGE, "header_too_large")
            return
        self.policy.busy(self)
        self._arm(limits.body_timeout_seconds + limits.body_deadline_grace_seconds, self._body_timeout)
        self.scope[ARRIVED] = self.loop.time()  # type: ignore[literal-required]
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._stopped:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._stopped:
            self._disarm()
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._admitted and not self._stopped and not self.transport.is_closing():
            self.policy.idle(self)
            self._received_any = False

    def evict(self) -> None:
        """Make room for a newer connection: a 503 if this one had sent part of a request, then close."""
        self._stop(BUSY if self._received_any else b"", "evicted")

    def _header_timeout(self) -> None:
        self._deadline = None
        self._stop(HEADER_TIMEOUT if self._received_any else b"", "header_timeout")

    def _body_timeout(self) -> None:
        self._deadline = None
        started = self.cycle is not None and self.cycle.response_started
        self._stop(b"" if started else BODY_TIMEOUT, "body_timeout")

    def _stop(self, answer: bytes, reason: str) -> None:
        """Answer (if anything) and close: nothing more is parsed, and a running request sees a disconnect."""
        self.policy.refused(reason)
        self._stopped = True
        self._disarm()
        if self._admitted:  # the slot is free now, not when the loop reports the socket closed
            self._admitted = False
            self.policy.closed(self)
        if answer and not self.transport.is_closing():
            self.transport.write(answer)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
        self.transport.close()

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def _header_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """A complete header's size as parsed, once per request: its URL and each ``name: value`` line. A header
    that arrived in one read is counted here; one still arriving, by the bytes received."""
    return len(url) + sum(len(name) + len(value) + 4 for name, value in headers)
