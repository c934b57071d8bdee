"""The ``kubernetes`` gang backend on each Kubernetes release the project supports, with that release's real
kube-scheduler: 1.36.2's (``scheduling.k8s.io/v1alpha2``, ``deploy/overlays/kubernetes-1.36``) and 1.37.2's
(``v1beta1``, ``deploy/overlays/kubernetes``, built from its Go module); and the upgrade from one to the other
as docs/operations.md has it, with a job running through it.

A control plane of its own per release (its apiserver gates and runtime-config), the scheduler, nodes
without a kubelet (tests/node/kubeletless.py: Pods are bound, never run; the test plays kubelet for the
status), Metacontroller and the hook with the release's overlay. The same test runs on both releases.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.kube.gang import WORKLOAD_SCHEDULED_CONDITIONS
from tests.e2e import jobs
from tests.e2e.controlplane import (
    ControlPlane,
    Options,
    start_control_plane,
    upgrade,
    with_metacontroller_crds,
)
from tests.e2e.hook import Hook, install_caller_token
from tests.e2e.kube import ApiError, Kube, finish_pod, run_pod, wait_for
from tests.e2e.processes import Processes, Started
from tests.node import kubeletless
from tests.node.node import start_scheduler
from tests.node.quickstart import doc_blocks
from tests.support import kubernetes_releases
from tests.support.kubernetes_releases import V1_36, V1_37, Release

ROOT = Path(__file__).resolve().parents[2]
NODES = {f"wl-{i}": ({"example.com/rack": "r1"}, "2") for i in range(2)}  # 2 x 2 CPUs
HOLD_SECONDS = 10.0  # how long a gang that cannot fit is watched staying unbound


@dataclass
class Cluster:
    release: Release
    kube: Kube
    plane: ControlPlane
    hook: Hook
    scheduler: Started
    node_bin: Path
    workdir: Path

    def namespace_problems(self, namespace: str) -> list[str]:
        return []


def _overlay_controller(kube: Kube, directory: str) -> dict[str, Any]:
    """The CompositeController ``kubectl kustomize <directory>`` builds."""
    docs = yaml.safe_load_all(kube.kubectl("kustomize", str(ROOT / directory)).stdout)
    return next(d for d in docs if d and d["kind"] == "CompositeController")


def install_overlay(kube: Kube, release: Release, hook: Hook) -> None:
    """The release's overlay's CompositeController, calling ``hook``."""
    controller = _overlay_controller(kube, release.overlay)
    for kind in ("sync", "customize"):
        controller["spec"]["hooks"][kind]["webhook"]["url"] = f"{hook.url}/{kind}"
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(controller))


def _options(release: Release) -> Options:
    return Options(apiserver_args=(release.runtime_config,), feature_gates=release.feature_gates)


def start(release: Release, workdir: Path) -> Cluster:
    reason = kubernetes_releases.missing(release)
    if reason:
        pytest.skip(f"e2e Workload API on {release.version}: {reason}")
    bin_dir, node_bin = kubernetes_releases.binaries(release)
    plane = start_control_plane(bin_dir, workdir / "plane", _options(release))
    try:
        kube = with_metacontroller_crds(plane)
        kube.kubectl("apply", "--server-side", "-k", str(ROOT / "crds"))
        settings = {"MPI_OPERATOR_GANG_SCHEDULING": "kubernetes", **install_caller_token(kube, workdir)}
        (workdir / "hook").mkdir()
        hook = Hook(Processes(workdir / "hook"), workdir / "hook", settings=settings)
        hook.start()
        install_overlay(kube, release, hook)
        scheduler = start_scheduler(plane.processes, node_bin, plane)
        plane.start_metacontroller()
    except BaseException:
        plane.stop()
        raise
    return Cluster(release, kube, plane, hook, scheduler, node_bin, workdir)


@pytest.fixture(scope="module", params=[V1_36, V1_37], ids=lambda r: r.version)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if os.environ.get("MPI_HOOK_E2E_KUBECONFIG"):
        pytest.skip("e2e Workload API: needs control planes of its own (one per release)")
    release: Release = request.param
    started = start(release, tmp_path_factory.mktemp(f"mpi-hook-e2e-k8s-{release.minor}"))
    try:
        with kubeletless.nodes(started.kube, NODES):
            yield started
    finally:
        started.hook.stop()
        started.plane.stop()


@pytest.fixture
def target(cluster: Cluster) -> Cluster:
    """The cluster of the ``ns`` fixture (tests/support/clusters.py)."""
    return cluster


def gang_job(name: str, cpu: str) -> dict[str, Any]:
    """A launcher and two workers of ``cpu`` each that the scheduler may place on the kubelet-less nodes."""
    job = jobs.manifest(name)
    for role in ("Launcher", "Worker"):
        spec = job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]
        spec.pop("schedulingGates")
        spec["tolerations"] = [kubeletless.TOLERATION]
        (container,) = spec["containers"]
        container["resources"] = {"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"cpu": cpu}}
    return job


def pods(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    return [*jobs.worker_pods(kube, ns, name), *jobs.launcher_pods(kube, ns, name)]


def bound(kube: Kube, ns: str, name: str) -> int:
    return sum(1 for pod in pods(kube, ns, name) if pod["spec"].get("nodeName"))


def group(kube: Kube, release: Release, ns: str, kind: str, name: str) -> dict[str, Any] | None:
    try:
        return dict(kube.request("GET", f"/apis/{release.workload_api}/namespaces/{ns}/{kind}/{name}"))
    except ApiError as err:
        if err.status == 404:
            return None
        raise


def scheduled(found: dict[str, Any] | None, release: Release) -> dict[str, Any]:
    """The PodGroup's condition that says whether the gang is placed ({} before the scheduler wrote it)."""
    kind = WORKLOAD_SCHEDULED_CONDITIONS[release.workload_api]
    conditions = ((found or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


def test_the_real_scheduler_binds_a_gang_whole_or_not_at_all(
    cluster: Cluster, ns: str, record_property: pytest.RecordProperty
) -> None:
    """A gang of 3 x 1500m on 2 x 2 CPUs: none bound, and the MPIJob says why with the scheduler's words;
    a gang of 3 x 500m: all bound; both in the release's own version of the Workload API."""
    kube, release = cluster.kube, cluster.release
    jobs.create(kube, ns, gang_job("big", "1500m"))
    wait_for(lambda: len(pods(kube, ns, "big")) == 3, jobs.WAIT, "big's three Pods")
    held = wait_for(
        lambda: (
            scheduled(group(kube, release, ns, "podgroups", "big"), release).get("status") == "False"
            and group(kube, release, ns, "podgroups", "big")
        ),
        60,
        "the scheduler's verdict on big",
    )
    deadline = time.monotonic() + HOLD_SECONDS
    most = 0
    while time.monotonic() < deadline:
        most = max(most, bound(kube, ns, "big"))
        time.sleep(0.5)
    assert most == 0
    assert held["apiVersion"] == release.workload_api
    verdict = scheduled(held, release)
    assert verdict["reason"] == "Unschedulable", verdict
    said = jobs.wait_condition(kube, ns, "big", "GangScheduled", status="False")
    condition = jobs.conditions(said)["GangScheduled"]
    assert condition["reason"] == "Unschedulable"
    assert f"PodGroup big ({release.workload_api}) is not scheduled" in condition["message"]

    jobs.create(kube, ns, gang_job("small", "500m"))
    wait_for(lambda: bound(kube, ns, "small") == 3, 60, "small's three Pods bound")
    placed = scheduled(group(kube, release, ns, "podgroups", "small"), release)
    assert placed["status"] == "True", placed
    workload = group(kube, release, ns, "workloads", "small")
    assert workload is not None and workload["apiVersion"] == release.workload_api
    record_property(
        "e2e_summary",
        f"Kubernetes {release.version} ({release.workload_api}): 3 x 1500m on 2 x 2 CPUs, {most} of 3 bound"
        f" over {HOLD_SECONDS:.0f} s, PodGroup {verdict['type']}=False {verdict['reason']}: "
        f"{verdict.get('message')}; MPIJob GangScheduled=False; 3 x 500m bound whole",
    )


OPERATIONS = ROOT / "docs" / "operations.md"
UPGRADE_SECTION = "### Kubernetes 1.36 to 1.37"


def run_block(cluster: Cluster, commands: list[str]) -> None:
    """Each command as a user pastes it (bash, KUBECONFIG set), but for those that manage Metacontroller and
    the hook's install, which here are processes: stopping Metacontroller, and applying the overlay (its
    CompositeController, then Metacontroller started again, as the overlay's StatefulSet would)."""
    env = {**os.environ, "KUBECONFIG": str(cluster.plane.kubeconfig)}
    for command in commands:
        if command == "kubectl -n metacontroller scale statefulset metacontroller --replicas=0":
            cluster.plane.stop_metacontroller()
        elif command.startswith("kubectl apply --server-side --force-conflicts -k deploy/overlays/"):
            assert command.split()[-1] == cluster.release.overlay, command
            install_overlay(cluster.kube, cluster.release, cluster.hook)
            cluster.plane.start_metacontroller()
        else:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"`{command}` failed ({done.returncode}): {done.stderr}"


def _as_written(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {"spec": job["spec"], "labels": meta.get("labels"), "annotations": meta.get("annotations")}


def test_upgrading_1_36_to_1_37_as_the_operations_guide_says_keeps_a_running_gang_job(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    """A job runs under 1.36 with its v1alpha2 gang; docs/operations.md's procedure (Metacontroller stopped,
    the v1alpha2 objects deleted, the control plane on 1.37, the 1.37 overlay, Metacontroller started); the
    job gets v1beta1 objects, keeps its Pods, spec and conditions, and Succeeds."""
    if os.environ.get("MPI_HOOK_E2E_KUBECONFIG"):
        pytest.skip("the upgrade: needs a control plane of its own")
    for release in (V1_36, V1_37):
        reason = kubernetes_releases.missing(release)
        if reason:
            pytest.skip(f"the upgrade to {V1_37.version}: {reason}")
    began = time.monotonic()
    cluster = start(V1_36, tmp_path)
    try:
        kube, ns = cluster.kube, "upgrade"
        kube.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        with kubeletless.nodes(kube, NODES):
            jobs.create(kube, ns, gang_job("long", "500m"))
            wait_for(lambda: bound(kube, ns, "long") == 3, 60, "long's three Pods bound (1.36)")
            for pod in pods(kube, ns, "long"):
                run_pod(kube, pod)
            jobs.wait_condition(kube, ns, "long", "Running")
            old = group(kube, V1_36, ns, "podgroups", "long")
            assert old is not None and scheduled(old, V1_36)["status"] == "True"
            before = jobs.get(kube, ns, "long")
            kept = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns, "long")}

            # docs/operations.md, "Kubernetes 1.36 to 1.37", as written; what stands for Metacontroller's
            # StatefulSet and the hook's Deployment here (processes) replaces the commands that touch them.
            before_upgrade, after_upgrade = doc_blocks(OPERATIONS, UPGRADE_SECTION)
            run_block(cluster, before_upgrade)
            cluster.plane.processes.stop(cluster.scheduler)
            bin_dir, node_bin = kubernetes_releases.binaries(V1_37)
            upgrade(cluster.plane, bin_dir, _options(V1_37))
            cluster.scheduler = start_scheduler(cluster.plane.processes, node_bin, cluster.plane)
            upgraded = time.monotonic() - began
            cluster.release = V1_37
            run_block(cluster, after_upgrade)

            new = wait_for(lambda: group(kube, V1_37, ns, "podgroups", "long"), jobs.WAIT, "v1beta1 PodGroup")
            assert group(kube, V1_37, ns, "workloads", "long") is not None
            assert new["spec"]["workloadRef"] == {"workloadName": "long", "templateName": "mpijob"}
            assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(kube, ns, "long")} == kept
            finish_pod(kube, jobs.wait_launcher_pod(kube, ns, "long"))
            after = jobs.wait_condition(kube, ns, "long", "Succeeded")
        assert _as_written(after) == _as_written(before)
        created = jobs.conditions(before)["Created"]["lastTransitionTime"]
        assert jobs.conditions(after)["Created"]["lastTransitionTime"] == created
        served = kube.request("GET", "/apis/scheduling.k8s.io")
        versions = [v["version"] for v in served["versions"]]
        assert "v1beta1" in versions and "v1alpha2" not in versions, versions
    finally:
        cluster.hook.stop()
        cluster.plane.stop()
    record_property(
        "e2e_summary",
        f"upgrade 1.36.2 -> 1.37.2 with a running gang job: control plane on 1.37 at {upgraded:.0f} s,"
        f" v1beta1 Workload and PodGroup recreated, the same {len(kept)} Pods, spec and labels unchanged,"
        f" Succeeded at {time.monotonic() - began:.0f} s; scheduling.k8s.io serves {versions}",
    )
