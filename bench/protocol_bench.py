"""The connection limits' price against another revision's: the floor behind this checkout's
``GuardedProtocol`` and behind REV's, side by side; prints bench/README.md's table.

The floor is ``noop_app.py`` (reads and joins the whole body, answers pre-built bytes) under the production
uvicorn options, so all that differs between the two servers is the protocol class. Both are up at once and
take 1 s turns (4 keep-alive clients), first with small requests (1 worker), then with a 4,096-worker body
(29 MB); each server's CPU per request, the median over turns, is what a busy neighbour disturbs least (the
best of a few 29 MB posts moved by 2x between two servers running the same code); the ratio is the median
over turns of this checkout's over REV's in the same turn. uvicorn's plain httptools
protocol runs beside them as the floor under both.

    .venv/bin/python bench/protocol_bench.py [--against REV] [--seconds 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from http_bench import _turns, server  # noqa: E402
from sync_bench import build_request  # noqa: E402


def other_protocol(rev: str, directory: Path) -> Path:
    """REV's ``app/server/connections.py``, as a file the floor's server can load."""
    source = subprocess.run(
        ["git", "show", f"{rev}:app/server/connections.py"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    path = directory / "other_connections.py"
    path.write_bytes(source)
    return path


def cpu_per_request(servers: list[tuple[int, int]], body: bytes, seconds: float) -> tuple[list[float], float]:
    """Each server's CPU per request (µs, the median over turns), and the median over turns of the first's
    over the second's, turn by turn (a drift of the machine slows both in the same turn)."""
    results = _turns([(port, pid, [body]) for port, pid in servers], seconds, 1.0)
    cpu = results[len(servers) :]
    paired = statistics.median(a / b for a, b in zip(cpu[0], cpu[1], strict=True))
    return [statistics.median(c) * 1e6 for c in cpu], paired


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", default="HEAD", help="the revision to compare with (default HEAD)")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    env = {"NOOP_RESPONSE_BYTES": "10000"}
    with tempfile.TemporaryDirectory(prefix="protocol-bench-") as tmp:
        other = {"BENCH_PROTOCOL_FILE": str(other_protocol(args.against, Path(tmp)))}
        with (
            server("noop_app:app", env) as this,
            server("noop_app:app", env | other) as that,
            server("noop_app:app", env | {"BENCH_PLAIN_PROTOCOL": "1"}) as plain,
        ):
            small, small_ratio = cpu_per_request([this, that, plain], build_request(1), args.seconds)
            big, big_ratio = cpu_per_request([this, that, plain], build_request(4096), args.seconds)
    print("| the floor behind (server CPU per request) | small request | 4,096-worker body (29 MB) |")
    print("|---|---:|---:|")
    names = (
        "this checkout's GuardedProtocol",
        f"{args.against}'s GuardedProtocol",
        "uvicorn's plain protocol",
    )
    for name, s, b in zip(names, small, big, strict=True):
        print(f"| {name} | {s:.0f} µs | {b / 1e3:.1f} ms |")
    print(f"| **this / {args.against}, turn by turn** | **{small_ratio:.3f}x** | **{big_ratio:.3f}x** |")


if __name__ == "__main__":
    main()
