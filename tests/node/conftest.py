"""The real-node session: one node started here (or a given cluster), the hook installed by the quick start.

Cluster, in this order of preference:
  - ``MPI_HOOK_NODE_KUBECONFIG``: an existing cluster (e.g. kind) where the README's quick start has been
    done (Metacontroller and ``deploy/`` installed) and the MPI images are loaded (``python -m
    tests.node.images --save DIR``, then ``kind load image-archive``); nothing is started or installed.
  - this machine (root, Debian's containerd/buildah/..., the binaries of ``../shared/e2e``): a node is
    started (cluster.py), and the quick start's install block runs as README.md has it (quickstart.py).
  - neither: every real-node test is skipped with the reason.

All real-node tests run in one xdist worker (tests/conftest.py), one after another, against one node.
The ``ns`` fixture (tests/support/clusters.py) and the local Metacontroller manifests are set up here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.kube import Kube, given_cluster
from tests.e2e.processes import Processes
from tests.node.cluster import Cluster, missing
from tests.node.quickstart import Runner, quick_start_blocks
from tests.support.clusters import ns, pytest_runtest_makereport
from tests.support.metacontroller_standin import served_metacontroller

# From tests/support (autouse or by name): pytest finds fixtures and hooks here.
__all__ = ["ns", "pytest_runtest_makereport", "served_metacontroller"]


@dataclass
class RealNode:
    """The cluster the tests talk to; ``cluster`` is None when it was given (MPI_HOOK_NODE_KUBECONFIG)."""

    LOGS = "real node logs"

    kube: Kube
    kubeconfig: Path
    cluster: Cluster | None
    transcript: list[tuple[str, str]] = field(default_factory=list)

    def namespace_problems(self, namespace: str) -> list[str]:
        return []

    def runner(self) -> Runner:
        return Runner(self.kubeconfig, _replacements(self), self.transcript)

    def log_tails(self) -> str:
        if self.cluster is None:
            return ""
        parts = []
        for log in sorted((self.cluster.workdir / "plane").glob("*.log")):
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            parts.append(f"--- {log.name} (last 20 lines) ---\n{tail}")
        return "\n".join(parts)


def _replacements(node: RealNode) -> dict[str, object]:
    cluster = node.cluster

    def unavailable(command: str) -> None:
        raise AssertionError(f"`{command}` has no equivalent against a given cluster")

    if cluster is None:
        return {name: unavailable for name in ("node", "build", "load")}
    return {
        "node": lambda command: None,  # the node is up
        "build": cluster.check_hook_build,
        "load": cluster.load_hook,
    }


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The uninstall test (test_node_uninstall.py) removes the hook: it runs after every other test."""
    last = [item for item in items if item.path.name == "test_node_uninstall.py"]
    items[:] = [item for item in items if item not in last] + last


@pytest.fixture(scope="session")
def real_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNode]:
    kubeconfig = os.environ.get("MPI_HOOK_NODE_KUBECONFIG")
    if kubeconfig:
        processes = Processes(tmp_path_factory.mktemp("mpi-hook-node-given"))
        try:
            yield RealNode(given_cluster(kubeconfig, processes), Path(kubeconfig), None)
        finally:
            processes.stop_all()
        return
    reason = missing()
    if reason:
        pytest.skip(f"real node: {reason}")
    cluster = Cluster(tmp_path_factory.mktemp("mpi-hook-node"))
    try:
        kube = cluster.start()
        assert cluster.plane is not None
        node = RealNode(kube, cluster.plane.kubeconfig, cluster)
        began = time.monotonic()
        install = node.runner()
        for command in quick_start_blocks()[0]:
            install.run(command)
        cluster.timings["install (quick start)"] = time.monotonic() - began
        yield node
    finally:
        cluster.stop()


@pytest.fixture
def target(real_node: RealNode) -> RealNode:
    """The cluster of the ``ns`` fixture (tests/support/clusters.py)."""
    return real_node
