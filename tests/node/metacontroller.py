"""Metacontroller in the cluster (tests/node/manifests/metacontroller.yaml), as the quick start's pinned
remote install would put it there; its CRDs are applied when the node starts (cluster.py)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.kube import Kube

MANIFEST = Path(__file__).parent / "manifests" / "metacontroller.yaml"
NAMESPACE = "metacontroller"


def install_metacontroller(kube: Kube) -> None:
    kube.kubectl("apply", "--server-side", "-f", str(MANIFEST))
    rollout(kube, NAMESPACE, "deployment/metacontroller")


def rollout(kube: Kube, namespace: str, workload: str, restart: bool = False) -> None:
    """Wait for a rollout of ``workload`` (``deployment/x``, ``statefulset/y``), after ``kubectl rollout
    restart`` when ``restart``."""
    if restart:
        kube.kubectl("-n", namespace, "rollout", "restart", workload)
    kube.kubectl("-n", namespace, "rollout", "status", workload, "--timeout=180s")


def restart_metacontroller(kube: Kube) -> None:
    """Restart Metacontroller: ours is a Deployment, its published manifests make a StatefulSet."""
    found = kube.kubectl("-n", NAMESPACE, "get", "deployments,statefulsets", "-o", "name").stdout.split()
    assert found, "no Metacontroller workload in namespace metacontroller"
    rollout(kube, NAMESPACE, found[0].replace(".apps", ""), restart=True)
