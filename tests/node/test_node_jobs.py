"""MPIJobs to Succeeded on the real node, each checked by what its launcher's log shows actually ran.

Every job comes from ``examples/pi/`` (image, user, sshd as in the examples), changed only where the
scenario says; the pi program prints its rank and host, and the ranks must fill the hostfile's slots.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e import jobs
from tests.node import runs
from tests.node.conftest import RealNode

# build -> (example file, image tag of the build)
BUILDS = {
    "openmpi4": ("pi.yaml", "mpioperator/mpi-pi:openmpi"),
    "openmpi5": ("pi.yaml", "mpioperator/mpi-pi:openmpi5"),
    "mpich": ("pi-mpich.yaml", "mpioperator/mpi-pi:mpich"),
}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_pi_example_runs_on_both_workers(real_node: RealNode, ns: str, build: str) -> None:
    file, image = BUILDS[build]
    job = runs.with_image(runs.example(file, "pi"), image)
    runs.apply(real_node.kube, ns, job)
    runs.succeeded(real_node.kube, ns, "pi")
    placed = runs.assert_ran_on_hostfile(real_node.kube, ns, "pi", 2)
    assert sorted(placed.values()) == ["pi-worker-0", "pi-worker-1"]
    assert "pi is approximately 3.14" in runs.launcher_log(real_node.kube, ns, "pi")


def _args(job: dict[str, Any], ranks: int) -> None:
    """The example's launcher runs ``mpirun`` with args ``-n N program``: set N."""
    runs.launcher(job)["args"] = ["-n", str(ranks), "/home/mpiuser/pi"]


def test_two_slots_per_worker_run_two_ranks_on_each(real_node: RealNode, ns: str) -> None:
    job = runs.example("pi.yaml", "pi", cpu="250m")
    job["spec"]["slotsPerWorker"] = 2
    _args(job, 4)
    runs.apply(real_node.kube, ns, job)
    runs.succeeded(real_node.kube, ns, "pi")
    placed = runs.assert_ran_on_hostfile(real_node.kube, ns, "pi", 4)
    assert sorted(placed.values()) == ["pi-worker-0"] * 2 + ["pi-worker-1"] * 2


def test_run_launcher_as_worker_puts_ranks_on_the_launcher(real_node: RealNode, ns: str) -> None:
    job = runs.example("pi.yaml", "pi", cpu="250m")
    job["spec"]["runLauncherAsWorker"] = True
    _args(job, 3)
    runs.apply(real_node.kube, ns, job)
    runs.succeeded(real_node.kube, ns, "pi")
    placed = runs.assert_ran_on_hostfile(real_node.kube, ns, "pi", 3)
    assert sorted(placed.values()) == ["pi-launcher", "pi-worker-0", "pi-worker-1"]


RESTRICTED = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def test_non_root_job_runs_under_the_restricted_pod_security_standard(real_node: RealNode, ns: str) -> None:
    """The namespace admits only Pods that cannot be root (PSS ``restricted``): sshd and mpirun as mpiuser."""
    real_node.kube.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
    job = runs.example("pi.yaml", "pi")
    for container in runs.containers(job):
        container["securityContext"] = {**container["securityContext"], **RESTRICTED}
    runs.apply(real_node.kube, ns, job)
    runs.succeeded(real_node.kube, ns, "pi")
    runs.assert_ran_on_hostfile(real_node.kube, ns, "pi", 2)
    for pod in jobs.launcher_pods(real_node.kube, ns, "pi"):
        assert pod["spec"]["containers"][0]["securityContext"]["runAsUser"] == 1000


def _ready_at(pod: dict[str, Any]) -> str:
    return next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready")


def test_wait_for_workers_ready_creates_the_launcher_after_the_workers(real_node: RealNode, ns: str) -> None:
    job = runs.example("pi.yaml", "pi")
    job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    job["spec"]["runPolicy"]["cleanPodPolicy"] = "None"  # keep the workers to read their Ready times
    runs.apply(real_node.kube, ns, job)
    runs.succeeded(real_node.kube, ns, "pi")
    runs.assert_ran_on_hostfile(real_node.kube, ns, "pi", 2)
    launcher = real_node.kube.get("jobs", ns, "pi-launcher")
    assert launcher is not None
    workers = jobs.worker_pods(real_node.kube, ns, "pi")
    assert len(workers) == 2
    assert all(_ready_at(w) <= launcher["metadata"]["creationTimestamp"] for w in workers)
