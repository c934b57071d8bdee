"""Gang scheduling on a real control plane: the PodGroup Metacontroller really creates, updates and deletes.

A control plane of its own (the session's has the base CompositeController on every MPIJob; two controllers
on one job fight over its status): both PodGroup CRDs (from our schemas, tests/schemas/, so the apiserver
checks every PodGroup the hook emits), and three CompositeControllers that split the MPIJobs by the label
``e2e.gang``:

- ``volcano``: the CompositeController of ``deploy/overlays/volcano``, its hook run with that setting;
- ``scheduler-plugins``: the same for ``deploy/overlays/scheduler-plugins``;
- ``undeclared``: the base CompositeController (no PodGroup child) calling the Volcano-configured hook.

There is no scheduler: nothing reads the PodGroups; the test plays kubelet as elsewhere.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e import jobs
from tests.e2e.controlplane import ControlPlane, find_binaries, start_control_plane, with_metacontroller_crds
from tests.e2e.hook import Hook, install_caller_token
from tests.e2e.kube import ApiError, Kube, finish_pod, run_pod, wait_for
from tests.e2e.processes import Processes
from tests.support.podgroup_crds import PODGROUP_API_VERSIONS, podgroup_crd

ROOT = Path(__file__).resolve().parents[2]
LABEL = "e2e.gang"
OVERLAYS = {"volcano": "deploy/overlays/volcano", "scheduler-plugins": "deploy/overlays/scheduler-plugins"}
API_VERSIONS = {"volcano": PODGROUP_API_VERSIONS[0], "scheduler-plugins": PODGROUP_API_VERSIONS[1]}


@dataclass
class Gang:
    kube: Kube
    plane: ControlPlane
    hooks: dict[str, Hook]

    def namespace_problems(self, namespace: str) -> list[str]:
        return []


def built_controller(kube: Kube, directory: str) -> tuple[dict[str, Any], str]:
    """The CompositeController and the hook setting ``kubectl kustomize <directory>`` produces."""
    docs = list(yaml.safe_load_all(kube.kubectl("kustomize", str(ROOT / directory)).stdout))
    controller = next(d for d in docs if d and d["kind"] == "CompositeController")
    deployment = next(d for d in docs if d and d["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    setting = next(
        e.get("value", "") for e in container["env"] if e["name"] == "MPI_OPERATOR_GANG_SCHEDULING"
    )
    return controller, setting


def install_controller(kube: Kube, controller: dict[str, Any], name: str, selected: str, hook: Hook) -> None:
    controller = copy.deepcopy(controller)
    controller["metadata"]["name"] = name
    controller["spec"]["parentResource"]["labelSelector"] = {"matchLabels": {LABEL: selected}}
    for kind in ("sync", "customize"):
        controller["spec"]["hooks"][kind]["webhook"]["url"] = f"{hook.url}/{kind}"
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(controller))


def install_crds(kube: Kube) -> None:
    kube.kubectl("apply", "--server-side", "-k", str(ROOT / "crds"))
    for api_version in PODGROUP_API_VERSIONS:
        kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(podgroup_crd(api_version)))
    names = ["mpijobs.kubeflow.org", *(f"podgroups.{v.split('/')[0]}" for v in PODGROUP_API_VERSIONS)]

    def established() -> bool:
        found = [kube.get("customresourcedefinitions", None, n) or {} for n in names]
        return all(
            any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (crd.get("status") or {}).get("conditions") or []
            )
            for crd in found
        )

    wait_for(established, 60, "the MPIJob and PodGroup CRDs to be Established")


@pytest.fixture(scope="module")
def gang(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gang]:
    if os.environ.get("MPI_HOOK_E2E_KUBECONFIG"):
        pytest.skip("e2e gang: needs a control plane of its own (three CompositeControllers, PodGroup CRDs)")
    bin_dir, reason = find_binaries()
    if bin_dir is None:
        pytest.skip(f"e2e: {reason}")
    workdir = tmp_path_factory.mktemp("mpi-hook-e2e-gang")
    plane = start_control_plane(bin_dir, workdir)
    try:
        kube = with_metacontroller_crds(plane)
        install_crds(kube)
        caller = install_caller_token(kube, workdir)
        hooks = {}
        for scheduler, directory in OVERLAYS.items():
            controller, setting = built_controller(kube, directory)
            hook_dir = workdir / scheduler
            hook_dir.mkdir()
            settings = {"MPI_OPERATOR_GANG_SCHEDULING": setting, **caller}
            hook = Hook(Processes(hook_dir), hook_dir, settings=settings)
            hook.start()
            hooks[scheduler] = hook
            install_controller(kube, controller, f"gang-{scheduler}", scheduler, hook)
        base = yaml.safe_load((ROOT / "metacontroller" / "compositecontroller.yaml").read_text())
        install_controller(kube, base, "gang-undeclared", "undeclared", hooks["volcano"])
        plane.start_metacontroller()
        yield Gang(kube, plane, hooks)
    finally:
        for hook in locals().get("hooks", {}).values():
            hook.stop()
        plane.stop()


@pytest.fixture
def target(gang: Gang) -> Gang:
    """The cluster of the ``ns`` fixture (tests/support/clusters.py): this module's own control plane."""
    return gang


def podgroup(kube: Kube, scheduler: str, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return dict(kube.request("GET", f"/apis/{API_VERSIONS[scheduler]}/namespaces/{ns}/podgroups/{name}"))
    except ApiError as err:
        if err.status == 404:
            return None
        raise


def wait_podgroup(kube: Kube, scheduler: str, ns: str, name: str, **spec: Any) -> dict[str, Any]:
    """Wait until the PodGroup exists with ``spec`` (a subset of its spec); return it."""

    def probe() -> dict[str, Any] | None:
        found = podgroup(kube, scheduler, ns, name)
        return found if found is not None and spec.items() <= found["spec"].items() else None

    return wait_for(probe, jobs.WAIT, lambda: f"PodGroup {spec}: {podgroup(kube, scheduler, ns, name)}")


def wait_no_podgroup(kube: Kube, scheduler: str, ns: str, name: str) -> None:
    wait_for(lambda: podgroup(kube, scheduler, ns, name) is None, jobs.WAIT, "the PodGroup to be deleted")


def labelled(name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    job = jobs.manifest(name, **spec)
    job["metadata"]["labels"] = {LABEL: scheduler}
    return job


def assert_joined(kube: Kube, scheduler: str, ns: str, name: str) -> None:
    """The workers and the launcher's Pod name the scheduler and the group, as the hook decorated them."""
    pods = [*jobs.worker_pods(kube, ns, name), *jobs.launcher_pods(kube, ns, name)]
    assert pods
    for pod in pods:
        meta = pod["metadata"]
        if scheduler == "volcano":
            assert pod["spec"]["schedulerName"] == "volcano"
            assert meta["annotations"]["scheduling.k8s.io/group-name"] == name
        else:
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert meta["labels"]["scheduling.x-k8s.io/pod-group"] == name


@pytest.mark.parametrize("scheduler", sorted(OVERLAYS))
def test_podgroup_through_a_jobs_life(gang: Gang, ns: str, scheduler: str) -> None:
    """Create, edit schedulingPolicy, suspend, resume, finish: the PodGroup follows, owned by the MPIJob."""
    kube, name = gang.kube, "pg"
    jobs.create(kube, ns, labelled(name, scheduler))
    group = wait_podgroup(kube, scheduler, ns, name, minMember=3)
    assert group["spec"]["minResources"] == {"cpu": "2", "memory": "2Gi"}  # the workers' limits
    (owner,) = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", name, True)
    if scheduler == "volcano":
        assert group["spec"]["queue"] == "default"  # the CRD default fills what the hook leaves out
    else:
        assert group["spec"]["scheduleTimeoutSeconds"] == 0
    jobs.run_workers(kube, ns, name, 2)
    run_pod(kube, jobs.wait_launcher_pod(kube, ns, name))
    jobs.wait_condition(kube, ns, name, "Running")
    assert_joined(kube, scheduler, ns, name)

    policy = {"minAvailable": 2, "queue": "research", "scheduleTimeoutSeconds": 60}
    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"schedulingPolicy": policy}}})
    updated = wait_podgroup(kube, scheduler, ns, name, minMember=2)
    assert updated["metadata"]["uid"] == group["metadata"]["uid"], "updated in place"
    assert updated["spec"].get("queue" if scheduler == "volcano" else "scheduleTimeoutSeconds") == (
        "research" if scheduler == "volcano" else 60
    )

    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"suspend": True}}})
    jobs.wait_condition(kube, ns, name, "Suspended")
    wait_no_podgroup(kube, scheduler, ns, name)
    wait_for(lambda: not jobs.worker_pods(kube, ns, name), jobs.WAIT, "workers deleted while suspended")

    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    resumed = wait_podgroup(kube, scheduler, ns, name, minMember=2)
    assert resumed["metadata"]["uid"] != group["metadata"]["uid"], "re-created on resume"
    jobs.run_workers(kube, ns, name, 2)
    finish_pod(kube, run_pod(kube, jobs.wait_launcher_pod(kube, ns, name)), 0)
    jobs.wait_condition(kube, ns, name, "Succeeded")
    wait_no_podgroup(kube, scheduler, ns, name)  # cleanPodPolicy Running


def test_wait_for_workers_ready_starts(gang: Gang, ns: str) -> None:
    """Upstream #608: the group is the workers until the launcher exists, then counts it too."""
    kube, name = gang.kube, "wait"
    jobs.create(kube, ns, labelled(name, "volcano", launcherCreationPolicy="WaitForWorkersReady"))
    wait_podgroup(kube, "volcano", ns, name, minMember=2)
    jobs.run_workers(kube, ns, name, 2)
    wait_podgroup(kube, "volcano", ns, name, minMember=3)
    run_pod(kube, jobs.wait_launcher_pod(kube, ns, name))
    jobs.wait_condition(kube, ns, name, "Running")


def test_priority_classes_from_the_cluster(gang: Gang, ns: str) -> None:
    """The customize hook's PriorityClasses (cluster-scoped, hook v2) rank the gang's minResources."""
    kube, name = gang.kube, "prio"
    high = f"e2e-high-{ns[-5:]}"
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": high},
        "value": 1000,
    }
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(priority_class))
    try:
        job = labelled(name, "volcano", runPolicy={"schedulingPolicy": {"minAvailable": 2}})
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
        launcher["priorityClassName"] = high
        launcher["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
        jobs.create(kube, ns, job)
        group = wait_podgroup(kube, "volcano", ns, name, minMember=2, priorityClassName=high)
        assert group["spec"]["minResources"] == {"cpu": "1100m", "memory": "1088Mi"}  # launcher + 1 worker
    finally:
        kube.kubectl("delete", "priorityclass", high, "--wait=false", check=False)


def test_podgroup_child_not_declared(gang: Gang, ns: str) -> None:
    """The base CompositeController with a Volcano-configured hook: the job runs ungrouped and says why."""
    kube, name = gang.kube, "plain"
    jobs.create(kube, ns, labelled(name, "undeclared"))
    job = jobs.wait_condition(kube, ns, name, "GangSchedulingUnavailable")
    condition = jobs.conditions(job)["GangSchedulingUnavailable"]
    assert condition["reason"] == "PodGroupChildNotDeclared"
    assert "scheduling.volcano.sh/v1beta1 podgroups" in condition["message"]
    assert "deploy/overlays/volcano" in condition["message"]
    assert podgroup(kube, "volcano", ns, name) is None
    jobs.run_workers(kube, ns, name, 2)
    run_pod(kube, jobs.wait_launcher_pod(kube, ns, name))
    job = jobs.wait_condition(kube, ns, name, "Running")
    assert jobs.condition_status(job) == {
        "Created": "True",
        "GangSchedulingUnavailable": "True",
        "Running": "True",
    }
    # The notice goes first: kubectl's STATE column (the last condition) still says Running.
    assert job["status"]["conditions"][0]["type"] == "GangSchedulingUnavailable"
    columns = kube.kubectl("get", "mpijob", name, "-n", ns, "--no-headers").stdout.split()
    assert "Running" in columns
    assert all(
        "schedulerName" not in p["spec"] or p["spec"]["schedulerName"] == "default-scheduler"
        for p in jobs.worker_pods(kube, ns, name)
    )
