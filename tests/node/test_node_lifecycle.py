"""A running job suspended and resumed, and a job whose worker dies, on the real node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e import jobs
from tests.e2e.kube import wait_for
from tests.node import runs
from tests.node.conftest import RealNode


def _suspend(node: RealNode, ns: str, suspend: bool) -> None:
    """The user guide's command: ``kubectl patch mpijob pi --type merge -p ...``."""
    patch = json.dumps({"spec": {"runPolicy": {"suspend": suspend}}})
    node.kube.kubectl("-n", ns, "patch", "mpijob", "pi", "--type", "merge", "-p", patch)


def _pods(node: RealNode, ns: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in node.kube.list("pods", ns))


def test_suspend_then_resume_a_running_job(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    runs.apply(kube, ns, runs.gated("pi"))
    runs.running(kube, ns, "pi")
    _suspend(real_node, ns, True)
    job = jobs.wait_condition(kube, ns, "pi", "Suspended", timeout=runs.RUN_SECONDS)
    assert jobs.conditions(job)["Running"]["status"] == "False"
    wait_for(
        lambda: _pods(real_node, ns) == [], runs.RUN_SECONDS, lambda: f"no Pods, have {_pods(real_node, ns)}"
    )
    # As the user guide's "A job's life" says: Service, ConfigMap and Secret only.
    assert jobs.children(kube, ns) == {**jobs.expected_children("pi", 0, launcher=False)}
    _suspend(real_node, ns, False)
    runs.running(kube, ns, "pi")
    runs.open_gate(kube, ns, "pi")
    job = runs.succeeded(kube, ns, "pi")
    assert jobs.conditions(job)["Suspended"]["status"] == "False"
    placed = runs.assert_ran_on_hostfile(kube, ns, "pi", 2)
    assert sorted(placed.values()) == ["pi-worker-0", "pi-worker-1"]


def _exit_code(pod: dict[str, Any]) -> int | None:
    state = (pod.get("status", {}).get("containerStatuses") or [{}])[0].get("state", {})
    return state.get("terminated", {}).get("exitCode")


def test_a_worker_that_dies_fails_the_job_and_running_pods_are_cleaned_up(
    real_node: RealNode, ns: str
) -> None:
    """SIGKILL to a worker's process (its container's PID 1, as the OOM killer would) while mpirun runs."""
    if real_node.cluster is None:
        pytest.skip("killing a container's process needs the node's containerd (ours only)")
    kube = real_node.kube
    job = runs.example("pi.yaml", "pi")
    runs.launcher(job)["args"] = ["-n", "2", "sleep", "600"]
    job["spec"]["runPolicy"]["backoffLimit"] = 1
    job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    runs.apply(kube, ns, job)
    runs.running(kube, ns, "pi")
    worker = kube.get("pods", ns, "pi-worker-1")
    assert worker is not None
    real_node.cluster.kill_container(worker["status"]["containerStatuses"][0]["containerID"])
    failed = jobs.wait_condition(kube, ns, "pi", "Failed", timeout=runs.RUN_SECONDS)
    condition = jobs.conditions(failed)["Failed"]
    assert condition["reason"].startswith("BackoffLimitExceeded"), condition
    assert "backoff limit" in condition["message"], condition
    # The message names the dead worker and how it ended (the launcher Pod is gone with its Job).
    assert "Failed workers: pi-worker-1: container " in condition["message"], condition
    assert "exited with code 137" in condition["message"], condition
    # cleanPodPolicy: Running deletes the worker still running; the dead one stays, with what killed it.
    wait_for(
        lambda: _pods(real_node, ns) == ["pi-worker-1"],
        runs.RUN_SECONDS,
        lambda: f"have {_pods(real_node, ns)}",
    )
    dead = kube.get("pods", ns, "pi-worker-1")
    assert dead is not None and dead["status"]["phase"] == "Failed" and _exit_code(dead) == 137, dead[
        "status"
    ]
