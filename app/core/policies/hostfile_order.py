"""Ours: the hostfile order of an ordered job (``mpi-operator-hook/hostfile-order: topology``), and when
the launcher may start on it.

Each host (the launcher with ``runLauncherAsWorker``, then the workers) is placed by the node its Pod is
bound to: hosts are sorted by that node's values of the order labels, coarsest first, a node lacking a
label after those that have it; then by node name, so one node's Pods are neighbours; then by index
order, so equal hosts keep it. Rank neighbours thus share the finest domain they can.

The order is final once every host is bound; until then it is pending: the hostfile keeps index order and
its order header says so. The launcher Job is created only once the final hostfile is stored, so its Pod
mounts the order ``mpirun`` will use (with ``WaitForWorkersReady`` too). A launcher-as-worker is itself a
host that is placed only once its Pod is bound: that launcher is created as usual, and its
``wait-for-workers`` holds ``mpirun`` until the hostfile it sees names its own Pod
(``app.children.launcher_wait``). A finished job keeps the hostfile it ran on (its workers may be gone), as
upstream keeps a finished job's ConfigMap: the kept order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.api.defaults import Job
from app.children.configmap import hostfile, upstream_hosts
from app.children.hostfile_order_lines import ORDER_KEY, HostfileOrder, Placement
from app.core.observed import Observed
from app.kube import names
from app.kube.pod_phase import PodPhase
from app.kube.request import ObservedPod


@dataclass(frozen=True, slots=True)
class HostfileOrderDecision:
    # None: index order (the job did not ask for topology order).
    order: HostfileOrder | None = None
    # The launcher Job may be created as far as the order goes.
    launcher_may_start: bool = True
    # The kept order: a finished job's hostfile and order table as stored, the order its ranks ran in.
    kept: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class TopologyOrder:
    """What an ordered job's hostfile order is made from besides what exists: its order labels
    (``app.api.hostfile_order_annotations.order_labels``) and the cluster domain its host names end in."""

    labels: tuple[str, ...]
    cluster_domain: str = ""


def decide(
    job: Job, observed: Observed, topology: TopologyOrder | None, *, finished_before: bool
) -> HostfileOrderDecision:
    """``topology``: None for index order; ``observed``: the current attempt."""
    if topology is None:
        return HostfileOrderDecision()
    order = hostfile_order(job, observed, topology.labels)
    if finished_before and observed.stored_config is not None:
        kept = {key: observed.stored_config.get(key, "") for key in (names.HOSTFILE_KEY, ORDER_KEY)}
        return HostfileOrderDecision(order, kept=kept)
    if job.run_launcher_as_worker:
        return HostfileOrderDecision(order)
    stored = observed.stored_hostfile == hostfile(job, topology.cluster_domain, order)
    return HostfileOrderDecision(order, launcher_may_start=order.final and stored)


def hostfile_order(job: Job, observed: Observed, labels: tuple[str, ...]) -> HostfileOrder:
    """The hosts placed by their nodes: sorted once all are bound (final), index order until then."""
    pods: list[ObservedPod | None] = []
    launcher = None
    if job.run_launcher_as_worker:
        launcher = current_launcher_pod(observed.launcher_pods or [])
        pods.append(launcher)
    pods += [observed.workers.get(i) for i in range(job.worker_replicas)]
    placements = [
        _place(host, pod, observed.node_labels, labels)
        for host, pod in zip(upstream_hosts(job), pods, strict=True)
    ]
    launcher_pod = launcher.metadata.name if launcher is not None and launcher.spec.nodeName else ""
    order = HostfileOrder(labels, tuple(placements), launcher_pod)
    if not order.final:
        return order
    ranked = sorted(enumerate(placements), key=lambda item: (_sort_key(item[1]), item[0]))
    return HostfileOrder(labels, tuple(p for _, p in ranked), launcher_pod)


def current_launcher_pod(pods: list[ObservedPod]) -> ObservedPod | None:
    """The launcher Pod of this try: the newest that has not ended (a retry replaces a failed one), else the
    newest that has (the launcher is done: the order it ran on stays)."""
    live = [pod for pod in pods if pod.phase not in (PodPhase.SUCCEEDED, PodPhase.FAILED)]
    return max(
        live or pods, key=lambda pod: (pod.metadata.creationTimestamp or "", pod.metadata.name), default=None
    )


def _place(
    host: str, pod: ObservedPod | None, nodes: Mapping[str, Mapping[str, str]], labels: tuple[str, ...]
) -> Placement:
    node = pod.spec.nodeName if pod is not None else ""
    node_labels = nodes.get(node, {})
    return Placement(host, node, tuple(node_labels.get(label) for label in labels))


def _sort_key(placement: Placement) -> tuple[tuple[tuple[bool, str], ...], str]:
    """Label values, coarsest first, each missing one after every present one; then the node's name."""
    return tuple((value is None, value or "") for value in placement.values), placement.node
