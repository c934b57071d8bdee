"""Connection limits that act before any request is authenticated, so no client can hold the hook's capacity.

uvicorn (0.55, httptools) has none of them: an idle connection is never timed out before its first request,
header bytes are buffered without bound until the header ends, pipelined requests are queued without bound
(150 connections that each sent 20,000 ``GET /`` and never read took the hook from 66 MB to 644 MB, kept after
they left), and ``limit_concurrency`` counts idle connections, so 63 silent connections turned every request
into a 503, probes included. Its h11 protocol caps an unfinished header's size but not its time, and parses
slower; Go's ``ReadHeaderTimeout`` and nginx's ``client_header_timeout`` are what the deadlines below follow.
``GuardedProtocol`` is uvicorn's own httptools protocol with these limits added where the bytes arrive:

- **header deadline**: a request's line and headers must be complete within ``header_timeout_seconds`` of the
  connection opening, or of the first byte after the last answer (a stray line break counts: it cannot keep a
  connection past its keep-alive), as Go's ``http.Server.ReadHeaderTimeout``; else the connection is closed
  (408 when some bytes came).
- **header bytes**: counted while they arrive, before the parser has them all: past ``max_header_bytes``
  the answer is 431 and the connection is closed, so a header nobody finishes costs at most that much.
- **body deadline**: a body must be complete within ``read_timeout_seconds`` of its headers (408), for every
  path; ``guard.BodyGuard`` enforces the same on the hooks' bodies and answers first. The same time bounds an
  answer the client stopped reading: a write stalled that long closes the connection.
- **pipelining**: reading stops as soon as a request waits behind the one being answered (uvicorn's flow
  control), and at most ``PIPELINE_DEPTH`` requests that came in the same reads wait, each charged (headers
  and buffered body) to the memory budget that bodies use (``budget.ByteBudget``); the parser stops at the
  first request beyond. A request beyond either is not taken: the connection answers the
  ones it took, the last with ``Connection: close``, and closes (RFC 9112 9.3.2: the client retries the rest).
- **connections**: at most ``max_connections`` per process. A new connection beyond it closes the
  connection that has waited longest with no request in progress (503 if it had sent part of a header), so
  idle or trickling clients can never lock out the probes or Metacontroller; a connection whose request is
  being answered, or waits behind one, is never closed for a newcomer. Only when none has been idle for
  ``MIN_IDLE_SECONDS`` (all busy, or a burst of new callers) is the newcomer itself answered 503.
- **what is not HTTP/1.x**: another version (``HTTP/2.0``, HTTP/0.9's bare line) is 505, HTTP/1.1 without
  exactly one ``Host`` 400, a protocol upgrade 400 (the hook serves plain HTTP/1.1 only; uvicorn lost the body
  and hung), malformed framing 400; each closes the connection and is counted, logged at most once a minute.
- **half-close**: a client that ends its side after its request still gets the answer, then the connection
  closes; uvicorn closed at once and the answer was lost.
- **idle keep-alive**: uvicorn's ``timeout_keep_alive`` closes a connection idle between requests.

The protocol finds its ``ConnectionPolicy`` on the app it serves (the hook's ``HookApp`` carries one); an app
without one (bench/noop_app.py) gets the defaults. This subclasses uvicorn internals (the parser callbacks,
``cycle`` and ``pipeline``), so ``tests/hook/test_hostile_clients.py`` and ``test_hostile_framing.py``
drive it through a real ``mpijob serve`` over real sockets: an upgrade that changes them fails there.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.server.connection_policy import default_policy, find_policy

# The loop time a request's headers were complete, in its ASGI scope: the guard's deadline counts from it.
ARRIVED = "mpi_operator_hook.arrived"
# Requests taken behind the one being answered on a connection. Metacontroller, the kubelet and Prometheus
# never pipeline (Go's client does not); a client that does gets this many answered, then a close.
PIPELINE_DEPTH = 4
# What a waiting request costs besides its header bytes: its scope, cycle and parser state (~2 KiB measured).
QUEUED_REQUEST_BYTES = 4096
HTTP_VERSIONS = frozenset({"1.0", "1.1"})


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
BAD_VERSION = _answer(505, b"HTTP Version Not Supported", b"the hook speaks HTTP/1.1 (and 1.0) only")
NO_HOST = _answer(400, b"Bad Request", b"an HTTP/1.1 request needs exactly one Host header")
UPGRADE = _answer(400, b"Bad Request", b"protocol upgrades are not served: send plain HTTP/1.1")
MALFORMED = _answer(400, b"Bad Request", b"malformed HTTP request")


class _NoMore(Exception):
    """Raised from a parser callback: httptools stops parsing the read, and ``data_received`` moves on."""


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits above, enforced before the app sees a request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = find_policy(self.app) or default_policy(self.config)
        self._admitted = False
        self._stopped = False  # closed by a limit: the parser's remaining callbacks are ignored
        self._taking_no_more = False  # the pipeline is full: answer what was taken, then close
        self._reading_headers = False
        self._in_message = False  # a request begun and not yet wholly received
        self._raw_header_bytes = 0  # received while the header is incomplete
        self._received_any = False
        self._deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        # The bytes charged for each request waiting behind the one being answered, oldest first.
        self._waiting: deque[int] = deque()

    # ---------------------------------------------------------------------------------- the transport

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
        self._disarm_write()
        self._give_back_waiting()
        if self._admitted:
            self._admitted = False
            self.policy.closed(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._stopped or self._taking_no_more:
            return
        self._received_any = True
        if self._deadline is None and not self._answering():
            # Bytes between requests (a line break is skipped by the parser): the next header's deadline.
            self._arm(self.policy.limits.header_timeout_seconds, self._header_timeout)
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._stop(UPGRADE, "upgrade")
        except httptools.HttpParserError:  # a callback's _NoMore among them: the rest of ``data`` is unparsed
            if not self._ignoring():
                self._stop(MALFORMED, "malformed")
        if self._reading_headers and not self._stopped:
            self._raw_header_bytes += len(data)
            if self._raw_header_bytes > self.policy.limits.max_header_bytes:
                self._stop(HEADER_TOO_LARGE, "header_too_large")

    def eof_received(self) -> bool | None:  # type: ignore[override]
        """The client ended its side: still answer the requests taken (True keeps the transport open to
        write), then close; with none, or with one still arriving (it never will), close now."""
        if self._stopped or self._in_message or not self._answering():
            return None
        self.cycle.keep_alive = False  # the last request taken closes the connection once answered
        return True

    def pause_writing(self) -> None:
        """The client stopped reading its answer: it has the read deadline to take it up again."""
        super().pause_writing()
        if self._write_deadline is None:
            seconds = self.policy.limits.read_timeout_seconds
            self._write_deadline = self.loop.call_later(seconds, self._stalled)

    def resume_writing(self) -> None:
        self._disarm_write()
        super().resume_writing()

    # -------------------------------------------------------------------------------- parser callbacks

    def on_message_begin(self) -> None:
        self._unless_ignoring()
        super().on_message_begin()
        self._reading_headers = True
        self._in_message = True
        self._raw_header_bytes = 0
        if self._deadline is None:  # the next request on a kept-alive connection: its headers' deadline
            self._arm(self.policy.limits.header_timeout_seconds, self._header_timeout)

    def on_url(self, url: bytes) -> None:
        self._unless_ignoring()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._unless_ignoring()
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._unless_ignoring()
        self._reading_headers = False
        limits = self.policy.limits
        size = _header_size(self.url, self.headers)
        if size > limits.max_header_bytes:
            self._stop(HEADER_TOO_LARGE, "header_too_large")
            return
        refusal = self._not_http11()
        if refusal is not None:
            self._stop(*refusal)
            return
        if self._answering():
            cost = size + QUEUED_REQUEST_BYTES
            if len(self.pipeline) >= PIPELINE_DEPTH or not self.policy.take_bytes(cost):
                self._take_no_more()
                return
            self._waiting.append(cost)
        self.policy.busy(self)
        self._arm(limits.read_timeout_seconds + limits.body_deadline_grace_seconds, self._body_timeout)
        self.scope[ARRIVED] = self.loop.time()  # type: ignore[literal-required]
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._unless_ignoring()
        if self.pipeline and self.pipeline[0][0] is self.cycle:  # buffered for a request that waits
            self._waiting[-1] += len(body)
            if not self.policy.charge_bytes(len(body)):  # they are here already: charged, and no more taken
                self._take_no_more()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._unless_ignoring()
        self._disarm()
        self._in_message = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        waiting = len(self.pipeline)
        super().on_response_complete()  # starts the next waiting request, if any
        if len(self.pipeline) < waiting and self._waiting:
            self.policy.give_bytes(self._waiting.popleft())  # it runs now: its body is the guard's to charge
        if self._stopped or not self._admitted or self.transport.is_closing():
            return
        if not self._answering():
            self.policy.idle(self)
            self._received_any = False

    # ------------------------------------------------------------------------------------- the limits

    def evict(self) -> None:
        """Make room for a newer connection: a 503 if this one had sent part of a request, then close."""
        self._stop(BUSY if self._received_any else b"", "evicted")

    def _answering(self) -> bool:
        """A request taken and not yet answered (being answered, or waiting behind one)."""
        return self.cycle is not None and not self.cycle.response_complete

    def _ignoring(self) -> bool:
        return self._stopped or self._taking_no_more

    def _unless_ignoring(self) -> None:
        """In a parser callback: stop parsing what a connection that takes no more sent (a read can hold
        14,000 pipelined requests; their callbacks, even doing nothing, cost the loop ~20 ms)."""
        if self._ignoring():
            raise _NoMore

    def _not_http11(self) -> tuple[bytes, str] | None:
        """Why this request is not one the hook serves (version, Host, upgrade), or None."""
        version = self.parser.get_http_version()
        if version not in HTTP_VERSIONS:
            return BAD_VERSION, "http_version"
        if version == "1.1" and sum(name == b"host" for name, _ in self.headers) != 1:
            return NO_HOST, "no_host"
        if self.parser.should_upgrade():
            return UPGRADE, "upgrade"
        return None

    def _take_no_more(self) -> None:
        """The pipeline is full (or the budget has no room): answer what was taken, the last with a close;
        what the client sent beyond is neither parsed nor read."""
        self._taking_no_more = True
        self.policy.refused("pipeline_full")
        self._disarm()
        self.flow.pause_reading()
        self.cycle.keep_alive = False

    def _header_timeout(self) -> None:
        self._deadline = None
        self._stop(HEADER_TIMEOUT if self._received_any else b"", "header_timeout")

    def _body_timeout(self) -> None:
        self._deadline = None
        started = self.cycle is not None and self.cycle.response_started
        self._stop(b"" if started else BODY_TIMEOUT, "read_timeout")

    def _stalled(self) -> None:
        """The client has not taken its answer for the read deadline: drop it (and what is buffered)."""
        self._write_deadline = None
        self._stop(b"", "write_timeout")
        self.transport.abort()

    def _stop(self, answer: bytes, reason: str) -> None:
        """Answer (if anything) and close: nothing more is parsed, and a running request sees a disconnect."""
        if self._stopped:
            return
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

    def _give_back_waiting(self) -> None:
        while self._waiting:
            self.policy.give_bytes(self._waiting.pop())

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _disarm_write(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None


def _header_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """A complete header's size as parsed, once per request: its URL and each ``name: value`` line. A header
    that arrived in one read is counted here; one still arriving, by the bytes received."""
    return len(url) + sum(len(name) + len(value) + 4 for name, value in headers)
