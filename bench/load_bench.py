"""The hook under load and under attack, served as the image serves it; prints bench/README.md's tables.

- **Concurrency ramp**: C clients (16 to 4,000) each open a connection and send one authenticated
  sync at the same moment, for a 1-worker and a 64-worker steady-state job; latency p50/p99/max, and how many
  got 200, 503 or no answer. The hook answers past its connection cap or its admission deadline with 503.
- **Under attack**: 1,000 idle connections and 8 connections offering 64 MiB headers at once; meanwhile
  ``/healthz`` and an authenticated sync are timed every 50 ms, and the hook's peak RSS is read.
- **Pipelining**: 60 and 150 connections with a 2 KiB receive buffer, each sending ``GET /`` 20,000 times and
  never reading; the same probes, the hook's RSS during the attack and 3 s after the attackers closed.

The client runs in this process, on the same two cores as the hook: compare within one run.

    .venv/bin/python bench/load_bench.py [--clients 16,64,256,2000,4000] [--sizes 1,64]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import re
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from http_bench import CALLER_TOKEN, _status_kb, hook_env, server  # noqa: E402
from sync_bench import build_request  # noqa: E402


async def _one(port: int, payload: bytes) -> tuple[int, float]:
    started = time.monotonic()
    writer = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(payload)
        status_line = await reader.readline()
        head = await reader.readuntil(b"\r\n\r\n")
        found = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
        await reader.readexactly(int(found.group(1)) if found else 0)
        return int(status_line.split()[1]), time.monotonic() - started
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        return 0, time.monotonic() - started
    finally:
        if writer is not None:
            writer.close()


def ramp(port: int, body: bytes, clients: int) -> dict[str, float]:
    head = (
        f"POST /sync HTTP/1.1\r\nHost: hook\r\nAuthorization: Bearer {CALLER_TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    payload = head.encode() + body

    async def run() -> list[tuple[int, float]]:
        return await asyncio.gather(*(_one(port, payload) for _ in range(clients)))

    results = asyncio.run(run())
    seconds = sorted(s for _, s in results)
    return {
        "p50": statistics.median(seconds),
        "p99": seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))],
        "max": seconds[-1],
        "ok": sum(status == 200 for status, _ in results),
        "busy": sum(status == 503 for status, _ in results),
        "none": sum(status not in (200, 503) for status, _ in results),
    }


def _probe(port: int, path: str, body: bytes | None) -> float:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {CALLER_TOKEN}"} if body is not None else {}
        connection.request("POST" if body is not None else "GET", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            return float("inf")
    except OSError:
        return float("inf")
    finally:
        connection.close()
    return time.monotonic() - started


def _bomb(port: int, offered: int, stop: threading.Event) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /sync HTTP/1.1\r\nHost: hook\r\nX-Bomb: ")
        sent, chunk = 0, b"a" * 65536
        while sent < offered and not stop.is_set():
            try:
                sock.sendall(chunk)
            except OSError:
                return
            sent += len(chunk)


def under_attack(port: int, pid: int, seconds: float) -> dict[str, float]:
    body = build_request(1)
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(1000)]
    stop = threading.Event()
    bombs = [threading.Thread(target=_bomb, args=(port, 64 << 20, stop)) for _ in range(8)]
    for bomb in bombs:
        bomb.start()
    health, syncs = [], []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        health.append(_probe(port, "/healthz", None))
        syncs.append(_probe(port, "/sync", body))
        time.sleep(0.05)
    stop.set()
    for bomb in bombs:
        bomb.join()
    for sock in idle:
        sock.close()
    return {
        "healthz_p50": statistics.median(health),
        "healthz_max": max(health),
        "sync_p50": statistics.median(syncs),
        "sync_max": max(syncs),
        "failed": sum(s == float("inf") for s in health + syncs),
        "probes": len(health) + len(syncs),
        "peak_rss_mb": _status_kb(pid, "VmHWM") / 1024,
    }


def _pipeline(port: int, flood: bytes, sockets: list[socket.socket]) -> None:
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    client.settimeout(10)
    sockets.append(client)
    try:
        client.connect(("127.0.0.1", port))
        client.sendall(flood)
    except OSError:
        pass  # the hook stopped reading: what it did not take is never read


def pipelining(port: int, pid: int, connections: int, seconds: float) -> dict[str, float]:
    """``connections`` clients that pipeline 20,000 requests each and never read, probed as above."""
    body = build_request(1)
    flood = b"GET / HTTP/1.1\r\nHost: hook\r\n\r\n" * 20_000
    start_rss = _status_kb(pid, "VmRSS")
    sockets: list[socket.socket] = []
    attackers = [threading.Thread(target=_pipeline, args=(port, flood, sockets)) for _ in range(connections)]
    for attacker in attackers:
        attacker.start()
    health, syncs, rss = [], [], []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        health.append(_probe(port, "/healthz", None))
        syncs.append(_probe(port, "/sync", body))
        rss.append(_status_kb(pid, "VmRSS"))
        time.sleep(0.05)
    for sock in sockets:
        sock.close()
    for attacker in attackers:
        attacker.join()
    time.sleep(3)
    return {
        "healthz_max": max(health),
        "sync_max": max(syncs),
        "failed": sum(s == float("inf") for s in health + syncs),
        "probes": len(health) + len(syncs),
        "start_mb": start_rss / 1024,
        "peak_mb": max(rss) / 1024,
        "after_mb": _status_kb(pid, "VmRSS") / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", default="16,64,256,2000,4000")
    parser.add_argument("--sizes", default="1,64")
    parser.add_argument("--attack-seconds", type=float, default=10.0)
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))
    with tempfile.TemporaryDirectory(prefix="hook-load-") as tmp:
        seed = Path(tmp) / "seed"
        seed.write_bytes(b"load benchmark seed, not a secret, 32+ bytes")
        with server("app.server.main:app", hook_env(seed)) as (port, pid):
            print("| workers | clients | p50 | p99 | max | 200 | 503 | no answer |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|")
            for workers in (int(w) for w in args.sizes.split(",")):
                body = build_request(workers)
                for clients in (int(c) for c in args.clients.split(",")):
                    r = ramp(port, body, clients)
                    print(
                        f"| {workers} | {clients:,} | {r['p50'] * 1000:.0f} ms | {r['p99'] * 1000:.0f} ms"
                        f" | {r['max'] * 1000:.0f} ms | {r['ok']:.0f} | {r['busy']:.0f} | {r['none']:.0f} |"
                    )
        with server("app.server.main:app", hook_env(seed)) as (port, pid):
            idle_rss = _status_kb(pid, "VmRSS") / 1024
            a = under_attack(port, pid, args.attack_seconds)
            print()
            print(f"Under attack ({args.attack_seconds:.0f} s; 1,000 idle connections, 8 x 64 MiB headers):")
            print(f"- /healthz p50 {a['healthz_p50'] * 1000:.1f} ms, max {a['healthz_max'] * 1000:.1f} ms")
            print(f"- 1-worker sync p50 {a['sync_p50'] * 1000:.1f} ms, max {a['sync_max'] * 1000:.1f} ms")
            print(f"- failed probes {a['failed']:.0f} of {a['probes']:.0f}")
            print(f"- RSS idle {idle_rss:.0f} MB, peak {a['peak_rss_mb']:.0f} MB")
            print(f"- after: /healthz {_probe(port, '/healthz', None) * 1000:.1f} ms")
        with server("app.server.main:app", hook_env(seed)) as (port, pid):
            _probe(port, "/sync", build_request(1))  # warmed up, as a serving hook is
            print()
            print(f"Pipelining, never reading ({args.attack_seconds:.0f} s; 20,000 requests a connection):")
            print("| connections | /healthz max | sync max | failed probes | RSS start | peak | 3 s later |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for connections in (60, 150):
                r = pipelining(port, pid, connections, args.attack_seconds)
                print(
                    f"| {connections} | {r['healthz_max'] * 1000:.1f} ms | {r['sync_max'] * 1000:.1f} ms"
                    f" | {r['failed']:.0f} of {r['probes']:.0f} | {r['start_mb']:.0f} MB"
                    f" | {r['peak_mb']:.0f} MB | {r['after_mb']:.0f} MB |"
                )


if __name__ == "__main__":
    main()
