"""A job's life in a real control plane: our hook decides, Metacontroller writes, the Job controller runs
the launcher, the test plays kubelet. Each step asserts the status, the children and the events (the hook's
event log lines, and the creations/deletions Metacontroller logs).
"""

from __future__ import annotations

from typing import Any

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import evict_pod, finish_pod, run_pod, wait_for


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
    # Launcher.active comes from the customize hook: Metacontroller sends the launcher Job's Pods.
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
    wait_for(lambda: kube.get("jobs", ns, f"{name}-launcher") is None, jobs.WAIT, "TTL to delete the Job")
    assert jobs.get(kube, ns, name)["status"]["conditions"] == job["status"]["conditions"]
    assert [e[1] for e in e2e.hook.events(ns, name)] == ["MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"]
    _assert_metacontroller_wrote(e2e, ns, name)


def _assert_metacontroller_wrote(e2e: E2E, ns: str, name: str) -> None:
    """Metacontroller created the five kinds of children once each and deleted just the two workers."""
    writes = e2e.writes(ns, name)
    if writes is None:
        return
    workers = {("Pod", f"{name}-worker-0"), ("Pod", f"{name}-worker-1")}
    others = {("ConfigMap", f"{name}-config"), ("Secret", f"{name}-ssh"), ("Service", name)}
    # Sets: a sync from a stale cache may repeat a create (AlreadyExists, ignored) or a delete.
    assert {w[1:] for w in writes if w[0] == "Creating"} == workers | others | {("Job", f"{name}-launcher")}
    assert {w[1:] for w in writes if w[0] == "Deleting child"} == workers


def test_clean_pod_policies(e2e: E2E, ns: str) -> None:
    """One worker still Running, one Succeeded when the launcher finishes: None keeps both, Running deletes
    the running one, All deletes both."""
    kube = e2e.kube
    policies = {"keep": "None", "running": "Running", "all": "All"}
    for name, policy in policies.items():
        jobs.create(kube, ns, jobs.manifest(name, runPolicy={"cleanPodPolicy": policy}))
    for name in policies:
        workers = jobs.run_workers(kube, ns, name, 2)
        run_pod(kube, jobs.wait_launcher_pod(kube, ns, name))
        jobs.wait_condition(kube, ns, name, "Running")
        finish_pod(kube, workers[1], 0)
    for name in policies:
        finish_pod(kube, jobs.wait_launcher_pod(kube, ns, name), 0)
    left = {"keep": ["keep-worker-0", "keep-worker-1"], "running": ["running-worker-1"], "all": []}
    for name in policies:
        jobs.wait_condition(kube, ns, name, "Succeeded")
        wait_for(
            lambda n=name: [p["metadata"]["name"] for p in jobs.worker_pods(kube, ns, n)] == left[n],
            jobs.WAIT,
            lambda n=name: f"workers of {n}: {left[n]}",
        )
    # As upstream: once the launcher is done no worker is counted.
    assert jobs.get(kube, ns, "keep")["status"]["replicaStatuses"] == {
        "Launcher": {"succeeded": 1},
        "Worker": {},
    }


def test_launcher_backoff_failure_reports_the_newest_pods_reason(e2e: E2E, ns: str) -> None:
    """backoffLimit 1: two launcher Pods fail (the Job controller waits ~10 s before the second); the reason
    and message of the newer one are appended to the Job's."""
    kube, name = e2e.kube, "backoff"
    first = jobs.start_running(kube, ns, name, runPolicy={"backoffLimit": 1, "cleanPodPolicy": "None"})
    finish_pod(kube, first, 137, "OOMKilled", "first launcher ran out of memory")
    second = wait_for(
        lambda: [
            p for p in jobs.launcher_pods(kube, ns, name) if p["metadata"]["uid"] != first["metadata"]["uid"]
        ],
        jobs.WAIT,
        "the Job controller's second launcher Pod",
    )[0]
    run_pod(kube, second)
    finish_pod(kube, second, 1, "DeadlineExceeded", "Pod was active on the node longer than the deadline")
    job = jobs.wait_condition(kube, ns, name, "Failed")
    failed = jobs.conditions(job)["Failed"]
    assert failed["reason"] == "BackoffLimitExceeded/DeadlineExceeded"
    # Upstream's words first; ours then name how the newest launcher Pod's container ended.
    upstream = (
        "Job has reached the specified backoff limit: Pod was active on the node longer than the deadline"
    )
    assert failed["message"].startswith(upstream + ". Launcher "), failed["message"]
    assert "container launcher exited with code 1 (Error)" in failed["message"]
    assert jobs.condition_status(job) == {"Created": "True", "Running": "False", "Failed": "True"}
    assert job["status"]["replicaStatuses"]["Launcher"] == {"failed": 2}
    assert job["status"]["completionTime"]
    assert {p["metadata"]["name"] for p in jobs.worker_pods(kube, ns, name)} == {
        f"{name}-worker-0",
        f"{name}-worker-1",
    }
    assert [e[:2] for e in e2e.hook.events(ns, name)] == [
        ("Normal", "MPIJobCreated"),
        ("Normal", "MPIJobRunning"),
        ("Warning", "BackoffLimitExceeded/DeadlineExceeded"),
    ]


def test_active_deadline_fails_the_job(e2e: E2E, ns: str) -> None:
    """runPolicy.activeDeadlineSeconds goes to the launcher Job; the Job controller enforces it."""
    kube, name = e2e.kube, "deadline"
    jobs.start_running(kube, ns, name, runPolicy={"activeDeadlineSeconds": 2, "cleanPodPolicy": "All"})
    assert kube.get("jobs", ns, f"{name}-launcher")["spec"]["activeDeadlineSeconds"] == 2  # type: ignore[index]
    job = jobs.wait_condition(kube, ns, name, "Failed")
    failed = jobs.conditions(job)["Failed"]
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    wait_for(
        lambda: not jobs.worker_pods(kube, ns, name), jobs.WAIT, "cleanPodPolicy All to delete the workers"
    )
    assert jobs.condition_status(jobs.get(kube, ns, name)) == {
        "Created": "True",
        "Running": "False",
        "Failed": "True",
    }


def test_evicted_worker_fails_the_job_and_stops_the_launcher(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "evicted"
    jobs.start_running(kube, ns, name, runPolicy={"cleanPodPolicy": "Running"})
    evict_pod(kube, jobs.worker_pods(kube, ns, name)[1])
    job = jobs.wait_condition(kube, ns, name, "Failed")
    failed = jobs.conditions(job)["Failed"]
    assert (failed["reason"], failed["message"]) == ("MPIJobEvicted", "1/2 workers are evicted")
    assert job["status"]["completionTime"]
    # The still-running launcher Job is deleted; cleanPodPolicy Running removes the running worker only.
    wait_for(lambda: kube.get("jobs", ns, f"{name}-launcher") is None, jobs.WAIT, "launcher Job deleted")
    wait_for(
        lambda: [p["metadata"]["name"] for p in jobs.worker_pods(kube, ns, name)] == [f"{name}-worker-1"],
        jobs.WAIT,
        "only the evicted worker left",
    )
    assert ("Warning", "MPIJobEvicted", "1/2 workers are evicted") in e2e.hook.events(ns, name)


def test_wait_for_workers_ready(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "wait"
    jobs.create(kube, ns, jobs.manifest(name, launcherCreationPolicy="WaitForWorkersReady"))
    jobs.wait_children(kube, ns, jobs.expected_children(name, 2, launcher=False))
    workers = jobs.worker_pods(kube, ns, name)
    run_pod(kube, workers[0])
    run_pod(kube, workers[1], ready=False)
    # Both Running, one not Ready: still no launcher. Prove the hook saw it (a sync after the patches) first.
    jobs.wait_condition(kube, ns, name, "Created")
    e2e.poke(ns, name)
    e2e.poke(ns, name)
    assert kube.get("jobs", ns, f"{name}-launcher") is None
    run_pod(kube, workers[1])
    wait_for(
        lambda: kube.get("jobs", ns, f"{name}-launcher"), jobs.WAIT, "the launcher Job once all are Ready"
    )
    run_pod(kube, jobs.wait_launcher_pod(kube, ns, name))
    job = jobs.wait_condition(kube, ns, name, "Running")
    assert job["status"]["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}


def _wait_config(e2e: E2E, ns: str, name: str, hostfile: list[str], discover: list[str]) -> None:
    """Wait until the ConfigMap lists ``hostfile`` hosts (slots=1) and ``discover`` (running) hosts."""
    want = {
        "hostfile": "".join(f"{h} slots=1\n" for h in hostfile),
        "discover_hosts.sh": "#!/bin/sh\n" + "".join(f"echo {h}\n" for h in discover),
    }
    wait_for(
        lambda: jobs.config(e2e.kube, ns, name) == want,
        jobs.WAIT,
        lambda: f"config {want}, have {jobs.config(e2e.kube, ns, name)}",
    )


def _wait_active_workers(e2e: E2E, ns: str, name: str, count: int) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        job = jobs.get(e2e.kube, ns, name)
        return job if job["status"]["replicaStatuses"]["Worker"] == {"active": count} else None

    return wait_for(probe, jobs.WAIT, f"{count} active workers")


def test_scale_workers_up_and_down(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "scale"
    jobs.start_running(kube, ns, name)
    hosts = [jobs.host(ns, name, i) for i in range(4)]
    _wait_config(e2e, ns, name, hosts[:2], hosts[:2])

    kube.patch("mpijobs", ns, name, {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 4}}}})
    new = wait_for(lambda: len(p := jobs.worker_pods(kube, ns, name)) == 4 and p, jobs.WAIT, "4 workers")
    # discover_hosts.sh lists running workers only: the new ones appear once they run.
    _wait_config(e2e, ns, name, hosts, hosts[:2])
    for pod in new[2:]:
        run_pod(kube, pod)
    _wait_config(e2e, ns, name, hosts, hosts)
    _wait_active_workers(e2e, ns, name, 4)

    kube.patch("mpijobs", ns, name, {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    wait_for(
        lambda: [p["metadata"]["name"] for p in jobs.worker_pods(kube, ns, name)] == [f"{name}-worker-0"],
        jobs.WAIT,
        "scaled down to worker-0",
    )
    _wait_config(e2e, ns, name, hosts[:1], hosts[:1])
    job = _wait_active_workers(e2e, ns, name, 1)
    # One worker under the launcher's `mpirun -n 2`: the lint Warning says so, first, and STATE stays Running.
    assert jobs.condition_status(job) == {"Warning": "True", "Created": "True", "Running": "True"}
    assert job["status"]["conditions"][-1]["type"] == "Running"
