"""Hostile clients, second round, against a real ``mpijob serve`` over loopback: what an attacker without the
token tried next. Pipelined requests that are never read, a pipelined sync behind a probe, trickled scrapes
on the metrics port, a FIFO swapped in for the caller token, and framing that is not HTTP/1.x (huge lengths,
upgrades, other versions, no Host, a half-closed client, line breaks that kept a connection open).

Each test asserts what the attacker cannot do, while the probes Metacontroller and the kubelet send keep
answering (``/healthz`` within a second, an authenticated sync 200). Each failed on the hook before these
limits (app/server/connections.py, auth.py, metrics_port.py).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

import pytest

from app.server.connections import PIPELINE_DEPTH
from tests.e2e.processes import free_port
from tests.support import served
from tests.support.hostile import (
    HEADER_TIMEOUT,
    READ_TIMEOUT,
    SHORT_TIMEOUTS,
    TOKEN,
    WIRE,
    allow_sockets,
    assert_serving,
    connect,
    healthz_seconds,
    metric,
    read_answer,
    rss_bytes,
    serving,
    sync_status,
)

MIB = 1024 * 1024
AUTH = f"Authorization: Bearer {TOKEN}\r\n"
# A hook of its own for a test, stopped when the test ends however it ends.
own_hook = contextmanager(serving)


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[served.Served]:
    yield from serving(
        tmp_path_factory, "framing", SHORT_TIMEOUTS | {"MPI_OPERATOR_METRICS_PORT": str(free_port())}
    )


def metrics_port(hook: served.Served) -> int:
    return int(served_setting(hook, "MPI_OPERATOR_METRICS_PORT"))


def served_setting(hook: served.Served, name: str) -> str:
    environ = Path(f"/proc/{hook.process.pid}/environ").read_bytes().split(b"\0")
    return next(item.split(b"=", 1)[1].decode() for item in environ if item.startswith(name.encode() + b"="))


def sync_request(body: bytes = WIRE, extra: str = "") -> bytes:
    head = f"POST /sync HTTP/1.1\r\nHost: hook\r\n{AUTH}{extra}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def response(stream: BinaryIO) -> tuple[int, bytes]:
    """The next answer (status, body) on a kept-alive connection read through ``stream``."""
    status = int(stream.readline().split()[1])
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, stream.read(length)


def statuses(data: bytes) -> list[bytes]:
    """The status codes of the answers in ``data``, in order."""
    return re.findall(rb"HTTP/1\.1 (\d{3}) ", data)


# ------------------------------------------------------------------------------------------ pipelining


def test_sixty_pipelining_clients_that_never_read_cost_the_hook_nothing_lasting(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each sends ``GET /`` 20,000 times (520 KB) with a 2 KiB receive buffer and never reads. Before, the
    hook queued every one of them (60 connections: +267 MB, kept after they closed; /healthz timed out)."""
    with own_hook(tmp_path_factory, "pipelining", SHORT_TIMEOUTS) as hook:
        assert_serving(hook)  # warmed up: the first sync imports what it needs
        start = rss_bytes(hook)
        flood = b"GET / HTTP/1.1\r\nHost: hook\r\n\r\n" * 20_000
        allow_sockets(512)
        with ExitStack() as stack:
            clients = []
            for _ in range(60):
                client = stack.enter_context(socket.socket())
                client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
                client.connect(("127.0.0.1", hook.port))
                clients.append(client)
            senders = [threading.Thread(target=_send_all, args=(c, flood), daemon=True) for c in clients]
            for sender in senders:
                sender.start()
            peak = start
            for _ in range(10):
                time.sleep(0.2)
                assert healthz_seconds(hook) < 1.0
                assert sync_status(hook) == 200
                peak = max(peak, rss_bytes(hook))
            assert peak - start < 100 * MIB, f"RSS {start / MIB:.0f} -> {peak / MIB:.0f} MiB"
            assert metric(hook, 'mpi_operator_hook_connections_closed_total{reason="pipeline_full"}') >= 60
        time.sleep(0.5)
        assert rss_bytes(hook) - start < 50 * MIB
        assert_serving(hook)


def _send_all(client: socket.socket, data: bytes) -> None:
    client.settimeout(5)
    with suppress(
        OSError
    ):  # the hook stopped reading: what it did not take stays in the kernel, then is dropped
        client.sendall(data)


def test_a_full_pipeline_is_answered_then_closed_and_the_rest_is_never_read(hook: served.Served) -> None:
    with connect(hook) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n" * (PIPELINE_DEPTH + 6))
        data = read_answer(sock, timeout=5)
    assert statuses(data) == [b"200"] * (PIPELINE_DEPTH + 1), data[-300:]
    assert data.rsplit(b"HTTP/1.1 ", 1)[1].count(b"connection: close") == 1  # the last one says so


def test_a_pipelined_sync_is_answered_and_never_evicted(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A probe, then a sync with part of its body, on one connection; eight newcomers arrive at a hook with
    room for eight. Before, the sync's connection counted as idle once the probe was answered, and was cut."""
    small = {"MPI_OPERATOR_MAX_CONNECTIONS": "8"}
    with own_hook(tmp_path_factory, "pipelined-sync", small) as hook:
        request = sync_request()
        with connect(hook) as sock, ExitStack() as newcomers:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n" + request[:-100])
            sock.settimeout(10)
            stream = sock.makefile("rb")
            assert response(stream)[0] == 200
            time.sleep(1.2)  # long past MIN_IDLE_SECONDS: an idle connection could be evicted now
            for _ in range(8):
                newcomer = newcomers.enter_context(connect(hook))
                newcomer.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n")
                newcomer.settimeout(5)
                assert newcomer.recv(65536).split(b" ")[1] in (b"200", b"503")
            sock.sendall(request[-100:])
            status, body = response(stream)
            assert status == 200 and json.loads(body)["children"]
        assert metric(hook, 'mpi_operator_hook_connections_closed_total{reason="evicted"}') == 0


def test_an_answer_the_client_stopped_reading_is_dropped_at_the_read_deadline(hook: served.Served) -> None:
    """Two syncs whose answers are 3,000 worker Pods each (6.6 MB, past what the kernel buffers), into a
    2 KiB receive buffer never read: the answer stalls, and the hook drops it instead of holding the
    connection (and the answer it buffered) for ever."""
    request = json.loads(WIRE)
    request["parent"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3000
    before = metric(hook, 'mpi_operator_hook_connections_closed_total{reason="write_timeout"}')
    with closing(socket.socket()) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        client.connect(("127.0.0.1", hook.port))
        client.sendall(sync_request(json.dumps(request).encode()) * 2)
        deadline = time.monotonic() + READ_TIMEOUT + 10
        while metric(hook, 'mpi_operator_hook_connections_closed_total{reason="write_timeout"}') == before:
            assert time.monotonic() < deadline, "a stalled answer held its connection"
            time.sleep(0.2)
    assert_serving(hook)


# ------------------------------------------------------------------------------------------ framing


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(b"GET /healthz HTTP/2.0\r\nHost: hook\r\n\r\n", b"505", id="HTTP/2.0"),
        pytest.param(b"GET /healthz\r\n\r\n", b"505", id="HTTP/0.9"),
        pytest.param(b"GET /healthz HTTP/1.1\r\n\r\n", b"400", id="1.1-without-Host"),
        pytest.param(b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", b"400", id="1.1-two-Hosts"),
        pytest.param(b"GET /healthz HTTP/1.0\r\n\r\n", b"200", id="1.0-without-Host"),
        pytest.param(
            f"POST /sync HTTP/1.1\r\nHost: hook\r\n{AUTH}Content-Length: {'1' * 19}\r\n\r\n{{".encode(),
            b"413",
            id="19-digit-length",
        ),
        pytest.param(sync_request(extra="Connection: Upgrade\r\nUpgrade: h2c\r\n"), b"400", id="upgrade-h2c"),
        pytest.param(
            sync_request(extra="Connection: Upgrade\r\nUpgrade: websocket\r\n"),
            b"400",
            id="upgrade-websocket",
        ),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: hook\r\nContent-Length: -1\r\n\r\n", b"400", id="malformed"
        ),
    ],
)
def test_what_is_not_http_1x_is_answered_at_once_and_closed(
    hook: served.Served, request_bytes: bytes, status: bytes
) -> None:
    started = time.monotonic()
    with connect(hook) as sock:
        sock.sendall(request_bytes)
        answer = read_answer(sock, timeout=5)  # returns once the hook closes: it never waits for more
    assert answer.split(b" ")[1] == status, answer[:160]
    assert time.monotonic() - started < 1.0
    if status != b"200":
        assert b'{"error":"' in answer and b"connection: close" in answer
    assert_serving(hook)


def test_line_breaks_between_requests_do_not_keep_a_connection_past_the_header_deadline(
    hook: served.Served,
) -> None:
    """uvicorn's keep-alive timer stopped at the first byte after an answer; a stray line break never starts
    a request, so nothing else closed the connection."""
    with connect(hook) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < HEADER_TIMEOUT * 3:
            try:
                sock.sendall(b"\r\n")
            except OSError:
                closed = True
                break
            sock.settimeout(0.25)
            try:
                if sock.recv(65536) == b"":
                    closed = True
                    break
            except TimeoutError:
                pass
            except ConnectionResetError:
                closed = True
                break
        assert closed and time.monotonic() - started < HEADER_TIMEOUT + 1.5


@pytest.mark.parametrize("path", ["/healthz", "/sync"])
def test_a_client_that_half_closes_still_gets_its_answer_under_load(hook: served.Served, path: str) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: hook\r\n\r\n" if path == "/healthz" else sync_request()
    results: list[bytes] = []

    def one() -> None:
        with connect(hook) as sock:
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)
            results.append(read_answer(sock, timeout=10)[:12])

    allow_sockets(1024)
    threads = [threading.Thread(target=one) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == [b"HTTP/1.1 200"] * 200
    assert "Traceback" not in hook.log_text() and " ERROR " not in hook.log_text()


# ------------------------------------------------------------------------------------------ the metrics port


def test_trickled_scrapes_are_cut_at_their_deadline_and_the_header_cap_holds(hook: served.Served) -> None:
    """Eight connections trickle a byte every 0.25 s: before, each read reset a 10 s timeout and every
    scrape found the port full for as long as they trickled."""
    port = metrics_port(hook)
    stop = threading.Event()
    cut_after: list[float] = []

    def trickle() -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            started = time.monotonic()
            sock.sendall(b"GET /metrics HTTP/1.1\r\n")
            while not stop.is_set():
                try:
                    sock.sendall(b"X")
                except OSError:
                    break
                time.sleep(0.25)
            cut_after.append(time.monotonic() - started)

    tricklers = [threading.Thread(target=trickle, daemon=True) for _ in range(8)]
    for trickler in tricklers:
        trickler.start()
    time.sleep(0.5)
    started = time.monotonic()
    while True:  # a scraper retries at its next interval; here every 0.2 s
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                assert b"mpi_operator_hook_open_connections" in response.read()
                break
        except OSError:
            assert time.monotonic() - started < HEADER_TIMEOUT + 2, "the tricklers held the port"
            time.sleep(0.2)
    stop.set()
    for trickler in tricklers:
        trickler.join(timeout=10)
    assert len(cut_after) == 8 and max(cut_after) < HEADER_TIMEOUT + 2, cut_after

    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: hook\r\nX-Big: " + b"a" * (40 * 1024) + b"\r\n\r\n")
        assert read_answer(sock, timeout=5).startswith(b"HTTP/1.0 431 ")


# ------------------------------------------------------------------------------------------ the token file


def test_a_fifo_swapped_in_for_the_token_never_blocks_the_hook(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with own_hook(tmp_path_factory, "fifo-token", {}) as hook:
        token = Path(served_setting(hook, "MPI_OPERATOR_CALLER_TOKEN_FILE"))
        fifo = token.with_name("fifo")
        os.mkfifo(fifo)
        os.replace(fifo, token)  # the file the hook watches is a FIFO now: opening it would wait for a writer
        time.sleep(2.5)  # the watch looks every second
        assert healthz_seconds(hook) < 1.0
        assert sync_status(hook) == 200  # the last good token still holds
        assert "not a regular file" in hook.log_text()
        fresh = token.with_name("fresh")
        fresh.write_text(TOKEN)
        os.replace(fresh, token)
        time.sleep(1.5)
        assert_serving(hook)


def test_a_hook_whose_token_file_is_a_fifo_does_not_start(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    env = served.hook_env({"MPI_OPERATOR_CALLER_TOKEN_FILE": str(fifo)}, authenticated=True)
    done = subprocess.run(
        [str(served.VENV_BIN / "mpijob"), "serve", "--port", str(free_port())],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "MPI_OPERATOR_CALLER_TOKEN_FILE" in done.stderr and "not a regular file" in done.stderr
