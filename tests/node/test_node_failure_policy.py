"""The failure policy on the real node: a killed worker restarts the job, which succeeds on attempt 1; an exit
code rule fails it at once; a worker over its memory limit fails with OOMKilled in the message; an evicted
worker restarts it uncounted (user guide: "When a worker dies")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e import jobs
from tests.e2e.kube import wait_for
from tests.node import runs
from tests.node.conftest import RealNode

SSHD = "/usr/sbin/sshd -De -f /home/mpiuser/.sshd_config"
# The first attempt's launcher waits for ever (a restart ends it: PID 1 needs its own TERM handler, else it
# takes the whole grace period); later attempts run pi at once.
LAUNCHER = (
    'echo "MPIJOB_RESTART_ATTEMPT=$MPIJOB_RESTART_ATTEMPT";'
    ' if [ "$MPIJOB_RESTART_ATTEMPT" = 0 ]; then trap "exit 143" TERM; sleep 3600 & wait; fi;'
    " exec mpirun -n 2 /home/mpiuser/pi"
)


def _job(policy: dict[str, Any], worker_command: str = "") -> dict[str, Any]:
    job = runs.example("pi.yaml", "pi")
    launcher = runs.launcher(job)
    launcher["command"], launcher["args"] = ["sh", "-c", LAUNCHER], []
    job["spec"]["runPolicy"]["backoffLimit"] = 0
    job["spec"]["failurePolicy"] = policy
    if worker_command:
        worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        worker["command"], worker["args"] = ["sh", "-c", worker_command], []
    return job


def _attempt(kube: Any, ns: str, attempt: int) -> dict[str, Any]:
    return wait_for(
        lambda: (
            (job := jobs.get(kube, ns, "pi"))["status"].get("restartAttempt") == attempt
            and jobs.condition_status(job).get("Running") == "True"
            and job
        ),
        runs.RUN_SECONDS,
        f"attempt {attempt} running",
    )


def _failed(kube: Any, ns: str) -> dict[str, Any]:
    return jobs.conditions(jobs.wait_condition(kube, ns, "pi", "Failed", timeout=runs.RUN_SECONDS))["Failed"]


def test_a_killed_worker_restarts_the_job_which_succeeds_on_attempt_1(real_node: RealNode, ns: str) -> None:
    if real_node.cluster is None:
        pytest.skip("killing a container's process needs the node's containerd (ours only)")
    kube = real_node.kube
    runs.apply(kube, ns, _job({"maxRestarts": 2}))
    runs.running(kube, ns, "pi")
    _attempt(kube, ns, 0)
    worker = kube.get("pods", ns, "pi-worker-1")
    assert worker is not None
    real_node.cluster.kill_container(worker["status"]["containerStatuses"][0]["containerID"])
    restarting = jobs.conditions(jobs.wait_condition(kube, ns, "pi", "Restarting", timeout=runs.RUN_SECONDS))
    assert (
        "worker pi-worker-1: container mpi-worker exited with code 137" in restarting["Restarting"]["message"]
    )
    job = runs.succeeded(kube, ns, "pi")
    assert (job["status"]["restartAttempt"], job["status"]["restartCount"]) == (1, 1)
    log = runs.launcher_log(kube, ns, "pi")
    assert "MPIJOB_RESTART_ATTEMPT=1" in log, log
    runs.assert_ran_on_hostfile(kube, ns, "pi", 2)


def test_an_exit_code_rule_fails_the_job_at_once(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    policy = {
        "maxRestarts": 3,
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}],
    }
    command = f"{SSHD} & until [ -e /tmp/die ]; do sleep 0.5; done; exit 42"
    runs.apply(kube, ns, _job(policy, command))
    runs.running(kube, ns, "pi")
    kube.kubectl("-n", ns, "exec", "pi-worker-0", "--", "touch", "/tmp/die")
    failed = _failed(kube, ns)
    assert failed["reason"] == "FailJobRule", failed
    assert "worker pi-worker-0: container mpi-worker exited with code 42 (Error)" in failed["message"], failed
    assert jobs.get(kube, ns, "pi")["status"]["restartCount"] == 0


def test_a_worker_over_its_memory_limit_fails_with_oomkilled(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    # Past the trigger the container's own process fills its memory: the kernel's OOM killer ends it.
    command = f"{SSHD} & until [ -e /tmp/eat ]; do sleep 0.5; done; exec tail /dev/zero"
    job = _job({"maxRestarts": 0}, command)
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"]["limits"]["memory"] = "64Mi"
    runs.apply(kube, ns, job)
    runs.running(kube, ns, "pi")
    kube.kubectl("-n", ns, "exec", "pi-worker-1", "--", "touch", "/tmp/eat")
    failed = _failed(kube, ns)
    assert failed["reason"] == "MaxRestartsReached", failed
    assert "worker pi-worker-1: container mpi-worker exited with code 137 (OOMKilled)" in failed["message"], (
        failed
    )


def test_an_evicted_worker_restarts_the_job_uncounted(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    policy = {
        "maxRestarts": 0,
        "rules": [{"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]}],
    }
    runs.apply(kube, ns, _job(policy))
    runs.running(kube, ns, "pi")
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "pi-worker-0", "namespace": ns},
    }
    kube.request("POST", f"/api/v1/namespaces/{ns}/pods/pi-worker-0/eviction", eviction)
    restarting = jobs.conditions(jobs.wait_condition(kube, ns, "pi", "Restarting", timeout=runs.RUN_SECONDS))
    assert restarting["Restarting"]["reason"] == "WorkerDisrupted", restarting
    job = runs.succeeded(kube, ns, "pi")
    assert (job["status"]["restartAttempt"], job["status"]["restartCount"]) == (1, 0)
    assert "MPIJOB_RESTART_ATTEMPT=1" in runs.launcher_log(kube, ns, "pi")
