"""``MPI_OPERATOR_METRICS_PORT``: ``/metrics`` alone on a second port, with a bounded number of threads.

prometheus_client's own ``start_http_server`` starts a thread per connection and waits on a silent client
for ever: 300 slow connections held 308 threads. Here at most ``max_connections`` connections are served
at once, each in its own thread; one more is closed as soon as it is accepted (a scraper retries at its
next interval), and a client that sends or reads nothing for ``timeout_seconds`` is dropped, so a slot
comes free. One request per connection (HTTP/1.0): a keep-alive cannot hold a slot between scrapes. The
answer is prometheus_client's exposition (text or OpenMetrics, gzip when asked), only at ``/metrics``.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import sys
import threading
from typing import Any
from urllib.parse import urlsplit

from prometheus_client.exposition import MetricsHandler
from prometheus_client.registry import Collector

log = logging.getLogger("mpi_operator_hook.metrics_port")

MAX_CONNECTIONS = 8
TIMEOUT_SECONDS = 10.0
# Connections the kernel holds before they are accepted: a burst is accepted (and closed) rather than left
# in SYN retries.
BACKLOG = 128


class _MetricsOnly(MetricsHandler):
    """prometheus_client's handler, at ``/metrics`` only; the class attributes are set per server."""

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

    def __init__(self, address: tuple[str, int], handler: type[_MetricsOnly], slots: int) -> None:
        self.address_family = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)[0][0]
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(slots)
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
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone or too slow is no error of ours (socketserver would print a traceback to stderr);
        anything else is logged once, as a log line."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        log.exception("serving /metrics failed")

    def start(self) -> None:
        self._serving = threading.Thread(target=self.serve_forever, name="metrics-port", daemon=True)
        self._serving.start()

    def shutdown(self) -> None:
        """Stop accepting, close the listening socket, and wait for the accepting thread (connections in
        flight end on their own, within their timeout)."""
        super().shutdown()
        self.server_close()
        if self._serving is not None:
            self._serving.join(5.0)


def serve_metrics(
    host: str,
    port: int,
    registry: Collector,
    max_connections: int = MAX_CONNECTIONS,
    timeout_seconds: float = TIMEOUT_SECONDS,
) -> MetricsServer:
    """Serve ``registry`` at ``http://host:port/metrics`` from a background thread, until ``shutdown()``.
    Raises ``OSError`` when the port cannot be bound (in use, no permission)."""
    handler = type("MetricsPortHandler", (_MetricsOnly,), {"registry": registry, "timeout": timeout_seconds})
    server = MetricsServer((host, port), handler, max_connections)
    server.start()
    return server
