"""The failure policy in a real control plane: a worker fails, the whole gang is deleted and comes back as the
next attempt (same names, ``MPIJOB_RESTART_ATTEMPT=1``), and the job succeeds; a second failure over the limit
fails it, naming the Pod. The test plays kubelet; Metacontroller does the deleting and creating.
"""

from __future__ import annotations

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import finish_pod, wait_for
from tests.e2e.test_e2e_events import _ours


def test_a_failed_worker_restarts_the_gang_then_the_limit_fails_it(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "restarts"
    policy = {"maxRestarts": 1}
    jobs.create(kube, ns, jobs.manifest(name, failurePolicy=policy, runPolicy={"backoffLimit": 0}))
    jobs.run_attempt(kube, ns, name, 0)
    service_uid = kube.get("services", ns, name)["metadata"]["uid"]

    finish_pod(kube, jobs.worker_pods(kube, ns, name)[1], 137)
    job = jobs.wait_condition(kube, ns, name, "Restarting")
    restarting = jobs.conditions(job)["Restarting"]
    assert restarting["reason"] == "WorkerError"
    assert f"worker {name}-worker-1: container" in restarting["message"]
    assert (job["status"]["restartAttempt"], job["status"]["restartCount"]) == (1, 1)

    jobs.run_attempt(kube, ns, name, 1)
    assert "Restarting" not in jobs.conditions(jobs.get(kube, ns, name))  # Running replaced it
    assert kube.get("services", ns, name)["metadata"]["uid"] == service_uid  # kept

    finish_pod(kube, jobs.worker_pods(kube, ns, name)[0], 3)
    job = jobs.wait_condition(kube, ns, name, "Failed")
    failed = jobs.conditions(job)["Failed"]
    assert failed["reason"] == "MaxRestartsReached"
    assert f"worker {name}-worker-0: container" in failed["message"] and "code 3" in failed["message"]
    assert job["status"]["restartCount"] == 1
    reasons = [reason for _, reason, _ in e2e.hook.events(ns, name)]
    assert reasons.count("WorkerError") == 1 and reasons[-1] == "MaxRestartsReached", reasons
    assert reasons.count("MPIJobRunning") == 2, reasons  # once per attempt: 0, then 1
    if e2e.hook_token_file is not None:  # the hook posts Events: the restart is one, a Warning
        posted = wait_for(
            lambda: (
                (found := _ours(e2e, ns, job["metadata"]["uid"])) and len(found) >= len(reasons) and found
            ),
            jobs.WAIT,
            "the restart's Event",
        )
        restarts = [e for e in posted if e["reason"] == "WorkerError"]
        assert len(restarts) == 1 and restarts[0]["type"] == "Warning"
        assert restarts[0]["message"] == restarting["message"]
        # MPIJobRunning once per attempt, each its own Event (the attempt is in the Event's name).
        running = [e for e in posted if e["reason"] == "MPIJobRunning"]
        assert len(running) == 2 and all(e["count"] == 1 for e in running), running
