"""Hostile clients against a real ``mpijob serve`` (uvloop, httptools, the production options) over loopback.

Each attack runs while the test asks what Metacontroller and the kubelet would: ``/healthz`` must answer
within a second and an authenticated sync must succeed throughout, the hook's RSS must stay far below the
Deployment's 768 Mi limit, and once the attack stops the hook serves at once. The attacks: idle connections
(1,000), headers trickled or bombed (8 times 64 MiB offered), bodies trickled, connection floods past the cap,
concurrency ramps (64, 256, 2,000 syncs at once) and floods of refused calls (the log stays short).
"""

from __future__ import annotations

import asyncio
import http.client
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

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
    serving,
    sync_status,
)


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[served.Served]:
    yield from serving(tmp_path_factory, "hostile", SHORT_TIMEOUTS)


@pytest.fixture(scope="module")
def small_hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[served.Served]:
    """A hook with room for 8 connections, to reach the cap cheaply."""
    small = {"MPI_OPERATOR_MAX_CONNECTIONS": "8", "MPI_OPERATOR_READ_TIMEOUT_SECONDS": str(READ_TIMEOUT)}
    yield from serving(tmp_path_factory, "hostile-small", small)


# ------------------------------------------------------------------------------------------ the attackers


@contextmanager
def idle_connections(hook: served.Served, count: int) -> Iterator[list[socket.socket]]:
    allow_sockets(count + 256)
    with ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.create_connection(("127.0.0.1", hook.port))) for _ in range(count)
        ]
        yield sockets


@contextmanager
def header_bombs(hook: served.Served, count: int, offered: int) -> Iterator[list[int]]:
    """``count`` threads, each offering an ``offered``-byte header it never finishes, as fast as the hook
    takes it; yields the bytes each got in before the hook closed it (filled in as they end)."""
    sent = [0] * count
    stop = threading.Event()

    def bomb(index: int) -> None:
        chunk = b"a" * 65536
        with socket.create_connection(("127.0.0.1", hook.port)) as sock:
            sock.settimeout(5)
            sock.sendall(b"POST /sync HTTP/1.1\r\nHost: hook\r\nX-Bomb: ")
            while sent[index] < offered and not stop.is_set():
                try:
                    sock.sendall(chunk)
                except OSError:
                    return  # closed by the hook
                sent[index] += len(chunk)

    threads = [threading.Thread(target=bomb, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield sent
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)


# ------------------------------------------------------------------------------------------ the attacks


def test_a_thousand_idle_connections_and_eight_header_bombs_do_not_stop_the_hook(hook: served.Served) -> None:
    with idle_connections(hook, 1000), header_bombs(hook, 8, offered=64 << 20) as sent:
        time.sleep(0.5)
        assert_serving(hook)
        assert metric(hook, "mpi_operator_hook_open_connections") >= 1000
        deadline = time.monotonic() + 20
        while metric(hook, 'mpi_operator_hook_connections_closed_total{reason="header_too_large"}') < 8:
            assert time.monotonic() < deadline, "the header bombs were not cut off"
            time.sleep(0.1)
        assert_serving(hook)
    # Each bomb got in at most the 32 KiB cap plus what the kernel's buffers took, never its 64 MiB.
    assert max(sent) < 8 << 20, sent
    assert_serving(hook)  # and at once after the attack


def test_a_finished_header_over_the_cap_is_431_whole_or_in_pieces(hook: served.Served) -> None:
    big = b"GET /healthz HTTP/1.1\r\nHost: hook\r\nX-Big: " + b"a" * (40 * 1024) + b"\r\n\r\n"
    for pieces in (1, 40):  # in one read (the size counted once complete) and as it arrives
        with connect(hook) as sock:
            step = len(big) // pieces + 1
            for start in range(0, len(big), step):
                try:
                    sock.sendall(big[start : start + step])
                except OSError:
                    break  # closed by the hook past the cap: its answer is already on the way
            answer = read_answer(sock, timeout=5)
        assert answer.startswith(b"HTTP/1.1 431 "), (pieces, answer[:80])
    assert_serving(hook)


def test_silent_and_trickling_connections_are_closed_at_the_header_deadline(hook: served.Served) -> None:
    with connect(hook) as silent, connect(hook) as trickler:
        started = time.monotonic()
        trickler.sendall(b"GET /healthz HTTP/1.1\r\n")
        for _ in range(int(HEADER_TIMEOUT / 0.25) + 4):  # one header line every 0.25 s, never the end
            try:
                trickler.sendall(b"X-Slow: 1\r\n")
            except OSError:
                break
            assert_serving_quickly(hook)
            time.sleep(0.25)
        trickled = read_answer(trickler, timeout=HEADER_TIMEOUT * 2)
        assert trickled.startswith(b"HTTP/1.1 408 "), trickled[:80]
        assert read_answer(silent, timeout=HEADER_TIMEOUT * 2) == b""  # closed without a word
        assert time.monotonic() - started < HEADER_TIMEOUT * 3


def assert_serving_quickly(hook: served.Served) -> None:
    assert healthz_seconds(hook) < 1.0


def test_a_trickled_body_is_closed_at_the_body_deadline_on_every_path(hook: served.Served) -> None:
    for path, auth in (("/healthz", ""), ("/sync", f"Authorization: Bearer {TOKEN}\r\n")):
        with socket.create_connection(("127.0.0.1", hook.port)) as sock:
            started = time.monotonic()
            head = f"POST {path} HTTP/1.1\r\nHost: hook\r\n{auth}Content-Length: 100000\r\n\r\n"
            sock.sendall(head.encode() + b"{")
            answer = read_answer(sock, timeout=READ_TIMEOUT + 5)
            elapsed = time.monotonic() - started
            assert elapsed < READ_TIMEOUT + 3, (path, elapsed)
            if path == "/sync":  # the body guard answers the hooks' bodies
                assert b" 408 " in answer.split(b"\r\n", 1)[0], answer[:80]
    assert_serving(hook)


def test_a_trickled_chunked_sync_holds_only_the_bytes_it_sent(hook: served.Served) -> None:
    with socket.create_connection(("127.0.0.1", hook.port)) as sock:
        head = f"POST /sync HTTP/1.1\r\nHost: hook\r\nAuthorization: Bearer {TOKEN}\r\n"
        sock.sendall(head.encode() + b"Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
        time.sleep(0.3)
        # Not the 160 MiB body cap: one byte, charged in the budget's first step.
        assert metric(hook, "mpi_operator_hook_in_flight_request_bytes") <= 2 << 20
        started = time.monotonic()
        assert sync_status(hook) == 200
        assert time.monotonic() - started < 2.0


def test_past_the_cap_the_longest_idle_connection_makes_room(small_hook: served.Served) -> None:
    evicted_before = metric(small_hook, 'mpi_operator_hook_connections_closed_total{reason="evicted"}')
    with idle_connections(small_hook, 8) as sockets:
        time.sleep(1.2)  # idle for longer than MIN_IDLE_SECONDS: now they may be evicted
        assert_serving(small_hook)
        assert read_answer(sockets[0], timeout=1) == b""  # the oldest made room, without a word
    evicted = metric(small_hook, 'mpi_operator_hook_connections_closed_total{reason="evicted"}')
    assert evicted - evicted_before >= 1


def test_when_every_connection_is_busy_the_newcomer_gets_503(small_hook: served.Served) -> None:
    head = (
        f"POST /sync HTTP/1.1\r\nHost: hook\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 10\r\n\r\n{{"
    )
    with ExitStack() as stack:
        busy = [
            stack.enter_context(socket.create_connection(("127.0.0.1", small_hook.port))) for _ in range(8)
        ]
        for sock in busy:  # authenticated, each body still coming: a request in progress, not idle
            sock.sendall(head.encode() + b"{")
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", small_hook.port)) as newcomer:
            answer = read_answer(newcomer, timeout=3)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:80]
        assert b"too many connections" in answer
    deadline = time.monotonic() + READ_TIMEOUT + 5
    while True:  # the busy ones end at their body deadline; then the hook serves again
        try:
            assert_serving(small_hook)
            break
        except (AssertionError, OSError):
            assert time.monotonic() < deadline
            time.sleep(0.2)


async def _one_sync(port: int, payload: bytes) -> tuple[int, float]:
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return 0, time.monotonic() - started
    try:
        writer.write(payload)
        status_line = await reader.readline()
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
        await reader.readexactly(length)
        return int(status_line.split()[1]), time.monotonic() - started
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        return 0, time.monotonic() - started
    finally:
        writer.close()


def concurrent_syncs(hook: served.Served, clients: int) -> list[tuple[int, float]]:
    head = (
        f"POST /sync HTTP/1.1\r\nHost: hook\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(WIRE)}\r\nConnection: close\r\n\r\n"
    )
    payload = head.encode() + WIRE

    async def run() -> list[tuple[int, float]]:
        return await asyncio.gather(*(_one_sync(hook.port, payload) for _ in range(clients)))

    allow_sockets(clients + 256)
    return asyncio.run(asyncio.wait_for(run(), 60))


@pytest.mark.parametrize("clients", [64, 256])
def test_concurrent_syncs_all_succeed_within_metacontrollers_timeout(
    hook: served.Served, clients: int
) -> None:
    results = concurrent_syncs(hook, clients)
    assert [status for status, _ in results] == [200] * clients
    assert max(seconds for _, seconds in results) < 10.0  # Metacontroller's default hook timeout
    assert_serving(hook)


def test_two_thousand_concurrent_syncs_get_answers_and_nobody_waits_past_the_deadline(
    hook: served.Served,
) -> None:
    results = concurrent_syncs(hook, 2000)
    statuses = {status for status, _ in results}
    assert statuses <= {200, 503}, statuses
    assert sum(status == 200 for status, _ in results) >= 1000
    # The admission deadline (8 s) plus the time to answer what was admitted: never Metacontroller's 10 s.
    assert max(seconds for _, seconds in results) < 10.0
    assert_serving(hook)


def test_a_flood_of_refused_calls_leaves_a_short_log(hook: served.Served) -> None:
    before = hook.log_text().count("\n")
    for _ in range(300):
        connection = http.client.HTTPConnection("127.0.0.1", hook.port, timeout=5)
        connection.request("POST", "/sync", body=b"{}", headers={"Authorization": "Bearer forged"})
        assert connection.getresponse().status == 401
        connection.close()
    assert hook.log_text().count("\n") - before <= 2  # throttled: one line per 10 s, with the count
    assert TOKEN not in hook.log_text()
