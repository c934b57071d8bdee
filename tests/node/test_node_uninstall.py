"""docs/operations.md's Uninstall, run as written while a job runs: nothing of the hook, Metacontroller or the
job is left. It runs after every other real-node test (conftest.py orders it last) and only on a node this
session started, never on a cluster given with MPI_HOOK_NODE_KUBECONFIG."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.kube import Kube, wait_for
from tests.node.conftest import RealNode
from tests.node.quickstart import ROOT, doc_blocks

OPERATIONS = ROOT / "docs" / "operations.md"


def uninstall_commands() -> list[str]:
    (commands,) = doc_blocks(OPERATIONS, "## Uninstall")
    return commands


def test_uninstall_is_three_deletes_in_order() -> None:
    assert uninstall_commands() == [
        "kubectl delete mpijobs --all --all-namespaces --wait",
        "kubectl delete -k deploy/ --ignore-not-found",
        "kubectl delete -k deploy/metacontroller/ --ignore-not-found",
    ]


def test_uninstall_leaves_nothing_behind(real_node: RealNode, ns: str) -> None:
    if real_node.cluster is None:
        pytest.skip("uninstall runs only on a node this session started, never on a given cluster")
    kube = real_node.kube
    job = yaml.safe_load(Path(ROOT / "examples" / "pi" / "pi.yaml").read_text())
    job["metadata"]["namespace"] = ns
    kube.create("mpijobs", ns, job)
    selector = "training.kubeflow.org/job-name=pi"
    wait_for(lambda: kube.list("pods", ns, selector) or None, 120, "the job's Pods")
    runner = real_node.runner()
    for command in uninstall_commands():
        runner.run(command)
    crds = {c["metadata"]["name"] for c in kube.list("customresourcedefinitions")}
    left = sorted(c for c in crds if c.endswith((".kubeflow.org", ".metacontroller.k8s.io")))
    assert left == [], left
    for name in ("mpi-operator", "metacontroller"):
        deleted = lambda n=name: kube.get("namespaces", None, n) is None or None  # noqa: E731
        wait_for(deleted, 120, f"namespace {name} deleted")
    left_over = lambda: _children(kube, ns)  # noqa: E731
    wait_for(lambda: not left_over() or None, 120, lambda: f"the job's children: {left_over()}")


def _children(kube: Kube, ns: str) -> list[str]:
    """What is left of job ``pi`` in ``ns``: pi (Service), pi-launcher, pi-worker-N, pi-ssh, pi-config."""
    kinds = ("pods", "jobs", "services", "secrets", "configmaps")
    names = ((k, o["metadata"]["name"]) for k in kinds for o in kube.list(k, ns))
    return [f"{k}/{n}" for k, n in names if n == "pi" or n.startswith("pi-")]
