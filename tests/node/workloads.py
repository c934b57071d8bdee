"""Kubernetes' own gang scheduling on the real node: the Workload API's objects, what the scheduler did with a
group's Pods, and how much CPU the node has left for a test's Pods.

The node's release's version of it (``scheduling.k8s.io/v1beta1`` on 1.37, ``v1alpha2`` on 1.36, served
with the gates of tests/support/kubernetes_releases.py): a ``PodGroup`` with
``spec.schedulingPolicy.gang.minCount`` is scheduled all or nothing by the real kube-scheduler; a Pod joins
it by ``spec.schedulingGroup.podGroupName``; ``spec.schedulingConstraints.topology[0].key`` keeps the whole
group in one domain of that node label. The scheduler reports on the group in its
``PodGroupInitiallyScheduled`` condition (``PodGroupScheduled`` in 1.36).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.kube.gang import WORKLOAD_SCHEDULED_CONDITIONS
from tests.e2e.kube import ApiError, Kube, wait_for
from tests.node.node import NODE_NAME
from tests.support.kubernetes_releases import NODE_RELEASE

WORKLOAD_API = NODE_RELEASE.workload_api
# The PodGroup's condition that says whether the gang is placed.
SCHEDULED = WORKLOAD_SCHEDULED_CONDITIONS[WORKLOAD_API]

PAUSE = "registry.k8s.io/pause:3.10.2"
_TERMINAL = ("Succeeded", "Failed")


def url(kind: str, namespace: str, name: str = "") -> str:
    """``workloads`` or ``podgroups`` of ``namespace`` (one of them with ``name``)."""
    base = f"/apis/{WORKLOAD_API}/namespaces/{namespace}/{kind}"
    return f"{base}/{name}" if name else base


def get(kube: Kube, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return dict(kube.request("GET", url(kind, namespace, name)))
    except ApiError as err:
        if err.status == 404:
            return None
        raise


def create_pod_group(
    kube: Kube, namespace: str, name: str, min_count: int, topology_key: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    group = {"apiVersion": WORKLOAD_API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}
    return dict(kube.request("POST", url("podgroups", namespace), group))


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The object's status condition ``kind`` ({} when it has none)."""
    found = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in found if c.get("type") == kind), {})


def scheduled(kube: Kube, namespace: str, group: str) -> dict[str, Any]:
    """The PodGroup's ``SCHEDULED`` condition ({} before the scheduler wrote one)."""
    return condition(get(kube, "podgroups", namespace, group), SCHEDULED)


def pause_pod(name: str, cpu: str, group: str = "", **spec: Any) -> dict[str, Any]:
    """A pause Pod requesting ``cpu``; in PodGroup ``group`` when given."""
    container = {
        "name": "pause",
        "image": PAUSE,
        "imagePullPolicy": "Never",
        "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}},
    }
    pod_spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0, **spec}
    if group:
        pod_spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod_spec}


def bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["spec"].get("nodeName")]


def active(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods that hold their node's resources: bound and not finished."""
    return [p for p in bound(pods) if p["status"].get("phase") not in _TERMINAL]


def _millicores(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def _requested(pod: dict[str, Any]) -> int:
    """A Pod's CPU request as the scheduler counts it: its containers' sum, or its largest init container."""
    spec = pod["spec"]

    def cpu(container: dict[str, Any]) -> int:
        return _millicores(((container.get("resources") or {}).get("requests") or {}).get("cpu", "0"))

    inits = [cpu(c) for c in spec.get("initContainers") or []]
    return max([sum(cpu(c) for c in spec["containers"]), *inits])


def free_cpu(kube: Kube, node: str = NODE_NAME) -> int:
    """Millicores the scheduler still sees free on ``node``: allocatable minus every bound, unfinished Pod's
    request."""
    allocatable = (kube.get("nodes", None, node) or {})["status"]["allocatable"]["cpu"]
    pods = [
        p
        for p in kube.list("pods")
        if p["spec"].get("nodeName") == node and p["status"].get("phase") not in _TERMINAL
    ]
    return _millicores(allocatable) - sum(_requested(p) for p in pods)


def settled_free_cpu(kube: Kube, installed: tuple[str, ...], node: str = NODE_NAME) -> int:
    """``free_cpu`` once only the install's Pods (namespaces ``installed``) remain on the node: earlier tests'
    namespaces are deleted without waiting, and their Pods would free CPU during a test."""

    def others() -> list[str]:
        return [
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in kube.list("pods")
            if p["spec"].get("nodeName") == node
            and p["metadata"]["namespace"] not in installed
            and p["status"].get("phase") not in _TERMINAL
        ]

    wait_for(lambda: not others(), 180, lambda: f"only the install's Pods on {node}; also {others()}")
    return free_cpu(kube, node)


@dataclass
class Watch:
    """Polls the number of active (bound, unfinished) Pods of each group every ``period`` seconds: what a
    test asserts about placement over time (never a partial start, when each group was whole)."""

    pods: Callable[[], dict[str, list[dict[str, Any]]]]
    period: float = 0.5
    samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)

    def sample(self) -> dict[str, int]:
        counts = {group: len(active(pods)) for group, pods in self.pods().items()}
        self.samples.append((time.monotonic() - self.began, counts))
        return counts

    def until(self, done: Callable[[dict[str, int]], bool], timeout: float, what: str) -> float:
        """Sample until ``done(counts)``; the seconds it took."""
        deadline = time.monotonic() + timeout
        while not done(self.sample()):
            if time.monotonic() > deadline:
                last = self.samples[-5:]
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}: {last}")
            time.sleep(self.period)
        return self.samples[-1][0]

    def hold(self, seconds: float) -> None:
        """Sample for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.sample()
            time.sleep(self.period)

    def most(self, group: str) -> int:
        return max((counts.get(group, 0) for _, counts in self.samples), default=0)

    def whole_at(self, group: str, size: int) -> float | None:
        """When ``group`` first had all ``size`` Pods active (None: never)."""
        return next((t for t, counts in self.samples if counts.get(group, 0) >= size), None)

    def partial_start(self, group: str, size: int) -> list[tuple[float, int]]:
        """Samples, before ``group`` was first whole, with some but not all of its Pods bound. A gang's Pods
        are bound one API call after another once the group is admitted, so one such sample right before
        the whole group is the binding in flight, not a partial start: it is left out."""
        found: list[tuple[float, int]] = []
        for (t, counts), (_, after) in zip(self.samples, [*self.samples[1:], (0.0, {})], strict=True):
            count = counts.get(group, 0)
            if count >= size:
                break
            if count and after.get(group, 0) < size:
                found.append((t, count))
        return found
