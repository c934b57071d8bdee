"""The shell's guards, against a real ``mpijob serve`` (uvloop, httptools: the production settings) and curl.

A small body cap and memory budget make the limits cheap to hit: a chunked body past the cap is cut
off while reading (413), a body that never finishes is answered 408, a request that cannot get room in
the memory budget waits, then gets 503. Log fields are escaped and capped in text and JSON form; the
metrics have bounded label sets and size histograms.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from app.core.sync import Outcome, SyncResult
from app.server import logs
from app.server.metrics import Metrics
from tests.e2e.processes import free_port
from tests.hook.test_http import STARTUP_SECONDS
from tests.support.paths import ROOT
from tests.support.served import hook_env

WIRE = ROOT / "tests" / "fixtures" / "wire" / "sync-request-02-running-all-children-exist.json"
CAP = 256 * 1024

pytestmark = pytest.mark.skipif(
    shutil.which("curl") is None and not os.environ.get("CI"), reason="the curl binary is required"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    workdir = tmp_path_factory.mktemp("harden-serve")
    log = workdir / "server.log"
    env = hook_env({})
    env.update(
        MPI_OPERATOR_MAX_BODY_BYTES=str(CAP),
        MPI_OPERATOR_MEMORY_BUDGET_BYTES=str(CAP),
        MPI_OPERATOR_ADMISSION_WAIT_SECONDS="0.3",
        MPI_OPERATOR_READ_TIMEOUT_SECONDS="2",
        MPI_OPERATOR_LOG_FORMAT="json",
        MPI_OPERATOR_METRICS_PORT=str(metrics_port := free_port()),
        PYTHONUNBUFFERED="1",
    )
    port = free_port()
    command = [sys.executable, "-m", "app.cli.program", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                time.sleep(0.05)
        yield url, log
        # The metrics port serves the same registry (the NetworkPolicy keeps it apart from /sync); one
        # sync of our own, as xdist may have sent this worker only tests refused before the core.
        assert _curl(f"{url}/sync", data=WIRE)[0] == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            assert b"mpi_operator_hook_request_size_bytes_count" in response.read()
    finally:
        process.terminate()
        process.wait(timeout=10)


def _curl(url: str, *args: str, data: Path | None = None) -> tuple[int, bytes]:
    command = ["curl", "-sS", "--max-time", "15", "-o", "-", "-w", "\n%{http_code}", *args]
    if data is not None:
        command += ["--data-binary", f"@{data}"]
    done = subprocess.run([*command, url], capture_output=True, timeout=20, check=False)
    body, _, code = done.stdout.rpartition(b"\n")
    return int(code or 0), body


def test_chunked_body_past_the_cap_is_cut_off_while_reading(server: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = server
    big = tmp_path / "big.json"
    big.write_bytes(b'{"parent":"' + b"x" * (4 * CAP) + b'"}')
    code, body = _curl(f"{url}/sync", "-H", "Transfer-Encoding: chunked", data=big)
    assert (code, body) == (413, b'{"error":"request body too large"}')
    code, body = _curl(f"{url}/sync", data=big)  # declared: refused before reading
    assert code == 413


def test_a_body_under_the_cap_is_synced(server: tuple[str, Path]) -> None:
    url, _ = server
    code, body = _curl(f"{url}/sync", "-H", "Transfer-Encoding: chunked", data=WIRE)
    assert code == 200 and json.loads(body)["children"]


def test_a_body_that_never_ends_is_answered_408(server: tuple[str, Path]) -> None:
    url, _ = server
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /sync HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408")


def test_no_room_in_the_memory_budget_is_503_after_waiting(server: tuple[str, Path]) -> None:
    url, _ = server
    host, port = url.removeprefix("http://").split(":")
    holder = socket.create_connection((host, int(port)), timeout=5)
    try:  # declares the whole budget and sends nothing: holds it until its read timeout (2 s)
        holder.sendall(f"POST /sync HTTP/1.1\r\nHost: x\r\nContent-Length: {CAP}\r\n\r\n".encode())
        time.sleep(0.2)
        code, body = _curl(f"{url}/sync", data=WIRE)  # waits 0.3 s for room, then gives up
        assert (code, body) == (503, b'{"error":"the hook is busy with other large requests; retry"}')
    finally:
        holder.close()
    code, _ = _curl(f"{url}/sync", data=WIRE)
    assert code == 200


def test_metrics_have_size_histograms_and_error_kinds(server: tuple[str, Path]) -> None:
    url, _ = server
    _curl(f"{url}/sync", data=WIRE)
    code, text = _curl(f"{url}/metrics")
    assert code == 200
    for name in (
        "mpi_operator_hook_request_size_bytes_bucket",
        "mpi_operator_hook_response_size_bytes_bucket",
        'mpi_operator_hook_errors_total{hook="sync",kind="too_large"}',
        "mpi_operator_hook_in_flight_request_bytes",
    ):
        assert name.encode() in text


def _memo_lookups(url: str, result: str) -> float:
    code, text = _curl(f"{url}/metrics")
    assert code == 200
    series = f'mpi_operator_hook_parent_memo_lookups_total{{result="{result}"}} '.encode()
    return float(next(line for line in text.splitlines() if line.startswith(series)).split()[-1])


def test_metrics_count_the_parent_memos_hits(server: tuple[str, Path]) -> None:
    url, _ = server
    hits = _memo_lookups(url, "hit")
    for _ in range(2):  # the same parent twice: the second is judged from the memo at the latest
        assert _curl(f"{url}/sync", data=WIRE)[0] == 200
    assert _memo_lookups(url, "hit") >= hits + 1
    assert b"mpi_operator_hook_parent_memo_entries " in _curl(f"{url}/metrics")[1]


def test_json_logs_are_one_object_per_line(server: tuple[str, Path]) -> None:
    url, log = server
    assert _curl(f"{url}/sync", data=WIRE.with_name("sync-request-01-first-sync-no-children.json"))[0] == 200
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]
    assert any(p.get("event") == "event" and p.get("reason") for p in parsed)


# --------------------------------------------------------------------------- log fields, in process


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_log_fields_cannot_forge_lines(log_format: str, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure("INFO", log_format)
    try:
        hostile = "pi\nINFO forged line \x1b[31mred\x1b[0m" + "x" * 10_000_000
        logs.event(logging.getLogger("mpi_operator_hook.test"), logging.INFO, "event", job=hostile)
        err = capsys.readouterr().err
    finally:
        logging.getLogger().handlers.clear()
    assert err.count("\n") == 1 and "\x1b" not in err and len(err) < 1000
    assert "(+" in err and "chars)" in err
    if log_format == "json":
        assert json.loads(err)["job"].startswith("pi\nINFO forged line \x1b[31m")


# --------------------------------------------------------------------------- job_info cardinality


def _result(name: str, *, launcher: bool, finished: bool = False) -> SyncResult:
    kept = f"{name}-launcher" if launcher else None
    return SyncResult({}, [], Outcome.SYNCED, "ns", name, launcher_job=kept, writes_finished=finished)


def _series(metrics: Metrics) -> set[str]:
    return {s.labels["launcher"] for m in metrics.job_info.collect() for s in m.samples}


def test_job_info_drops_finished_and_forgotten_jobs() -> None:
    now = [0.0]
    metrics = Metrics(job_info_ttl=60, clock=lambda: now[0])
    for i in range(2000):
        metrics.record_sync(_result(f"job{i}", launcher=True), 0.01)
    assert len(_series(metrics)) == 2000
    metrics.record_sync(_result("job0", launcher=True, finished=True), 0.01)
    assert "job0-launcher" not in _series(metrics)
    now[0] = 30.0
    metrics.record_sync(_result("job1", launcher=True), 0.01)
    now[0] = 61.0
    metrics.expire()
    assert _series(metrics) == {"job1-launcher"}


def _dropped(metrics: Metrics) -> float:
    (line,) = [
        line
        for line in generate_latest(metrics.registry).decode().splitlines()
        if line.startswith("mpi_operator_hook_job_info_dropped_series_total ")
    ]
    return float(line.split()[1])


def test_job_info_keeps_at_most_its_bound_dropping_the_least_recently_synced() -> None:
    now = [0.0]
    metrics = Metrics(job_info_ttl=3600, job_info_max_series=100, clock=lambda: now[0])
    for i in range(10_000):  # a flood of new jobs; job0, synced again now and then, stays
        now[0] = float(i)
        metrics.record_sync(_result(f"job{i}", launcher=True), 0.01)
        if i % 50 == 0:
            metrics.record_sync(_result("job0", launcher=True), 0.01)
    series = _series(metrics)
    assert series == {"job0-launcher"} | {f"job{i}-launcher" for i in range(9901, 10_000)}
    assert _dropped(metrics) == 9900
    exposed = generate_latest(metrics.registry).decode().splitlines()
    assert sum(line.startswith("mpi_operator_job_info{") for line in exposed) == 100
    metrics.record_sync(_result("job9999", launcher=True, finished=True), 0.01)  # gone by finishing
    assert len(_series(metrics)) == 99 and _dropped(metrics) == 9900


# --------------------------------------------------------------------------- the byte budget, in process


def test_byte_budget_queues_past_its_total_and_refuses_after_the_wait() -> None:
    from app.server.budget import ByteBudget, Rejected

    async def scenario() -> list[str]:
        seen: list[int] = []
        budget = ByteBudget(100, seen.append)
        await budget.acquire(60, 1)
        await budget.acquire(40, 1)  # exactly full: no wait
        order: list[str] = []

        async def late(name: str, amount: int) -> None:
            await budget.acquire(amount, 1)
            order.append(name)

        waiting = asyncio.gather(late("first", 50), late("second", 10))
        await asyncio.sleep(0.01)
        assert order == [] and budget.in_use == 100
        budget.release(60)  # room for both; they enter in arrival order
        await waiting
        try:
            await budget.acquire(100, 0.05)
        except Rejected as rejected:
            order.append(f"{rejected.status} {rejected.kind}")
        assert seen[:2] == [60, 100] and budget.in_use == 100
        return order

    assert asyncio.run(scenario()) == ["first", "second", "503 busy"]


def test_pipelined_bytes_are_taken_only_with_room_and_charged_past_it_when_already_held() -> None:
    """The protocol's side of the budget: it cannot wait, so a waiting request is taken only if it fits
    now, and bytes that already arrived are counted even past the total, holding bodies back until freed."""
    from app.server.budget import ByteBudget

    async def scenario() -> list[str]:
        budget = ByteBudget(100)
        assert budget.try_take(70) and not budget.try_take(31) and budget.in_use == 70
        assert not budget.charge(40) and budget.in_use == 110  # held already: counted, and over
        order: list[str] = []

        async def body() -> None:
            await budget.acquire(30, 1)
            order.append("body")

        waiting = asyncio.create_task(body())
        await asyncio.sleep(0.01)
        assert not budget.try_take(1), "a body waits: the protocol does not cut in"
        budget.release(40)  # the pipelined request started (or its connection went)
        await waiting
        assert budget.in_use == 100 and budget.charge(0)
        return order

    assert asyncio.run(scenario()) == ["body"]


def test_a_failure_around_the_core_is_a_bare_503(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from app.kube.keys import SeededKeys
    from app.server.main import create_app
    from app.settings import Settings

    app = create_app(Settings(), SeededKeys(b"s" * 32))

    def broken(*args: object) -> None:
        raise RuntimeError("metrics backend exploded")

    monkeypatch.setattr(app.hook.metrics, "record_sync", broken)
    response = TestClient(app, raise_server_exceptions=False).post("/sync", content=WIRE.read_bytes())
    assert response.status_code == 503
    assert response.json() == {"error": "internal error in the hook; see the hook's logs"}
