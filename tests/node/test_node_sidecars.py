"""Native sidecars (init containers with ``restartPolicy: Always``) in the launcher and the workers on the
real node: they run beside the job, ``wait-for-workers`` starts after the launcher's sidecar is up, the job
Succeeds, the launcher Job completes (the kubelet stops the sidecar once mpirun ends), and ``cleanPodPolicy:
Running`` still deletes the workers (user guide: "Sidecars and service meshes")."""

from __future__ import annotations

from typing import Any

from tests.e2e import jobs
from tests.e2e.kube import wait_for
from tests.node import runs
from tests.node.conftest import RealNode
from tests.node.doctor import CPU, doctor, settled_pods_gone

# Ends on TERM at once (a shell as PID 1 ignores it otherwise, and the Pod would wait out its grace period).
SIDECAR = {
    "name": "sidecar",
    "image": "mpioperator/mpi-pi:openmpi",
    "restartPolicy": "Always",
    "command": ["sh", "-c", 'trap "exit 0" TERM; while :; do sleep 1; done'],
    "resources": {"limits": {"cpu": "50m", "memory": "32Mi"}},
}


def _started(pod: dict[str, Any], name: str) -> str:
    status = next(s for s in pod["status"]["initContainerStatuses"] if s["name"] == name)
    state = status["state"]
    return str((state.get("running") or state.get("terminated") or {}).get("startedAt"))


def _sidecar_running(pod: dict[str, Any]) -> bool:
    statuses = pod["status"].get("initContainerStatuses") or []
    return any(s["name"] == "sidecar" and "running" in s["state"] for s in statuses)


def test_native_sidecars_let_the_launcher_job_complete(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    job = runs.gated("pi", cpu=CPU)
    for role in ("Launcher", "Worker"):
        job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["initContainers"] = [dict(SIDECAR)]
    runs.apply(kube, ns, job)
    runs.running(kube, ns, "pi")
    launcher = jobs.launcher_pods(kube, ns, "pi")[0]
    assert [c["name"] for c in launcher["spec"]["initContainers"]] == ["sidecar", "wait-for-workers"]
    assert _sidecar_running(launcher), launcher["status"]
    assert _started(launcher, "sidecar") <= _started(launcher, "wait-for-workers")
    workers = jobs.worker_pods(kube, ns, "pi")
    assert len(workers) == 2 and all(_sidecar_running(w) for w in workers), [w["status"] for w in workers]
    assert doctor(real_node.kubeconfig, ns, "pi").code == 0

    runs.open_gate(kube, ns, "pi")
    runs.succeeded(kube, ns, "pi")
    runs.assert_ran_on_hostfile(kube, ns, "pi", 2)
    launcher_job = kube.get("jobs", ns, "pi-launcher")
    assert launcher_job is not None
    complete = {c["type"]: c["status"] for c in launcher_job["status"]["conditions"]}.get("Complete")
    assert complete == "True", launcher_job["status"]
    gone = "cleanPodPolicy Running to delete the workers"
    wait_for(lambda: not jobs.worker_pods(kube, ns, "pi"), runs.RUN_SECONDS, gone)
    (done,) = jobs.launcher_pods(kube, ns, "pi")
    assert done["status"]["phase"] == "Succeeded"
    sidecar = next(s for s in done["status"]["initContainerStatuses"] if s["name"] == "sidecar")
    assert "terminated" in sidecar["state"], sidecar
    settled_pods_gone(real_node, ns)
