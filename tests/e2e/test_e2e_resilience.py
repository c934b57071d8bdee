"""Resilience in a real control plane: the hook killed and restarted, Metacontroller restarted, the SSH
Secret or a worker deleted by hand. Nothing is deleted or re-created that should not be, and the job finishes.
"""

from __future__ import annotations

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import finish_pod, run_pod, wait_for


def _sync_errors(e2e: E2E, ns: str, name: str) -> int:
    """Failed syncs Metacontroller logged for this job (e.g. hook unreachable)."""
    log = (e2e.workdir / "metacontroller.log").read_text(errors="replace")
    return sum(f"failed to sync MPIJob '{ns}/{name}'" in line for line in log.splitlines())


def test_hook_killed_mid_job_and_restarted(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "hook-down"
    launcher = jobs.start_running(kube, ns, name, runPolicy={"cleanPodPolicy": "None"})
    before = jobs.uids(kube, ns)
    writes_before = len(e2e.writes(ns, name) or [])

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
            wait_for(lambda: _sync_errors(e2e, ns, name), jobs.WAIT, "Metacontroller to fail a sync")
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
    secret = kube.get("secrets", ns, f"{name}-ssh")
    assert secret is not None and secret["type"] == "kubernetes.io/ssh-auth"
    kube.delete("secrets", ns, f"{name}-ssh")
    back = wait_for(
        lambda: (
            (s := kube.get("secrets", ns, f"{name}-ssh"))
            and s["metadata"]["uid"] != secret["metadata"]["uid"]
            and s
        ),
        jobs.WAIT,
        "the Secret back",
    )
    # Seeded keys (MPI_OPERATOR_SSH_KEY_SEED_FILE): the same key pair, so running workers keep working.
    assert back["data"] == secret["data"]
    assert jobs.condition_status(jobs.get(kube, ns, name)) == {"Created": "True", "Running": "True"}


def test_worker_deleted_by_hand_is_recreated(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "worker-gone"
    jobs.start_running(kube, ns, name)
    gone = kube.get("pods", ns, f"{name}-worker-1")
    assert gone is not None
    kube.delete("pods", ns, f"{name}-worker-1")
    new = wait_for(
        lambda: (
            (p := kube.get("pods", ns, f"{name}-worker-1"))
            and p["metadata"]["uid"] != gone["metadata"]["uid"]
            and p
        ),
        jobs.WAIT,
        "worker-1 re-created",
    )
    assert new["spec"]["hostname"] == f"{name}-worker-1"
    run_pod(kube, new)
    job = wait_for(
        lambda: (j := jobs.get(kube, ns, name))["status"]["replicaStatuses"]["Worker"] == {"active": 2} and j,
        jobs.WAIT,
        "2 active workers again",
    )
    assert jobs.condition_status(job) == {"Created": "True", "Running": "True"}
