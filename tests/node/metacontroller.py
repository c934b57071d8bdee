"""Metacontroller in the cluster, as the quick start installs it (``kubectl apply -k deploy/metacontroller/``:
its published manifests, served by tests/support/metacontroller_standin.py, with our flags)."""

from __future__ import annotations

from tests.e2e.kube import Kube

NAMESPACE = "metacontroller"


def rollout(kube: Kube, namespace: str, workload: str, restart: bool = False) -> None:
    """Wait for a rollout of ``workload`` (``deployment/x``, ``statefulset/y``), after ``kubectl rollout
    restart`` when ``restart``."""
    if restart:
        kube.kubectl("-n", namespace, "rollout", "restart", workload)
    kube.kubectl("-n", namespace, "rollout", "status", workload, "--timeout=180s")


def restart_metacontroller(kube: Kube) -> None:
    """Restart Metacontroller (a StatefulSet, as its published manifests make it)."""
    rollout(kube, NAMESPACE, "statefulset/metacontroller", restart=True)
