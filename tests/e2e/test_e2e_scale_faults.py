"""bench/scale_faults.py keeps working, and its checks hold on a small case: 5 MPIJobs x 8 workers on a
control plane of its own, the hook killed and started again, Metacontroller restarted, and the hook answering
503 for 10 s while the children are created.

Asserts the benchmark's checks (every MPIJob Succeeded, no child deleted or replaced, no write by
Metacontroller or the hook in the quiet window after), not its timings. Metacontroller runs at its shipped
5 QPS / burst 10 so that creating the 60 children takes ~12 s and the three faults land inside it (at 50 QPS
they would all come after). Needs the e2e binaries; skipped without them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.benches import load_bench
from tests.e2e.controlplane import find_binaries


def test_scale_faults_small_case(tmp_path: Path, record_property: Callable[[str, object], None]) -> None:
    if os.environ.get("MPI_HOOK_E2E_KUBECONFIG"):
        pytest.skip("the fault benchmark starts its own control plane")
    bin_dir, reason = find_binaries()
    if bin_dir is None:
        pytest.skip(f"e2e: {reason}")
    faults = load_bench("scale_faults")
    budget = faults.Budget(qps=5, burst=10, apply_strategy="server-side-apply")
    plan = faults.Plan(5, 8, budget, unavailable_s=10, settle_s=5, quiet_s=10, timeout_s=300)
    with faults.audited_plane(tmp_path / "faults") as (plane, kube):
        out = faults.run(plane, kube, plan, lambda _: None)
    table = faults.table(out)
    record_property(
        "e2e_summary",
        "scale faults 5x8: " + "; ".join(f"{c.what}: {c.value}" for c in out.checks if c.ok is not None),
    )

    assert [r.error for r in out.injected] == ["", "", ""], table
    assert out.problems == [], table
    assert [c.what for c in out.checks if c.ok is False] == [], table
    assert len([c for c in out.checks if c.ok]) >= 7, table  # every check ran
    # The 503 window was not empty: Metacontroller called the hook in it and was turned away.
    assert sum(n for key, n in out.proxy.items() if key.endswith("503 (fault)")) > 0, table
