"""bench/scale_bench.py keeps working: a small case, the Go operator then ours, on a control plane of its own.

Not a timed test: it asserts only that every MPIJob reached Succeeded on both sides and that the table has
its rows. Needs the e2e binaries and upstream's Go operator (its tarball beside the control plane's, or
``MPI_HOOK_BENCH_GO_OPERATOR_DIR``); skipped without them.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.e2e.benches import load_bench
from tests.e2e.controlplane import find_binaries


def test_scale_bench_small_case(tmp_path: Path) -> None:
    if os.environ.get("MPI_HOOK_E2E_KUBECONFIG"):
        pytest.skip("the scale benchmark starts its own control plane")
    bench = load_bench("scale_bench")
    bin_dir, reason = find_binaries()
    if bin_dir is None:
        pytest.skip(f"e2e: {reason}")
    if bench.go_operator_dir() is None:
        pytest.skip(f"no {bench.GO_TARBALL} and no MPI_HOOK_BENCH_GO_OPERATOR_DIR")
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", bench.GO_HEALTH_PORT)) == 0:
            pytest.skip(f"port {bench.GO_HEALTH_PORT} is taken (the Go operator's fixed health port)")

    budget = bench.Budget()
    with bench.bench_plane(tmp_path / "bench") as (plane, kube, go_dir):
        go, ours = bench.run_case(plane, kube, go_dir, 5, 8, budget, 600, lambda _: None)

    assert (go.succeeded, ours.succeeded) == (5, 5)
    table = bench.table(go, ours, budget)
    for row in (
        "apply → every child exists (server)",
        "launcher Pods done → every MPIJob Succeeded",
        "API requests",
        "of which GET mpijobs",
        "controller CPU",
        "kube-apiserver CPU",
        "peak RSS",
    ):
        assert f"| {row} |" in table, table
    assert sum(sum(c.values()) for c in go.requests.values()) > 0
    assert sum(sum(c.values()) for c in ours.requests.values()) > 0
