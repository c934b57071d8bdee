"""A job's whole life in a real control plane: our hook decides, Metacontroller writes, the Job controller
runs the launcher, the test plays kubelet. Each step asserts the status, the children and the events.
"""

from __future__ import annotations

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import finish_pod, run_pod, wait_for


def test_created_running_succeeded_ttl(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "life"
    jobs.create(kube, ns, jobs.manifest(name, runPolicy={"ttlSecondsAfterFinished": 3}))

    job = jobs.wait_condition(kube, ns, name, "Created")
    assert jobs.condition_status(job) == {"Created": "True"}
    assert job["status"]["conditions"][0]["reason"] == "MPIJobCreated"
    assert job["status"]["conditions"][0]["message"] == f"MPIJob {ns}/{name} is created."
    launcher = jobs.wait_launcher_pod(kube, ns, name)  # AtStartup: the Job controller made the launcher Pod
    jobs.wait_children(kube, ns, jobs.expected_children(name, 2, pods={launcher["metadata"]["name"]}))

    jobs.run_workers(kube, ns, name, 2)
    run_pod(kube, launcher)
    job = jobs.wait_condition(kube, ns, name, "Running")
    assert jobs.condition_status(job) == {"Created": "True", "Running": "True"}
    assert job["status"]["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    assert job["status"]["startTime"]

    finish_pod(kube, jobs.wait_launcher_pod(kube, ns, name), 0)
    job = jobs.wait_condition(kube, ns, name, "Succeeded")
    assert jobs.condition_status(job) == {"Created": "True", "Running": "False", "Succeeded": "True"}
    launcher_job = kube.get("jobs", ns, f"{name}-launcher")
    assert job["status"]["completionTime"]
    assert launcher_job is None or job["status"]["completionTime"] == launcher_job["status"]["completionTime"]
    # cleanPodPolicy Running: the running workers go; TTL (3 s) removes the launcher Job, never re-created.
    wait_for(lambda: not jobs.worker_pods(kube, ns, name), jobs.WAIT, "workers deleted by cleanPodPolicy")
    wait_for(
        lambda: kube.get("jobs", ns, f"{name}-launcher") is None, jobs.WAIT, "TTL to delete the launcher Job"
    )
    assert [e[1] for e in e2e.hook.events(ns, name)] == ["MPIJobCreated", "MPIJobSucceeded"]
