"""The README quick start, literally: its install block ran when the node came up (conftest.py); here its
π block runs as written, and its log must show the ranks on the hostfile's hosts."""

from __future__ import annotations

import pytest

from tests.node import runs
from tests.node.conftest import RealNode
from tests.node.quickstart import quick_start_blocks


def test_quick_start_blocks_are_what_the_harness_replaces() -> None:
    install, run = quick_start_blocks()
    assert install[0].startswith("kind create cluster")
    assert any(c.startswith("kubectl apply --server-side -k deploy/") for c in install)
    assert run[0] == "kubectl apply -f examples/pi/pi.yaml"


def test_node_came_up(real_node: RealNode, record_property: pytest.RecordProperty) -> None:
    """Report how long the images and the node took (printed at the end of the run)."""
    if real_node.cluster is not None:
        timings = ", ".join(f"{k} {v:.0f} s" for k, v in real_node.cluster.timings.items())
        record_property("e2e_summary", f"real node: {timings}")
    nodes = real_node.kube.list("nodes")
    assert nodes, "no node"


def test_quick_start_runs_pi(real_node: RealNode) -> None:
    runner = real_node.runner()
    outputs = {command: runner.run(command) for command in quick_start_blocks()[1]}
    log = outputs["kubectl logs job/pi-launcher"]
    placed = runs.ranks(log)
    assert sorted(placed) == [0, 1], log
    assert sorted(placed.values()) == ["pi-worker-0", "pi-worker-1"], log
    assert "pi is approximately 3.14" in log, log
    assert "deleted" in outputs["kubectl delete mpijob pi"]
