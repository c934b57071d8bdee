"""``app.server.metrics_port``: the metrics port over real sockets on 127.0.0.1. A flood of slow
connections holds at most its cap of threads and is dropped after the timeout; a scrape then succeeds."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from app.server.metrics_port import MetricsServer, serve_metrics

CAP = 8
TIMEOUT = 1.0


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    Counter("flood_test_scrapes", "A counter only this test's registry has", registry=registry).inc(3)
    served = serve_metrics("127.0.0.1", 0, registry, max_connections=CAP, timeout_seconds=TIMEOUT)
    try:
        yield served
    finally:
        served.shutdown()


def scrape(port: int, path: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def test_a_scrape_gets_the_registry_and_other_paths_get_404(server: MetricsServer) -> None:
    status, text = scrape(server.port)
    assert status == 200 and "flood_test_scrapes_total 3.0" in text
    assert scrape(server.port, "/metrics?name[]=flood_test_scrapes_total")[0] == 200
    assert scrape(server.port, "/")[0] == 404 and scrape(server.port, "/sync")[0] == 404


def test_300_slow_connections_hold_at_most_the_cap_of_threads_then_a_scrape_succeeds(
    server: MetricsServer,
) -> None:
    before = threading.active_count()
    slow: list[socket.socket] = []
    most = before
    try:
        for _ in range(300):  # each connects and sends nothing, as a slowloris does
            client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            client.sendall(b"GET /metrics HTTP/1.1\r\n")  # a request line, never the end of the headers
            slow.append(client)
            most = max(most, threading.active_count())
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            most = max(most, threading.active_count())
            time.sleep(0.01)
        assert most - before <= CAP, f"{most - before} threads for 300 slow connections (cap {CAP})"
        # Every slow connection is closed by the server: at once past the cap, after the timeout within it.
        closed = 0
        for client in slow:
            client.settimeout(TIMEOUT + 4)
            try:
                closed += client.recv(1024) == b""
            except ConnectionResetError:
                closed += 1
        assert closed == 300
    finally:
        for client in slow:
            client.close()
    status, text = scrape(server.port)
    assert status == 200 and "flood_test_scrapes_total" in text
    deadline = time.monotonic() + TIMEOUT + 2
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert threading.active_count() <= before  # every handler thread ended


def test_a_client_that_never_reads_is_dropped_after_the_timeout(server: MetricsServer) -> None:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as client:
        client.settimeout(TIMEOUT + 4)
        assert client.recv(1) == b""  # sent nothing: closed by the server
    assert TIMEOUT * 0.9 <= time.monotonic() - started < TIMEOUT + 3


def test_shutdown_frees_the_port_and_a_bound_port_raises_oserror() -> None:
    registry = CollectorRegistry()
    first = serve_metrics("127.0.0.1", 0, registry)
    port = first.port
    with pytest.raises(OSError):
        serve_metrics("127.0.0.1", port, registry)
    first.shutdown()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    again = serve_metrics("127.0.0.1", port, registry)  # the port is free again
    try:
        assert scrape(again.port)[0] == 200
    finally:
        again.shutdown()


def test_a_client_gone_before_its_answer_prints_nothing(
    server: MetricsServer, capfd: pytest.CaptureFixture[str]
) -> None:
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as client:
            client.sendall(b"GET /metrics HTTP/1.1\r\n")  # then gone: the answer meets a closed socket
    assert scrape(server.port)[0] == 200
    time.sleep(0.2)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Exception occurred" not in out + err
