"""``mpijob doctor`` on the real node: each cause provoked for real, and the doctor names it and nothing else
(every answer while the cause develops is healthy or that one check), quoting what shows it; a healthy job
exits 0, also as ``kubectl mpijob doctor`` from PATH; a missing permission exits 2 and names it.

Every job is ``examples/pi/pi.yaml``, changed only where the cause says.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import wait_for
from tests.node import runs
from tests.node.conftest import RealNode
from tests.node.doctor import CPU, doctor, settled_pods_gone, wait_for_problem

ROOT = Path(__file__).resolve().parents[2]
EXEC_API = "client.authentication.k8s.io/v1"
SSHD = "/usr/sbin/sshd -De -f /home/mpiuser/.sshd_config"


@pytest.fixture(autouse=True)
def _leave_the_node_free(real_node: RealNode, ns: str) -> Iterator[None]:
    """The next test's Pods need the node's CPU: the job and its Pods are gone before it starts."""
    yield
    settled_pods_gone(real_node, ns)


def _example() -> dict[str, Any]:
    """examples/pi/pi.yaml at a quarter CPU per Pod: the node keeps room beside what is still terminating."""
    return runs.example("pi.yaml", "pi", cpu=CPU)


def _pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [job["spec"]["mpiReplicaSpecs"][r]["template"]["spec"] for r in ("Launcher", "Worker")]


def _worker(job: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _pods(job)[1]["containers"][0]
    return container


def _first_line(real_node: RealNode, ns: str, cause: str) -> str:
    """The text verdict's first line; with MPI_HOOK_DOCTOR_SAVE_DIR, what the doctor read is saved there
    (how tests/fixtures/doctor/ was recorded)."""
    save = os.environ.get("MPI_HOOK_DOCTOR_SAVE_DIR")
    extra = ["--save", str(Path(save) / f"{cause}.json")] if save else []
    line = doctor(real_node.kubeconfig, ns, "pi", *extra).out.splitlines()[0]
    print(f"\n{cause} -> {line}")
    return line


def _provoke(real_node: RealNode, ns: str, job: dict[str, Any], check: str, shows: str = "") -> str:
    runs.apply(real_node.kube, ns, job)
    verdict = wait_for_problem(real_node.kubeconfig, ns, "pi", check, shows)
    assert verdict.code == 1
    return _first_line(real_node, ns, check)


def test_a_worker_asking_for_more_cpu_than_the_node_has(real_node: RealNode, ns: str) -> None:
    job = _example()
    _worker(job)["resources"]["limits"]["cpu"] = "64"
    line = _provoke(real_node, ns, job, "unschedulable", "Insufficient cpu")
    assert line.startswith("unschedulable: worker pi-worker-0 cannot be scheduled:"), line


def test_a_scheduler_that_is_not_running(real_node: RealNode, ns: str) -> None:
    job = _example()
    for pod in _pods(job):
        pod["schedulerName"] = "volcano"
    line = _provoke(real_node, ns, job, "scheduler-not-running", "schedulerName volcano")
    assert "is volcano running?" in line, line


def test_an_image_that_does_not_exist(real_node: RealNode, ns: str) -> None:
    job = runs.with_image(_example(), "mpioperator/mpi-pi:no-such-tag")
    line = _provoke(real_node, ns, job, "image-pull", "no-such-tag")
    assert "cannot pull image mpioperator/mpi-pi:no-such-tag" in line, line


def test_a_worker_whose_command_is_not_sshd(real_node: RealNode, ns: str) -> None:
    job = _example()
    _worker(job)["command"], _worker(job)["args"] = ["sleep"], ["3600"]
    line = _provoke(real_node, ns, job, "worker-command", "Connection refused")
    assert line.startswith("worker-command: no worker container starts sshd"), line


def test_a_non_root_key_path_on_a_root_image(real_node: RealNode, ns: str) -> None:
    """sshAuthMountPath /home/mpiuser/.ssh (the example's) with the containers left as the image's root."""
    job = _example()
    for pod in _pods(job):
        pod["containers"][0].pop("securityContext")
    # The image's sshd_config makes the key sshd's host key: root's sshd refuses one its group may read.
    line = _provoke(real_node, ns, job, "ssh-path-for-root", "no hostkeys available")
    assert "runs as root" in line, line


def test_np_8_on_2_slots(real_node: RealNode, ns: str) -> None:
    job = _example()
    runs.launcher(job)["args"] = ["-n", "8", "/home/mpiuser/pi"]
    line = _provoke(real_node, ns, job, "np-mismatch", "not enough slots")
    assert "mpirun -n 8 starts 8 processes but the hostfile has 2 slots" in line, line


def test_a_worker_oomkilled(real_node: RealNode, ns: str) -> None:
    job = runs.gated("pi", cpu=CPU)
    worker = _worker(job)
    worker["command"] = [
        "sh",
        "-c",
        f"{SSHD} & until [ -e /tmp/eat ]; do sleep 0.5; done; exec tail /dev/zero",
    ]
    worker.pop("args")
    worker["resources"]["limits"]["memory"] = "64Mi"
    runs.apply(real_node.kube, ns, job)
    runs.running(real_node.kube, ns, "pi")
    assert _first_line(real_node, ns, "running").startswith(
        f"healthy: MPIJob {ns}/pi is Running; waiting for mpirun"
    )
    real_node.kube.kubectl("-n", ns, "exec", "pi-worker-1", "--", "touch", "/tmp/eat")
    verdict = wait_for_problem(real_node.kubeconfig, ns, "pi", "oom-killed", "OOMKilled")
    assert verdict.code == 1
    line = _first_line(real_node, ns, "oom-killed")
    assert line.startswith(
        "oom-killed: worker pi-worker-1: container mpi-worker exited with code 137 (OOMKilled)"
    )


def test_a_healthy_pi_job_exits_0_also_through_kubectl(real_node: RealNode, ns: str) -> None:
    runs.apply(real_node.kube, ns, _example())

    def succeeded() -> bool:
        verdict = doctor(real_node.kubeconfig, ns, "pi", "-o", "json")
        assert verdict.code == 0, verdict.out + verdict.err
        return verdict.json["stage"] == "Succeeded"

    wait_for(succeeded, runs.RUN_SECONDS, "the doctor to see pi Succeeded")
    assert _first_line(real_node, ns, "healthy").startswith("healthy: ")
    through_kubectl = doctor(real_node.kubeconfig, ns, "pi", kubectl=True)
    assert through_kubectl.code == 0, through_kubectl.err
    first = through_kubectl.out.splitlines()[0]
    assert first.startswith(f"healthy: MPIJob {ns}/pi is Succeeded; waiting for nothing: it succeeded at"), (
        first
    )
    print(f"\nhealthy pi job (kubectl mpijob doctor pi) -> {first}")


# --- permissions: the documented Role is enough, a missing permission is named (exit 2) -----------------


def _documented_role() -> dict[str, Any]:
    text = (ROOT / "docs" / "troubleshooting.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    role = next(doc for block in blocks for doc in yaml.safe_load_all(block) if doc.get("kind") == "Role")
    assert isinstance(role, dict)
    return role


def _account_kubeconfig(real_node: RealNode, ns: str, role: dict[str, Any], tmp_path: Path) -> Path:
    """A service account bound to ``role``, its token given by an exec credential plugin."""
    kube = real_node.kube
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "doctor"}}
    kube.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", account)
    kube.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", role)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "doctor"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "ServiceAccount", "name": "doctor", "namespace": ns}],
    }
    kube.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", binding)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600},
    }
    token = kube.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/doctor/token", request)["status"][
        "token"
    ]
    credential = tmp_path / "credential.json"
    credential.write_text(
        json.dumps({"apiVersion": EXEC_API, "kind": "ExecCredential", "status": {"token": token}})
    )
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(f"#!/bin/sh\nexec cat {credential}\n")
    plugin.chmod(0o700)
    admin = yaml.safe_load(real_node.kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "node", "cluster": cluster}],
        "users": [{"name": "doctor", "user": {"exec": {"apiVersion": EXEC_API, "command": str(plugin)}}}],
        "contexts": [{"name": "doctor", "context": {"cluster": "node", "user": "doctor", "namespace": ns}}],
        "current-context": "doctor",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("missing", [None, "pods/log"])
def test_the_documented_role_is_enough_and_a_missing_permission_is_named(
    real_node: RealNode, ns: str, tmp_path: Path, missing: str | None
) -> None:
    role = _documented_role()
    if missing:
        for rule in role["rules"]:
            rule["resources"] = [r for r in rule["resources"] if r != missing]
    kubeconfig = _account_kubeconfig(real_node, ns, role, tmp_path)
    runs.apply(real_node.kube, ns, _example())
    runs.running(real_node.kube, ns, "pi")
    verdict = doctor(kubeconfig, ns, "pi")
    if missing is None:
        assert verdict.code == 0, verdict.out + verdict.err
        return
    assert verdict.code == 2, verdict.out
    assert f"permission missing: get pods/log in namespace {ns}" in verdict.err, verdict.err
