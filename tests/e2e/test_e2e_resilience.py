"""Resilience in a real control plane: the hook killed and restarted, Metacontroller restarted, the SSH
Secret or a worker deleted by hand. Nothing is deleted or re-created that should not be, and the job finishes.
"""

from __future__ import annotations

from typing import Any

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import Kube, finish_pod, run_pod, wait_for


def test_hook_killed_mid_job_and_restarted(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "hook-down"
    launcher = jobs.start_running(kube, ns, name, runPolicy={"cleanPodPolicy": "None"})
    before = jobs.uids(kube, ns)
    writes_before = len(e2e.writes(ns, name) or [])

    e2e.expected_errors = ("connect: connection refused",)
    e2e.hook.kill()
    try:
        finish_pod(kube, launcher, 0)  # the launcher finishes while the hook is down
        wait_for(
            lambda: any(
                c["type"] == "Complete" and c["status"] == "True"
                for c in (kube.get("jobs", ns, f"{name}-launcher") or {})
                .get("status", {})
                .get("conditions", [])
            ),
            jobs.WAIT,
            "the Job controller to complete the Job",
        )
        if e2e.plane is not None:
            wait_for(lambda: e2e.sync_errors(ns, name), jobs.WAIT, "Metacontroller to fail a sync")
        assert jobs.conditions(jobs.get(kube, ns, name))["Running"]["status"] == "True"
    finally:
        e2e.hook.start()
    job = jobs.wait_condition(kube, ns, name, "Succeeded")
    assert jobs.condition_status(job) == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert jobs.uids(kube, ns) == before  # nothing deleted or re-created (cleanPodPolicy None)
    if (writes := e2e.writes(ns, name)) is not None:
        assert [w for w in writes[writes_before:] if w[0] != "Updating"] == []


def test_metacontroller_restarted(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "mc-restart"
    launcher = jobs.start_running(kube, ns, name, runPolicy={"cleanPodPolicy": "None"})
    worker = {name: f"{name}-worker-0"}
    versions = e2e.settle(ns, worker)
    before = jobs.uids(kube, ns)
    syncs = e2e.hook.syncs(ns, name)
    writes_before = len(e2e.writes(ns, name) or [])

    e2e.restart_metacontroller()
    e2e.wait_sync(ns, name, syncs)  # a fresh Metacontroller syncs every parent once it has listed them
    e2e.poke(ns, name, "pods", worker[name])
    assert jobs.versions(kube, ns, set(worker.values())) == versions  # the new Metacontroller wrote nothing
    finish_pod(kube, launcher, 0)
    jobs.wait_condition(kube, ns, name, "Succeeded")
    assert jobs.uids(kube, ns) == before
    writes = e2e.writes(ns, name)
    assert writes is not None
    assert [w for w in writes[writes_before:] if w[0] != "Updating"] == []


def test_ssh_secret_deleted_comes_back_identical(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "secret"
    jobs.start_running(kube, ns, name)
    secret, back = _delete_and_wait_back(kube, "secrets", ns, f"{name}-ssh", "the Secret back")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    # Seeded keys (MPI_OPERATOR_SSH_KEY_SEED_FILE): the same key pair, so running workers keep working.
    assert back["data"] == secret["data"]
    assert jobs.condition_status(jobs.get(kube, ns, name)) == {"Created": "True", "Running": "True"}


def test_worker_deleted_by_hand_is_recreated(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "worker-gone"
    jobs.start_running(kube, ns, name)
    _, new = _delete_and_wait_back(kube, "pods", ns, f"{name}-worker-1", "worker-1 re-created")
    assert new["spec"]["hostname"] == f"{name}-worker-1"
    run_pod(kube, new)
    job = wait_for(
        lambda: (j := jobs.get(kube, ns, name))["status"]["replicaStatuses"]["Worker"] == {"active": 2} and j,
        jobs.WAIT,
        "2 active workers again",
    )
    assert jobs.condition_status(job) == {"Created": "True", "Running": "True"}


def _delete_and_wait_back(
    kube: Kube, resource: str, ns: str, name: str, what: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Delete an object the hook owns and wait for the hook to create it again: (before, after)."""
    before = kube.get(resource, ns, name)
    assert before is not None
    kube.delete(resource, ns, name)
    after = wait_for(
        lambda: (
            (o := kube.get(resource, ns, name)) and o["metadata"]["uid"] != before["metadata"]["uid"] and o
        ),
        jobs.WAIT,
        what,
    )
    return before, after
