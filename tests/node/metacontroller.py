"""Metacontroller in the cluster (tests/node/manifests/metacontroller.yaml), as the quick start's pinned
remote install would put it there; its CRDs are applied when the node starts (cluster.py)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.kube import Kube

MANIFEST = Path(__file__).parent / "manifests" / "metacontroller.yaml"
NAMESPACE = "metacontroller"


def install_metacontroller(kube: Kube) -> None:
    kube.kubectl("apply", "--server-side", "-f", str(MANIFEST))
    rollout(kube, NAMESPACE, "metacontroller")


def rollout(kube: Kube, namespace: str, deployment: str, restart: bool = False) -> None:
    """Wait for a Deployment's rollout (after ``kubectl rollout restart`` when ``restart``)."""
    if restart:
        kube.kubectl("-n", namespace, "rollout", "restart", f"deployment/{deployment}")
    kube.kubectl("-n", namespace, "rollout", "status", f"deployment/{deployment}", "--timeout=180s")
