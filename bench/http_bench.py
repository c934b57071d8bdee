"""The hook over HTTP against its physical floor, in one run; prints the README's table.

For each job size (1, 64, 1,024 and 4,096 workers; steady state, realistic observed Pods cloned from the
recorded wire request, see sync_bench.py) it measures:
- in process: decode → sync → encode, best of R;
- over HTTP: the hook served by ``mpijob serve``'s production uvicorn options, and the floor, the same
  uvicorn serving bench/noop_app.py (reads the whole body, answers pre-built bytes of the hook's response
  size): both servers up at once, requests taking turns, best of R each, and their ratio;
- peak RSS growth of a fresh hook process over its idle RSS (``VmHWM`` - ``VmRSS``), next to the size.
Then small-job throughput (1 worker, 4 clients with keep-alive) for hook and floor, both up at once and
taking 1 s turns for T seconds each: the median ratio of turns side by side, and each server's CPU per
request; a concurrency run (many clients, same and different jobs) with latency percentiles; and RSS
across 10,000 small syncs. The hook checks its callers (``MPI_OPERATOR_CALLER_AUTH=token``, as deploy/
runs it): every request sends the token. Last, the two ratios the regression issue set targets for. The
client runs in this process: on a 2-core machine it competes with the server, which is fair to neither
side equally, so compare ratios, not absolute numbers, across machines.

    .venv/bin/python bench/http_bench.py [--sizes 1,64,1024,4096] [--repeat 15] [--seconds 5] [--syncs 10000]
        [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sync_bench import KEYS, NOW, best, build_request  # noqa: E402

from app.core.config import SyncConfig  # noqa: E402
from app.core.sync import sync  # noqa: E402
from app.kube.request import decode_request  # noqa: E402
from app.server.memo import MAX_ENTRIES  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# The floor runs with the hook's production settings too: uvicorn's options and the collector's.
# BENCH_PLAIN_PROTOCOL=1: uvicorn's own httptools protocol instead of the guarded one, to price the limits;
# BENCH_PROTOCOL_FILE: the GuardedProtocol of that file (another revision's, bench/protocol_bench.py).
_SERVE = """
import importlib.util, os, sys, uvicorn
from app.server.main import tune_gc
from app.server.serve import uvicorn_options
tune_gc()
options = uvicorn_options("WARNING")
if os.environ.get("BENCH_PLAIN_PROTOCOL"):
    options["http"] = "httptools"
if os.environ.get("BENCH_PROTOCOL_FILE"):
    spec = importlib.util.spec_from_file_location("other_protocol", os.environ["BENCH_PROTOCOL_FILE"])
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    options["http"] = module.GuardedProtocol
uvicorn.run(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]), **options)
"""


@contextmanager
def server(target: str, env: dict[str, str]) -> Iterator[tuple[int, int]]:
    """(port, pid) of a uvicorn with the production options serving ``target``."""
    port = _free_port()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
    full_env.update(env, PYTHONPATH=f"{ROOT}:{ROOT / 'bench'}")
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVE, target, str(port)], cwd=ROOT, env=full_env, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


# The hook runs as deploy/ runs it, checking its callers; the floor ignores the header.
CALLER_TOKEN = secrets.token_urlsafe(32)


def post(connection: http.client.HTTPConnection, body: bytes) -> bytes:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {CALLER_TOKEN}"}
    connection.request("POST", "/sync", body, headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
    return data


def hook_env(seed: Path) -> dict[str, str]:
    # A 4,096-worker job needs server-side apply: its ConfigMap outgrows dynamic-apply's annotation.
    token = seed.with_name("caller-token")
    token.write_text(CALLER_TOKEN)
    return {
        "MPI_OPERATOR_CALLER_AUTH": "token",
        "MPI_OPERATOR_CALLER_TOKEN_FILE": str(token),
        "MPI_OPERATOR_SSH_KEY_SEED_FILE": str(seed),
        "MPI_OPERATOR_METACONTROLLER_APPLY_STRATEGY": "server-side-apply",
        "MPI_OPERATOR_LOG_LEVEL": "WARNING",
    }


def size_row(workers: int, repeat: int, seed: Path) -> dict[str, float]:
    body = build_request(workers)

    def in_process() -> bytes:
        config = SyncConfig(annotation_budget=False)
        result = sync(decode_request(body), now=NOW, keys=KEYS, config=config)
        return orjson.dumps(result.response())

    response = in_process()
    row = {"workers": workers, "request": len(body), "response": len(response)}
    row["in_process"] = best(in_process, repeat)
    floor_env = {"NOOP_RESPONSE_BYTES": str(len(response))}
    hook_server = server("app.server.main:app", hook_env(seed))
    floor_server = server("noop_app:app", floor_env)
    with hook_server as (port, pid), floor_server as (floor, _):
        idle = _status_kb(pid, "VmRSS")
        hook_connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        floor_connection = http.client.HTTPConnection("127.0.0.1", floor, timeout=120)
        # Hook and floor take turns, so a noisy neighbour slows both alike; the best of each counts.
        hook_times, floor_times = [], []
        for _ in range(repeat):
            hook_times.append(best(lambda: post(hook_connection, body), 1))
            floor_times.append(best(lambda: post(floor_connection, body), 1))
        row["http"], row["floor"] = min(hook_times), min(floor_times)
        row["rss_growth"] = (_status_kb(pid, "VmHWM") - idle) * 1024
    return row


def throughput(port: int, bodies: list[bytes], clients: int, seconds: float) -> tuple[float, list[float]]:
    """Requests per second and every latency, ``clients`` keep-alive connections in threads, each
    sending ``bodies`` in turn."""
    latencies: list[float] = []
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def client(start: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine = []
        while time.monotonic() < stop:
            started = time.perf_counter()
            post(connection, bodies[(start + len(mine)) % len(bodies)])
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    # Each client starts a stretch further along, so no two send the same body close together.
    threads = [threading.Thread(target=client, args=(i * len(bodies) // clients,)) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies) / (time.monotonic() - started), latencies


def changed_parents(body: bytes, count: int) -> list[bytes]:
    """``body`` with ``count`` different parent resourceVersions: more parents than the hook remembers
    (``app.server.memo``), sent in turn, so every sync judges its parent afresh."""
    request = orjson.loads(body)
    bodies = []
    for version in range(count):
        request["parent"]["metadata"]["resourceVersion"] = str(10_000 + version)
        bodies.append(orjson.dumps(request))
    return bodies


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _turns(servers: list[tuple[int, int, list[bytes]]], seconds: float, turn: float) -> list[list[float]]:
    """Per server (port, pid, bodies): requests/s and server CPU seconds per request of each turn, the
    servers taking ``turn``-second turns for ``seconds`` each, so a busy neighbour slows all alike."""
    turns: list[list[float]] = [[] for _ in servers]
    cpu: list[list[float]] = [[] for _ in servers]
    for _ in range(max(1, round(seconds / turn))):
        for i, (port, pid, bodies) in enumerate(servers):
            before = _cpu_seconds(pid)
            rate, latencies = throughput(port, bodies, 4, turn)
            turns[i].append(rate)
            cpu[i].append((_cpu_seconds(pid) - before) / max(len(latencies), 1))
    return turns + cpu


def protocol_cost(seconds: float) -> tuple[float, float]:
    """The connection limits' price: the floor's CPU per small request behind ``GuardedProtocol`` and
    behind uvicorn's plain httptools protocol, both up at once, taking 1 s turns (medians, µs)."""
    body = build_request(1)
    env = {"NOOP_RESPONSE_BYTES": "10000"}
    with (
        server("noop_app:app", env) as (port, pid),
        server("noop_app:app", env | {"BENCH_PLAIN_PROTOCOL": "1"}) as (
            plain_port,
            plain_pid,
        ),
    ):
        _, _, guarded_cpu, plain_cpu = _turns(
            [(port, pid, [body]), (plain_port, plain_pid, [body])], seconds, 1.0
        )
    return statistics.median(guarded_cpu) * 1e6, statistics.median(plain_cpu) * 1e6


def small_jobs(seed: Path, seconds: float) -> dict[str, float]:
    """Syncs/s of a 1-worker job (its parent remembered, as in steady state; and every parent new) and the
    floor's requests/s, taking 1 s turns; the median ratio of turns side by side; the steady p50; the server
    CPU per request of hook and floor (what a busy machine disturbs least)."""
    body = build_request(1)
    with server("app.server.main:app", hook_env(seed)) as (port, pid):
        response = post(http.client.HTTPConnection("127.0.0.1", port), body)
        floor_env = {"NOOP_RESPONSE_BYTES": str(len(response))}
        with server("noop_app:app", floor_env) as (floor_port, floor_pid):
            _, latencies = throughput(port, [body], 4, 1.0)  # warm-up: the parent's verdict remembered
            p50 = statistics.median(latencies)
            fresh_bodies = changed_parents(body, 4 * MAX_ENTRIES)
            runs = [(port, pid, [body]), (port, pid, fresh_bodies), (floor_port, floor_pid, [body])]
            hook, fresh, floor, hook_cpu, _, floor_cpu = _turns(runs, seconds, 1.0)
    return {
        "hook": statistics.median(hook),
        "fresh": statistics.median(fresh),
        "floor": statistics.median(floor),
        "ratio": statistics.median(h / f for h, f in zip(hook, floor, strict=True)),
        "fresh_ratio": statistics.median(h / f for h, f in zip(fresh, floor, strict=True)),
        "p50": p50,
        "hook_cpu": statistics.median(hook_cpu),
        "floor_cpu": statistics.median(floor_cpu),
    }


def _renamed(body: bytes, name: str) -> bytes:
    return body.replace(b'"pi"', f'"{name}"'.encode()).replace(b"pi-", f"{name}-".encode())


def concurrency(seed: Path, clients: int, seconds: float) -> tuple[float, float, float, int]:
    """64-worker syncs from ``clients`` threads, half on one job and half on jobs of their own."""
    base = build_request(64)
    bodies = [base if i % 2 else _renamed(base, f"job{i}") for i in range(clients)]
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    with server("app.server.main:app", hook_env(seed)) as (port, _):
        stop = time.monotonic() + seconds

        def client(body: bytes) -> None:
            nonlocal errors
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            while time.monotonic() < stop:
                started = time.perf_counter()
                try:
                    post(connection, body)
                except (RuntimeError, OSError):
                    with lock:
                        errors += 1
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    continue
                with lock:
                    latencies.append(time.perf_counter() - started)

        threads = [threading.Thread(target=client, args=(b,)) for b in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99)] if ordered else 0.0
    return len(latencies) / seconds, statistics.median(ordered) if ordered else 0.0, p99, errors


def rss_over_syncs(seed: Path, syncs: int) -> list[int]:
    body = build_request(1)
    samples = []
    with server("app.server.main:app", hook_env(seed)) as (port, pid):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(syncs):
            post(connection, body)
            if i % (syncs // 10) == 0 or i == syncs - 1:
                samples.append(_status_kb(pid, "VmRSS"))
    return samples


# The "done when" (with the caller check on): a 4,096-worker sync's peak RSS growth under 1.7x its
# request, small-job throughput at least 0.38x the no-op app's.
RSS_TARGET, THROUGHPUT_TARGET = 1.7, 0.38


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,64,1024,4096")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--syncs", type=int, default=10_000)
    parser.add_argument(
        "--quick", action="store_true", help="1 and 4,096 workers, best of 7, 3 s turns, 1,000 small syncs"
    )
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeat, args.seconds, args.syncs = "1,4096", 7, 3.0, 1_000
    return args


def _size_rows(sizes: str, repeat: int, seed: Path) -> dict[int, float]:
    """Print the README's table; the peak RSS growth / request of each size."""
    print("| workers | request | response | in-process | HTTP hook | HTTP floor | ratio | peak RSS growth |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    growth = {}
    for workers in (int(s) for s in sizes.split(",")):
        r = size_row(workers, repeat, seed)
        growth[workers] = r["rss_growth"] / r["request"]
        print(
            f"| {workers:,} | {r['request'] / 1e6:.2f} MB | {r['response'] / 1e6:.2f} MB"
            f" | {r['in_process'] * 1e3:.1f} ms | {r['http'] * 1e3:.1f} ms | {r['floor'] * 1e3:.1f} ms"
            f" | {r['http'] / r['floor']:.2f}x | {r['rss_growth'] / 1e6:.0f} MB"
            f" ({growth[workers]:.2f}x request) |",
            flush=True,
        )
    return growth


def _print_small(small: dict[str, float]) -> None:
    ms, us = small["p50"] * 1e3, {key: small[key] * 1e6 for key in ("hook_cpu", "floor_cpu")}
    print(
        f"\nsmall job (1 worker), 4 clients, 1 s turns with the floor: hook {small['hook']:.0f} syncs/s,"
        f" floor {small['floor']:.0f} req/s, ratio {small['ratio']:.2f}, hook p50 {ms:.2f} ms;"
        f" every parent new: {small['fresh']:.0f} syncs/s, ratio {small['fresh_ratio']:.2f};"
        f" server CPU per request: hook {us['hook_cpu']:.0f} us, floor {us['floor_cpu']:.0f} us",
        flush=True,
    )


def main() -> None:
    args = _arguments()
    with tempfile.TemporaryDirectory(prefix="hook-bench-") as tmp:
        seed = Path(tmp) / "seed"
        seed.write_bytes(secrets.token_bytes(48))
        growth = _size_rows(args.sizes, args.repeat, seed)
        small = small_jobs(seed, args.seconds)
        _print_small(small)
        if 4096 in growth:
            print(f"4,096-worker peak RSS growth / request: {growth[4096]:.2f}x (target < {RSS_TARGET}x)")
        print(f"small-job throughput / the no-op app: {small['ratio']:.2f}x (target >= {THROUGHPUT_TARGET}x)")
        guarded, plain = protocol_cost(args.seconds)
        print(
            f"the connection limits: the floor's CPU per small request {guarded:.0f} us (GuardedProtocol),"
            f" {plain:.0f} us (uvicorn's plain httptools protocol): {guarded / plain:.2f}x",
            flush=True,
        )
        rate, c50, c99, errors = concurrency(seed, 16, args.seconds)
        print(
            f"concurrency: 16 clients x 64-worker syncs (same and different jobs): {rate:.0f} syncs/s,"
            f" p50 {c50 * 1e3:.1f} ms, p99 {c99 * 1e3:.1f} ms, errors {errors}",
            flush=True,
        )
        samples = rss_over_syncs(seed, args.syncs)
        print(
            f"RSS over {args.syncs:,} small syncs (MB): "
            + " ".join(f"{kb / 1024:.1f}" for kb in samples)
            + f"  (growth {(samples[-1] - samples[1]) / 1024:+.1f} MB after warm-up)"
        )


if __name__ == "__main__":
    main()
