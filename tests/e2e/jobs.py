"""MPIJob manifests for the scenarios and questions about a job in the cluster (conditions, children)."""

from __future__ import annotations

import copy
from typing import Any

from tests.e2e.kube import Kube, run_pod, wait_for

WAIT = 60.0  # a sync round trip is well under a second; this bounds a stuck scenario
IMAGE = "mpioperator/mpi-pi:openmpi"
NO_KUBELET = {"name": "e2e.example.com/no-kubelet"}
CHILD_KINDS = ("pods", "jobs", "services", "secrets", "configmaps")
# The failure policy's attempt, on the launcher Job, its Pods and the workers.
ATTEMPT = "mpi-operator-hook/restart-attempt"


def _template(container: dict[str, Any]) -> dict[str, Any]:
    """A pod template as the image needs it: its user (uid 1000) owns the key path the jobs mount."""
    return {
        "spec": {
            "schedulingGates": [NO_KUBELET],
            "securityContext": {"runAsUser": 1000},
            "containers": [{"image": IMAGE, **container}],
        }
    }


def manifest(name: str, workers: int = 2, **spec: Any) -> dict[str, Any]:
    """A small MPIJob whose Pods never run; ``spec`` keys override the defaults.

    The scheduling gate keeps a real scheduler and kubelet (a kind cluster) away from the Pods, so the status
    the tests write as kubelet stays theirs; the control plane started by the tests has neither anyway.
    """
    launcher = _template({"name": "launcher", "command": ["mpirun", "-n", str(workers), "/home/mpiuser/pi"]})
    worker = _template({"name": "worker", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
    base: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": launcher},
                "Worker": {"replicas": workers, "template": worker},
            },
        },
    }
    for key, value in spec.items():
        if key == "runPolicy":
            base["spec"]["runPolicy"].update(value)
        else:
            base["spec"][key] = copy.deepcopy(value)
    return base


def create(kube: Kube, ns: str, job: dict[str, Any]) -> dict[str, Any]:
    return kube.create("mpijobs", ns, job)


def get(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    job = kube.get("mpijobs", ns, name)
    assert job is not None, f"MPIJob {ns}/{name} is gone"
    return job


def conditions(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in job.get("status", {}).get("conditions", [])}


def condition_status(job: dict[str, Any]) -> dict[str, str]:
    """{type: "True"/"False"} of the job's conditions, for whole-dict assertions."""
    return {t: c["status"] for t, c in conditions(job).items()}


def wait_condition(
    kube: Kube, ns: str, name: str, ctype: str, status: str = "True", timeout: float = WAIT
) -> dict[str, Any]:
    """Wait until the MPIJob has condition ``ctype`` with ``status``; return the job."""

    def probe() -> dict[str, Any] | None:
        job = get(kube, ns, name)
        found = conditions(job).get(ctype)
        return job if found and found["status"] == status else None

    return wait_for(
        probe, timeout, lambda: f"{ns}/{name} {ctype}={status}; status: {get(kube, ns, name).get('status')}"
    )


def names(kube: Kube, ns: str, resource: str, selector: str | None = None) -> set[str]:
    return {o["metadata"]["name"] for o in kube.list(resource, ns, selector)}


def owned(kube: Kube, ns: str, resource: str) -> list[dict[str, Any]]:
    """Objects of a kind that have an owner (skips what the control plane puts in every namespace)."""
    return [o for o in kube.list(resource, ns) if o["metadata"].get("ownerReferences")]


def children(kube: Kube, ns: str) -> dict[str, set[str]]:
    """Names of every owned object by kind (a namespace holds one job's objects unless a test says so)."""
    return {kind: {o["metadata"]["name"] for o in owned(kube, ns, kind)} for kind in CHILD_KINDS}


def expected_children(
    name: str, workers: int, launcher: bool = True, pods: set[str] | None = None
) -> dict[str, set[str]]:
    worker_pods = {f"{name}-worker-{i}" for i in range(workers)}
    return {
        "pods": worker_pods | (pods or set()),
        "jobs": {f"{name}-launcher"} if launcher else set(),
        "services": {name},
        "secrets": {f"{name}-ssh"},
        "configmaps": {f"{name}-config"},
    }


def wait_children(
    kube: Kube, ns: str, want: dict[str, set[str]], timeout: float = WAIT
) -> dict[str, set[str]]:
    """Wait until the children in ``ns`` are exactly ``want`` (a launcher Pod, when present, counted too)."""
    return wait_for(
        lambda: (c := children(kube, ns)) == want and c,
        timeout,
        lambda: f"children {want}, have {children(kube, ns)}",
    )


def worker_pods(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    pods = kube.list(
        "pods", ns, f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=worker"
    )
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def launcher_pods(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    return kube.list("pods", ns, f"batch.kubernetes.io/job-name={name}-launcher")


def run_workers(kube: Kube, ns: str, name: str, count: int) -> list[dict[str, Any]]:
    pods = wait_for(
        lambda: len(p := worker_pods(kube, ns, name)) == count and p, WAIT, f"{count} workers of {name}"
    )
    return [run_pod(kube, pod) for pod in pods]


def wait_launcher_pod(kube: Kube, ns: str, name: str, count: int = 1) -> dict[str, Any]:
    """The newest launcher Pod once the Job controller has created ``count`` of them."""
    pods = wait_for(
        lambda: len(p := launcher_pods(kube, ns, name)) >= count and p,
        WAIT,
        f"{count} launcher Pod(s) of {name}",
    )
    return max(pods, key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])


def launcher_job_pod(kube: Kube, ns: str, name: str, launcher_job: dict[str, Any]) -> dict[str, Any]:
    """The Pod of this launcher Job (a deleted Job's Pods may still wait for the garbage collector)."""
    uid = launcher_job["metadata"]["uid"]
    pods = wait_for(
        lambda: [
            p for p in launcher_pods(kube, ns, name) if p["metadata"]["ownerReferences"][0]["uid"] == uid
        ],
        WAIT,
        "the new launcher Pod",
    )
    return pods[0]


def uids(kube: Kube, ns: str) -> dict[str, str]:
    """kind/name -> uid of every child in the namespace: equal snapshots mean nothing was recreated."""
    return {
        f"{kind}/{o['metadata']['name']}": o["metadata"]["uid"]
        for kind in CHILD_KINDS
        for o in owned(kube, ns, kind)
    }


def start_running(kube: Kube, ns: str, name: str, workers: int = 2, **spec: Any) -> dict[str, Any]:
    """Create a job, run its workers and launcher Pod (as kubelet), wait for Running; return the launcher."""
    create(kube, ns, manifest(name, workers, **spec))
    run_workers(kube, ns, name, workers)
    launcher = run_pod(kube, wait_launcher_pod(kube, ns, name))
    wait_condition(kube, ns, name, "Running")
    return launcher


def config(kube: Kube, ns: str, name: str) -> dict[str, str]:
    found = kube.get("configmaps", ns, f"{name}-config")
    assert found is not None, f"ConfigMap {name}-config missing"
    return dict(found["data"])


def host(ns: str, name: str, worker: int) -> str:
    return f"{name}-worker-{worker}.{name}.{ns}.svc.cluster.local"


def versions(kube: Kube, ns: str, skip: set[str]) -> dict[str, str]:
    """resourceVersion of every child (names in ``skip`` left out) and of every MPIJob in the namespace."""
    found = {
        f"{kind}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
        for kind in CHILD_KINDS
        for o in owned(kube, ns, kind)
        if o["metadata"]["name"] not in skip
    }
    found |= {
        f"mpijobs/{j['metadata']['name']}": j["metadata"]["resourceVersion"] for j in kube.list("mpijobs", ns)
    }
    return found


def attempt_env(obj: dict[str, Any]) -> str:
    """The first container's MPIJOB_RESTART_ATTEMPT."""
    container = obj["spec"]["containers"][0]
    return next(e.get("value", "") for e in container.get("env", []) if e["name"] == "MPIJOB_RESTART_ATTEMPT")


def run_attempt(kube: Kube, ns: str, name: str, attempt: int) -> dict[str, Any]:
    """Wait for the failure policy's attempt's workers and launcher Pod, run them all and wait for Running;
    return the launcher Pod."""
    workers = wait_for(
        lambda: (
            len(p := worker_pods(kube, ns, name)) == 2
            and all(w["metadata"]["labels"].get(ATTEMPT) == str(attempt) for w in p)
            and p
        ),
        WAIT,
        f"the workers of attempt {attempt}",
    )
    assert {attempt_env(w) for w in workers} == {str(attempt)}
    for worker in workers:
        run_pod(kube, worker)
    launcher = wait_for(
        lambda: next(
            (
                p
                for p in launcher_pods(kube, ns, name)
                if p["metadata"]["labels"].get(ATTEMPT) == str(attempt)
                and not p["metadata"].get("deletionTimestamp")
            ),
            None,
        ),
        WAIT,
        f"the launcher Pod of attempt {attempt}",
    )
    assert attempt_env(launcher) == str(attempt)
    launcher = run_pod(kube, launcher)
    wait_for(
        lambda: (
            (job := get(kube, ns, name))["status"].get("restartAttempt") == attempt
            and condition_status(job).get("Running") == "True"
        ),
        WAIT,
        f"attempt {attempt} Running",
    )
    return launcher
