"""The hook's ``kubernetes`` gang backend on the real node: switching the install to its overlay and back, and
MPIJobs sized against the node's free CPU.

The switch is what a user does: ``kubectl apply --server-side -k deploy/overlays/kubernetes`` (the overlay
of the node's release: ``kubernetes-1.36`` on 1.36; with
``--force-conflicts``: the quick start's ``kubectl set image`` owns the image field), the quick start's
``set image`` again, and the rollout. Back to ``deploy/`` the same way: later tests see the quick start's
install.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import runs, workloads
from tests.node.conftest import RealNode
from tests.node.quickstart import quick_start_blocks
from tests.support.kubernetes_releases import NODE_RELEASE

OVERLAY = NODE_RELEASE.overlay
QUICK_START = "deploy/"
HOOK = ("mpi-operator", "mpi-operator-hook")
SETTING = "MPI_OPERATOR_GANG_SCHEDULING"
TOPOLOGY_ANNOTATION = "mpi-operator-hook/gang-topology-key"
INSTALLED = ("mpi-operator", "metacontroller")  # the namespaces of the install's own Pods


def gang_setting(kube: Kube) -> str:
    """The hook Deployment's MPI_OPERATOR_GANG_SCHEDULING ('' when unset)."""
    deployment = kube.get("deployments", *HOOK) or {}
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return next((e.get("value", "") for e in container.get("env") or [] if e["name"] == SETTING), "")


def install(node: RealNode, directory: str) -> None:
    """Apply ``directory`` over the running install, as a user switches overlays, and wait for the rollout."""
    commands = quick_start_blocks()[0]
    (set_image,) = [c for c in commands if " set image " in c]
    rollouts = [c for c in commands if " rollout status " in c]
    runner = node.runner()
    runner.run(f"kubectl apply --server-side --force-conflicts -k {directory}")
    runner.run(set_image)
    for command in rollouts:
        runner.run(command)


def pi(name: str, cpu_millicores: int, **annotations: str) -> dict[str, Any]:
    """examples/pi/pi.yaml as ``name``, every container requesting (and limited to) ``cpu_millicores`` and
    256Mi, so CPU alone decides what fits."""
    job = sized(runs.example("pi.yaml", name), cpu_millicores)
    if annotations:
        job["metadata"]["annotations"] = dict(annotations)
    return job


def sized(job: dict[str, Any], cpu_millicores: int) -> dict[str, Any]:
    """``job`` with every container requesting (and limited to) ``cpu_millicores`` and 256Mi."""
    amount = {"cpu": f"{cpu_millicores}m", "memory": "256Mi"}
    for container in runs.containers(job):
        container["resources"] = {"requests": dict(amount), "limits": dict(amount)}
    return job


def pod_specs(job: dict[str, Any]) -> list[dict[str, Any]]:
    specs = job["spec"]["mpiReplicaSpecs"]
    return [specs[role]["template"]["spec"] for role in ("Launcher", "Worker")]


def job_pods(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    """The job's workers and launcher Pods."""
    return jobs.worker_pods(kube, ns, name) + jobs.launcher_pods(kube, ns, name)


def unscheduled_reasons(pods: list[dict[str, Any]]) -> set[str]:
    """The scheduler's messages on the Pods' ``PodScheduled`` False condition."""
    found = set()
    for pod in pods:
        for condition in pod["status"].get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition["status"] == "False":
                found.add(f"{condition.get('reason')}: {condition.get('message')}")
    return found


@dataclass(frozen=True)
class ScaleSample:
    """One look at a job being scaled up: the new worker Pod (exists, bound) and the PodGroup's gang size."""

    seconds: float
    exists: bool
    bound: bool
    size: int


def scale_up(kube: Kube, ns: str, name: str, size: Callable[[], int], timeout: float) -> list[ScaleSample]:
    """Scale the running job ``name`` from one worker to two; sample the new worker, then the PodGroup's gang
    size (``size``: 0 while there is none), in that order, until the worker is bound. Read in that order, a
    sample with the new worker and the old size would show the worker created first."""
    samples: list[ScaleSample] = []
    began = time.monotonic()
    kube.patch("mpijobs", ns, name, {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}}})

    def bound() -> bool:
        pod = kube.get("pods", ns, f"{name}-worker-1")
        placed = pod is not None and bool(pod["spec"].get("nodeName"))
        samples.append(ScaleSample(time.monotonic() - began, pod is not None, placed, size()))
        return placed

    wait_for(bound, timeout, f"{ns}/{name}'s new worker bound")
    return samples


PROBE_NAMESPACE = "gang-overlay-probe"


def wait_until_declared(kube: Kube, podgroup: Callable[[str, str], dict[str, Any] | None]) -> None:
    """Until a job gets its PodGroup (``podgroup(namespace, name)``, in the overlay's kind): Metacontroller
    takes an overlay's new child declaration a while after the apply (longer under load, or when an earlier
    overlay's CRD was just deleted), and a job synced before then runs without its gang, as the hook says
    (GangSchedulingUnavailable)."""
    kube.kubectl("create", "namespace", PROBE_NAMESPACE)
    try:
        runs.apply(kube, PROBE_NAMESPACE, sized(runs.gated("probe"), 50))
        taken = "the probe job's PodGroup (the overlay taken)"
        wait_for(lambda: podgroup(PROBE_NAMESPACE, "probe"), 180, taken)
    finally:  # the gated launcher ignores SIGTERM: its Pods go at once, not after 30 s
        kube.kubectl("-n", PROBE_NAMESPACE, "delete", "mpijob", "probe", "--wait=false", check=False)
        kube.kubectl(
            "-n", PROBE_NAMESPACE, "delete", "pods", "--all", "--grace-period=0", "--force", check=False
        )
        kube.kubectl("delete", "namespace", PROBE_NAMESPACE, "--wait=true", "--timeout=120s", check=False)


def gang_held(kube: Kube, ns: str, name: str) -> dict[str, Any] | None:
    """The MPIJob's GangScheduled=False condition, or None."""
    held = jobs.conditions(jobs.get(kube, ns, name)).get("GangScheduled")
    return held if held is not None and held.get("status") == "False" else None


@dataclass(frozen=True)
class OneAfterTheOther:
    """What ``one_after_the_other`` saw: each job's Pods by CPU, when each was whole, what each said."""

    free: int
    each: int
    took: float  # until both Succeeded
    checked: float  # with the checks after
    whole: dict[str, float]
    first: str
    second: str
    samples: int
    waited: dict[str, str]  # the GangScheduled=False each said while it waited (none: it did not)


def one_after_the_other(kube: Kube, ns: str, installed: tuple[str, ...], timeout: float) -> OneAfterTheOther:
    """Two pi jobs of 3 Pods that fit only one at a time, applied together: both Succeed, each whole at
    some point and never partly bound, never both holding the node, each rank on its hostfile."""
    free = workloads.settled_free_cpu(kube, installed)
    each = free // 3  # three Pods fit, four do not
    began = time.monotonic()
    names = ("one", "two")
    for name in names:
        runs.apply(kube, ns, pi(name, each))
    watch = workloads.Watch(lambda: {n: job_pods(kube, ns, n) for n in names})
    waited: dict[str, str] = {}

    def both_succeeded(_: dict[str, int]) -> bool:
        for name in names:
            if name not in waited and (held := gang_held(kube, ns, name)) is not None:
                waited[name] = f"{held['reason']}: {held['message'][:160]}"
        return all(
            jobs.conditions(jobs.get(kube, ns, n)).get("Succeeded", {}).get("status") == "True" for n in names
        )

    took = watch.until(both_succeeded, timeout, "both jobs Succeeded")
    whole = {n: watch.whole_at(n, 3) for n in names}
    assert None not in whole.values(), (whole, watch.samples)
    for name in names:
        assert watch.partial_start(name, 3) == [], (name, watch.samples)
    overlap = [(t, c) for t, c in watch.samples if c["one"] and c["two"]]
    assert overlap == [], overlap
    first, second = sorted(names, key=lambda n: whole[n] or 0)
    for name in names:
        runs.assert_ran_on_hostfile(kube, ns, name, 2)
    times = {n: t for n, t in whole.items() if t is not None}
    checked = time.monotonic() - began
    return OneAfterTheOther(free, each, took, checked, times, first, second, len(watch.samples), waited)
