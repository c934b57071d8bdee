"""Nodes without a kubelet: topology domains for the real kube-scheduler on a one-machine cluster.

A ``Node`` is created with its labels, then given capacity, allocatable and a ``Ready`` condition through the
status subresource, as a kubelet would report them. The scheduler binds Pods to it; nothing ever runs them, so
a test asserts binding only. The apiserver creates every Node with the ``not-ready`` taint and the
node-lifecycle controller removes it once the node reports Ready (``nodes`` waits for that). Without a
heartbeat the controller would mark the node unreachable after its grace period (50 s) and taint it, so
``nodes`` renews each node's Lease in ``kube-node-lease`` every few seconds, as a kubelet does: the nodes stay
Ready for as long as a test holds them. Each carries the ``TAINT`` (NoSchedule): only Pods that tolerate it
(``TOLERATION``) land there, never the hook's or another test's.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from tests.e2e.kube import ApiError, Kube, wait_for

TAINT = {"key": "mpi-hook-test/kubeletless", "value": "true", "effect": "NoSchedule"}
TOLERATION = {"key": TAINT["key"], "operator": "Equal", "value": "true", "effect": "NoSchedule"}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
RENEW_SECONDS = 5.0  # a kubelet renews every 10 s; the controller's grace period is 50 s


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _micro_now() -> str:
    """A Lease's ``renewTime`` (MicroTime)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def add(kube: Kube, name: str, labels: Mapping[str, str], cpu: str, memory: str = "8Gi") -> None:
    """One node ``name`` with ``labels`` and ``cpu``/``memory`` allocatable, reporting Ready, and its Lease
    (owned by the node: deleted with it)."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": [TAINT]},
    }
    created = kube.create("nodes", None, node)
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    now = _now()
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "a node object without a kubelet (test)",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    status = {"capacity": resources, "allocatable": resources, "conditions": [ready]}
    kube.patch("nodes", None, name, {"status": status}, "strategic", sub="status")
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": created["metadata"]["uid"]}
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "ownerReferences": [owner]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": _micro_now()},
    }
    kube.request("POST", LEASES, lease)


def schedulable(kube: Kube, name: str) -> bool:
    """The node carries the test's taint and no other (the controller removed ``not-ready``)."""
    taints = ((kube.get("nodes", None, name) or {}).get("spec") or {}).get("taints") or []
    return [t["key"] for t in taints] == [TAINT["key"]]


def renew(kube: Kube, names: set[str]) -> None:
    """Renew each node's Lease: the node-lifecycle controller's heartbeat."""
    for name in names:
        patch = {"spec": {"renewTime": _micro_now()}}
        kube.request("PATCH", f"{LEASES}/{name}", patch, "application/merge-patch+json")


@contextmanager
def heartbeat(kube: Kube, names: set[str]) -> Iterator[None]:
    """Renew the nodes' Leases every ``RENEW_SECONDS`` in a thread, until the block ends."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(RENEW_SECONDS):
            # The apiserver restarting (an upgrade): the next beat renews.
            with contextlib.suppress(ApiError, httpx.HTTPError):
                renew(kube, names)

    thread = threading.Thread(target=beat, name="kubeletless-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


def bound_to(kube: Kube, names: set[str]) -> list[dict[str, Any]]:
    """Every Pod (all namespaces) bound to one of ``names``."""
    pods = kube.list("pods")
    return [p for p in pods if p["spec"].get("nodeName") in names]


def remove(kube: Kube, names: set[str]) -> None:
    """The nodes first (nothing binds there any more), then their Pods at once: no kubelet will confirm a
    graceful deletion, and a controller's replacement Pod now has nowhere to go among them."""
    for name in names:
        kube.delete("nodes", None, name)
    wait_for(lambda: not [n for n in names if kube.get("nodes", None, n)], 30, f"nodes {sorted(names)} gone")

    def force_delete() -> bool:
        left = bound_to(kube, names)
        for pod in left:
            meta = pod["metadata"]
            if "deletionTimestamp" in meta and meta.get("finalizers"):
                # A Job's tracking finalizer waits for the Job controller, which may be slow to come to a
                # Pod that will never run: the Pod is going, and what it tracked is going with it.
                with contextlib.suppress(ApiError):
                    kube.patch("pods", meta["namespace"], meta["name"], {"metadata": {"finalizers": None}})
            kube.delete("pods", meta["namespace"], meta["name"], grace=0)
        return not left

    def left() -> str:
        metas = [p["metadata"] for p in bound_to(kube, names)]
        return f"Pods bound to {sorted(names)} deleted; left: " + "; ".join(
            f"{m['namespace']}/{m['name']} {m.get('finalizers')} deleting={'deletionTimestamp' in m}"
            for m in metas
        )

    wait_for(force_delete, 60, left)


@contextmanager
def nodes(kube: Kube, wanted: Mapping[str, tuple[Mapping[str, str], str]]) -> Iterator[set[str]]:
    """Node name -> (labels, CPUs allocatable): all created, then waited for, kept Ready by their Leases;
    removed (with their Pods) afterwards."""
    names: set[str] = set()
    try:
        for name, (labels, cpu) in wanted.items():
            names.add(name)
            add(kube, name, labels, cpu)
        with heartbeat(kube, names):
            waiting = lambda: sorted(n for n in names if not schedulable(kube, n))  # noqa: E731
            wait_for(lambda: not waiting(), 60, lambda: f"nodes {waiting()} with only the test's taint")
            yield names
    finally:
        remove(kube, names)
