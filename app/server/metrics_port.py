"""``MPI_OPERATOR_METRICS_PORT``: ``/metrics`` alone on a second port, with a bounded number of threads.

prometheus_client's own ``start_http_server`` starts a thread per connection and waits on a silent client
for ever: 300 slow connections held 308 threads. Here at most ``max_connections`` connections are served
at once, each in its own thread; one more is closed as soon as it is accepted (a scraper retries at its
next interval). Each connection has ``timeout_seconds`` in all, from its accept to its answer's last byte
(the hook's header deadline): a client that trickles its request a byte at a time, or reads its answer so,
is cut then, so a slot comes free (a per-read timeout let 8 trickling clients hold every slot). The request
line and headers together may be ``max_header_bytes`` (the hook port's cap; 431 beyond), not 64 KiB a line.
One request per connection (HTTP/1.0): a keep-alive cannot hold a slot between scrapes. The answer is
prometheus_client's exposition (text or OpenMetrics, gzip when asked), only at ``/metrics``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import socketserver
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from prometheus_client.exposition import MetricsHandler
from prometheus_client.registry import Collector

from app.settings.transport import TransportSettings

log = logging.getLogger("mpi_operator_hook.metrics_port")

MAX_CONNECTIONS = 8
# The hook port's header deadline and header cap, by default (the settings name both).
TIMEOUT_SECONDS: float = TransportSettings.model_fields["header_timeout_seconds"].default
MAX_HEADER_BYTES: int = TransportSettings.model_fields["max_header_bytes"].default
HEADER_TOO_LARGE = (
    b"HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
)
# Connections the kernel holds before they are accepted: a burst is accepted (and closed) rather than left
# in SYN retries.
BACKLOG = 128


class _MetricsOnly(MetricsHandler):
    """prometheus_client's handler, at ``/metrics`` only; the class attributes are set per server."""

    max_header_bytes = MAX_HEADER_BYTES

    def handle(self) -> None:
        """One request, its head read whole under the cap before it is parsed."""
        head = self._read_head()
        if head is not None:
            self.rfile = io.BytesIO(head)
            self.handle_one_request()

    def _read_head(self) -> bytes | None:
        """The request line and headers, up to the blank line; None when the client went (or was cut at the
        deadline) first, or sent more than the cap (answered 431)."""
        head = b""
        while True:
            line = self.rfile.readline(self.max_header_bytes - len(head) + 1)
            head += line
            if len(head) > self.max_header_bytes:
                self.wfile.write(HEADER_TOO_LARGE)
                return None
            if not line.endswith(b"\n"):
                return None
            if line in (b"\r\n", b"\n") and len(head) > len(line):
                return head

    def do_GET(self) -> None:
        if urlsplit(self.path).path != "/metrics":
            self.send_error(404, "only /metrics is served here")
            return
        super().do_GET()


class MetricsServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """A thread per connection, at most ``slots`` of them; ``shutdown`` stops serving and frees the port."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = BACKLOG

    def __init__(
        self, address: tuple[str, int], handler: type[_MetricsOnly], slots: int, deadline_seconds: float
    ) -> None:
        self.address_family = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)[0][0]
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(slots)
        self._deadline_seconds = deadline_seconds
        self._deadlines = Deadlines()
        self._serving: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve in a new thread if a slot is free; else close the connection at once."""
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve one connection, cut at its deadline whatever it is doing."""
        self._deadlines.add(request, time.monotonic() + self._deadline_seconds)
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._deadlines.remove(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone or too slow is no error of ours (socketserver would print a traceback to stderr);
        anything else is logged once, as a log line."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        log.exception("serving /metrics failed")

    def start(self) -> None:
        self._deadlines.start()
        self._serving = threading.Thread(target=self.serve_forever, name="metrics-port", daemon=True)
        self._serving.start()

    def shutdown(self) -> None:
        """Stop accepting, close the listening socket, and wait for the accepting thread (connections in
        flight end on their own, within their timeout)."""
        super().shutdown()
        self.server_close()
        self._deadlines.stop()
        if self._serving is not None:
            self._serving.join(5.0)


class Deadlines:
    """One thread that ends each connection at its deadline (a timer thread each would double the threads)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[socket.socket, float] = {}
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="metrics-port-deadlines", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, connection: socket.socket, at: float) -> None:
        with self._changed:
            self._due[connection] = at
            self._changed.notify()

    def remove(self, connection: socket.socket) -> None:
        with self._changed:
            self._due.pop(connection, None)

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def _run(self) -> None:
        with self._changed:
            while not self._stopped:
                now = time.monotonic()
                for connection, at in list(self._due.items()):
                    if at <= now:
                        del self._due[connection]
                        _cut(connection)
                soonest = min(self._due.values(), default=None)
                self._changed.wait(None if soonest is None else max(soonest - now, 0.0))


def _cut(connection: socket.socket) -> None:
    """End a connection: its thread's read or write returns at once (the thread closes it)."""
    with contextlib.suppress(OSError):  # already closed
        connection.shutdown(socket.SHUT_RDWR)


def serve_metrics(
    host: str,
    port: int,
    registry: Collector,
    max_connections: int = MAX_CONNECTIONS,
    timeout_seconds: float = TIMEOUT_SECONDS,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> MetricsServer:
    """Serve ``registry`` at ``http://host:port/metrics`` from a background thread, until ``shutdown()``.
    Raises ``OSError`` when the port cannot be bound (in use, no permission)."""
    attributes = {"registry": registry, "timeout": timeout_seconds, "max_header_bytes": max_header_bytes}
    handler = type("MetricsPortHandler", (_MetricsOnly,), attributes)
    server = MetricsServer((host, port), handler, max_connections, timeout_seconds)
    server.start()
    return server
