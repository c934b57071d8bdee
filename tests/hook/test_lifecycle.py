"""Lifecycle scenarios: one MPIJob driven through the fake Metacontroller, sync by sync.

The first scenarios mirror upstream's ``test/integration/mpi_job_controller_test.go`` (v0.8.2) step by step;
the rest cover what a stateless hook has to get right on its own: TTL, deleted children, scaling, invalid
edits, eviction, suspension, cleanPodPolicy, managedBy and the SSH key. After every step a test asserts the
exact conditions (type → status, reason, in list order), ``replicaStatuses``, the times, which children
exist and what the sync wrote; after every stage the job must settle within three syncs and then write
nothing. Where we deviate from upstream on purpose (docs/compatibility.md) the docstring says so.

Every sync's status and a digest of each child it returned are recorded in
``tests/golden/lifecycle/<scenario>/steps.yaml``; regenerate with ``pytest tests/hook/test_lifecycle.py
--update-golden`` and review the diff.
"""

from __future__ import annotations

import base64
import copy
from datetime import timedelta
from typing import Any

import pytest

from tests.support import paths
from tests.support.builders import mpijob
from tests.support.metacontroller import START, FakeMetacontroller, Golden, Writes, stamp

GOLDEN = paths.GOLDEN / "lifecycle"

SERVICE = "Service.v1/pi"
CONFIGMAP = "ConfigMap.v1/pi-config"
SECRET = "Secret.v1/pi-ssh"
LAUNCHER = "Job.batch/v1/pi-launcher"

CREATED = {"Created": ("True", "MPIJobCreated")}
RUNNING = {**CREATED, "Running": ("True", "MPIJobRunning")}
SUCCEEDED = {**CREATED, "Running": ("False", "MPIJobRunning"), "Succeeded": ("True", "MPIJobSucceeded")}
SUSPENDED = {**CREATED, "Suspended": ("True", "MPIJobSuspended"), "Running": ("False", "MPIJobSuspended")}
# Resumed, not Running yet: Running keeps its suspended reason until every Pod runs (upstream).
RESUMED = {**CREATED, "Running": ("False", "MPIJobSuspended"), "Suspended": ("False", "MPIJobResumed")}

# What Kueue writes into the pod templates of a suspended job before admitting it.
KUEUE_TOLERATIONS = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
KUEUE_GATES = [{"name": "kueue.x-k8s.io/topology"}]
KUEUE_ANNOTATIONS = {"kueue.x-k8s.io/workload": "my-workload"}


# --- helpers ---------------------------------------------------------------------------------------


def at(seconds: int) -> str:
    """The harness clock ``seconds`` after the start, as the status prints it."""
    return stamp(START + timedelta(seconds=seconds))


def pod(index: int) -> str:
    return f"Pod.v1/pi-worker-{index}"


def workers(*indices: int) -> list[str]:
    return [f"pi-worker-{i}" for i in indices]


def fake(scenario: str, update_golden: bool) -> FakeMetacontroller:
    return FakeMetacontroller(golden=Golden(GOLDEN / scenario, update_golden))


def steady(mc: FakeMetacontroller) -> None:
    """The job settles within three syncs, and then a sync writes nothing at all.

    That last sync repeats the one recorded just before, byte for byte, so it is not recorded again.
    """
    assert mc.sync_until_steady() <= 3
    golden, mc.golden = mc.golden, None
    try:
        assert mc.sync().total == 0
    finally:
        mc.golden = golden


def assert_conditions(mc: FakeMetacontroller, expected: dict[str, tuple[str, str]]) -> None:
    """Exact conditions, in list order (the last one is kubectl's STATE column)."""
    assert list(mc.conditions().items()) == list(expected.items())


def running_condition(mc: FakeMetacontroller) -> dict[str, str] | None:
    return next((c for c in mc.status["conditions"] if c["type"] == "Running"), None)


def start(mc: FakeMetacontroller, job: dict[str, Any]) -> None:
    """Apply ``job`` at t=0, then at t=10 run every worker and one launcher Pod: Running=True."""
    mc.apply_mpijob(job)
    steady(mc)
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    steady(mc)
    replicas = job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": replicas}}
    assert mc.status["startTime"] == at(0)
    assert mc.names("Pod") == workers(*range(replicas))


def assert_service_configmap_secret(mc: FakeMetacontroller) -> None:
    assert (mc.names("Service"), mc.names("ConfigMap"), mc.names("Secret")) == (
        ["pi"],
        ["pi-config"],
        ["pi-ssh"],
    )


def uids(mc: FakeMetacontroller, kind: str) -> list[str]:
    return [mc.get(kind, name)["metadata"]["uid"] for name in mc.names(kind)]


def launcher_pods(mc: FakeMetacontroller) -> list[str]:
    """The launcher Job's Pods (the Job controller's children, not the MPIJob's)."""
    return [p["metadata"]["name"] for p in mc.launcher_pods()]


def scheduling(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {k: pod_spec.get(k) for k in ("nodeSelector", "tolerations", "schedulingGates")}


def own_annotations(meta: dict[str, Any]) -> dict[str, str]:
    """An object's annotations without the one Metacontroller adds."""
    return {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k != "metacontroller.k8s.io/last-applied-configuration"
    }


def worker_labels(mc: FakeMetacontroller, index: int, **extra: str) -> dict[str, str]:
    return {
        **extra,
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/replica-index": str(index),
        "controller-uid": mc.parent["metadata"]["uid"],
    }


def launcher_labels(**extra: str) -> dict[str, str]:
    return {
        **extra,
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/job-role": "launcher",
    }


def hostfile(*hosts: str) -> str:
    return "".join(f"{h}.pi.default.svc slots=1\n" for h in hosts)


def discover_hosts(*hosts: str) -> str:
    return "#!/bin/sh\n" + "".join(f"echo {h}.pi.default.svc\n" for h in hosts)


def kueue_injects(mc: FakeMetacontroller, *, accelerator: str, foo: str, resume: bool = False) -> None:
    """Kueue writes node selectors, tolerations, labels and scheduling gates into both templates."""
    job = copy.deepcopy(mc.parent)
    for replica in ("Launcher", "Worker"):
        template = job["spec"]["mpiReplicaSpecs"][replica]["template"]
        template["metadata"] = {"labels": {"foo": foo}, "annotations": dict(KUEUE_ANNOTATIONS)}
        template["spec"]["nodeSelector"] = {"example.com/accelerator": accelerator}
        template["spec"]["tolerations"] = copy.deepcopy(KUEUE_TOLERATIONS)
        template["spec"]["schedulingGates"] = copy.deepcopy(KUEUE_GATES)
    if resume:
        job["spec"]["runPolicy"]["suspend"] = False
    mc.apply_mpijob(job)


def assert_kueue_directives(mc: FakeMetacontroller, *, accelerator: str, foo: str) -> None:
    """The fresh workers and launcher Job carry what Kueue put into the templates."""
    expected = {
        "nodeSelector": {"example.com/accelerator": accelerator},
        "tolerations": KUEUE_TOLERATIONS,
        "schedulingGates": KUEUE_GATES,
    }
    for index in (0, 1):
        worker = mc.get("Pod", f"pi-worker-{index}")
        assert worker is not None
        assert worker["metadata"]["labels"] == worker_labels(mc, index, foo=foo)
        assert own_annotations(worker["metadata"]) == KUEUE_ANNOTATIONS
        assert scheduling(worker["spec"]) == expected
    launcher = mc.get("Job", "pi-launcher")
    assert launcher is not None
    template = launcher["spec"]["template"]
    assert template["metadata"] == {"labels": launcher_labels(foo=foo), "annotations": KUEUE_ANNOTATIONS}
    assert scheduling(template["spec"]) == expected


# --- upstream's integration tests ------------------------------------------------------------------


def test_success(update_golden: bool) -> None:
    """TestMPIJobSuccess: created → workers Running → launcher Running → launcher Complete.

    cleanPodPolicy Running deletes the workers on the sync after the one that stores "succeeded" (upstream
    too cleans up only once status says finished and has a completionTime); the launcher Job, Service,
    ConfigMap and Secret stay. completionTime is the launcher Job's.
    """
    mc = fake("success", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(2).run_policy(cleanPodPolicy="Running").build())

    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET, pod(0), pod(1), LAUNCHER])
    assert_conditions(mc, CREATED)
    assert mc.status["replicaStatuses"] == {"Worker": {}}
    assert mc.status["startTime"] == at(0)
    # The launcher Job exists now; its replica status appears on the next sync.
    assert mc.sync() == Writes(status=1)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    steady(mc)

    mc.advance(10)
    mc.workers_running()
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    assert_conditions(mc, CREATED)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {"active": 2}}
    steady(mc)

    mc.advance(10)
    mc.start_launcher_pod()
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    assert running_condition(mc) == {
        "type": "Running",
        "status": "True",
        "reason": "MPIJobRunning",
        "message": "MPIJob default/pi is running.",
        "lastUpdateTime": at(20),
        "lastTransitionTime": at(20),
    }
    steady(mc)

    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, SUCCEEDED)
    assert mc.status["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}
    assert (mc.status["startTime"], mc.status["completionTime"]) == (at(0), at(30))
    # ignoreStatusChanges: nothing else triggers the sync that cleans up, so this one asks for it.
    assert mc.last_response["resyncAfterSeconds"] == 1
    # Running flips to False in place: reason, message and timestamps untouched (upstream filterOutCondition).
    assert running_condition(mc) == {
        "type": "Running",
        "status": "False",
        "reason": "MPIJobRunning",
        "message": "MPIJob default/pi is running.",
        "lastUpdateTime": at(20),
        "lastTransitionTime": at(20),
    }
    assert mc.names("Pod") == workers(0, 1)

    mc.advance(10)
    # discover_hosts.sh drops the workers in the same response that deletes them.
    assert mc.sync() == Writes(updated=[CONFIGMAP], deleted=[pod(0), pod(1)])
    steady(mc)
    assert mc.names("Pod") == []
    assert mc.names("Job") == ["pi-launcher"]
    assert launcher_pods(mc) == ["pi-launcher-00000"]
    assert_service_configmap_secret(mc)
    assert_conditions(mc, SUCCEEDED)
    assert mc.status["completionTime"] == at(30)


def test_wait_workers(update_golden: bool) -> None:
    """TestMPIJobWaitWorkers: with WaitForWorkersReady the launcher Job appears once every worker is Ready."""
    mc = fake("wait-workers", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(2).wait_for_workers().build())

    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET, pod(0), pod(1)])
    assert_conditions(mc, CREATED)
    assert mc.status["replicaStatuses"] == {"Worker": {}}
    steady(mc)

    mc.advance(10)
    mc.workers_running(ready=False)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    assert mc.status["replicaStatuses"] == {"Worker": {"active": 2}}
    steady(mc)
    assert mc.get("Job", "pi-launcher") is None, "launcher before the workers are Ready"

    mc.advance(10)
    mc.workers_running(ready=True)
    assert mc.sync() == Writes(created=[LAUNCHER])
    assert mc.sync() == Writes(status=1)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {"active": 2}}
    assert_conditions(mc, CREATED)
    steady(mc)

    mc.advance(10)
    mc.start_launcher_pod()
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    assert mc.status["startTime"] == at(0)
    steady(mc)


def test_resuming_and_suspending(update_golden: bool) -> None:
    """TestMPIJobResumingAndSuspending, with Kueue's template changes in both templates.

    Deviation (docs/compatibility.md):
    a suspended job has no launcher Job (upstream keeps one with ``suspend: true``) and
    no workers; ``replicaStatuses.Launcher`` is ``{}`` as upstream's; on resume both are created from the
    CURRENT templates, which is how node selectors, tolerations, labels and scheduling gates that Kueue
    injected while suspended take effect. startTime is set at each resume, as upstream.
    """
    mc = fake("resuming-and-suspending", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(2).suspend().build())

    # 1. Created suspended: Service, ConfigMap and Secret only; no startTime.
    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET])
    assert_conditions(mc, SUSPENDED)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    assert "startTime" not in mc.status
    steady(mc)
    assert (mc.names("Pod"), mc.names("Job")) == ([], [])

    # Kueue injects its scheduling directives while the job is suspended: only observedGeneration moves.
    mc.advance(10)
    kueue_injects(mc, accelerator="example-model", foo="bar")
    assert mc.sync() == Writes(status=1)
    assert mc.status["observedGeneration"] == 2
    assert_conditions(mc, SUSPENDED)
    steady(mc)
    assert (mc.names("Pod"), mc.names("Job")) == ([], [])

    # 2. Resume: workers and a launcher built from the current templates; startTime is the resume time.
    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", False)
    assert mc.sync() == Writes(status=1, created=[pod(0), pod(1), LAUNCHER])
    assert_conditions(mc, RESUMED)
    assert mc.status["startTime"] == at(20)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    steady(mc)
    assert_kueue_directives(mc, accelerator="example-model", foo="bar")
    assert "suspend" not in mc.get("Job", "pi-launcher")["spec"]
    first_run = uids(mc, "Pod") + uids(mc, "Job")

    # 3. Workers and launcher Pod Running.
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    resumed_running = {
        **CREATED,
        "Suspended": ("False", "MPIJobResumed"),
        "Running": ("True", "MPIJobRunning"),
    }
    assert_conditions(mc, resumed_running)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    steady(mc)

    # 4. Suspend the running job: workers and launcher Job deleted; Service, ConfigMap, Secret stay.
    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", True)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP], deleted=[pod(0), pod(1), LAUNCHER])
    assert_conditions(mc, SUSPENDED)
    # This sync still saw the launcher's Pod running (upstream counts it until it disappears).
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {}}
    assert mc.sync() == Writes(status=1)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    steady(mc)
    assert (mc.names("Pod"), mc.names("Job")) == ([], [])
    assert_service_configmap_secret(mc)
    assert mc.status["startTime"] == at(20), "suspending does not reset startTime (upstream)"
    assert mc.get("ConfigMap", "pi-config")["data"]["discover_hosts.sh"] == discover_hosts()

    # Kueue changes its directives and resumes in one update: the fresh children follow again.
    mc.advance(10)
    kueue_injects(mc, accelerator="example-model-v2", foo="baz", resume=True)
    assert mc.sync() == Writes(status=1, created=[pod(0), pod(1), LAUNCHER])
    assert_conditions(mc, RESUMED)
    assert mc.status["startTime"] == at(50)
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    steady(mc)
    assert_kueue_directives(mc, accelerator="example-model-v2", foo="baz")
    assert set(uids(mc, "Pod") + uids(mc, "Job")).isdisjoint(first_run), "fresh workers and launcher"


def test_failure(update_golden: bool) -> None:
    """TestMPIJobFailure: a failed launcher Pod only counts; the launcher Job's Failed fails the MPIJob.

    The Job's Failed condition carries no reason here (as in upstream's test), so the fallbacks apply:
    ``MPIJobFailed`` and ``MPIJob <ns>/<name> has failed``. completionTime is the time of that sync.
    """
    mc = fake("failure", update_golden)
    start(mc, mpijob("pi").workers(2).run_policy(cleanPodPolicy="Running").build())

    mc.advance(10)
    mc.set_launcher_pod("pi-launcher-00000", "Failed")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"failed": 1}, "Worker": {"active": 2}}
    steady(mc)

    mc.advance(10)
    mc.start_launcher_pod()  # the Job controller retries
    assert mc.sync() == Writes(status=1)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1, "failed": 1}, "Worker": {"active": 2}}
    assert_conditions(mc, RUNNING)
    steady(mc)

    mc.advance(10)
    mc.set_launcher_pod("pi-launcher-00001", "Failed")
    mc.finish_launcher("Failed")
    assert mc.sync() == Writes(status=1)
    assert_conditions(
        mc, {**CREATED, "Running": ("False", "MPIJobRunning"), "Failed": ("True", "MPIJobFailed")}
    )
    assert mc.status["conditions"][-1] == {
        "type": "Failed",
        "status": "True",
        "reason": "MPIJobFailed",
        "message": "MPIJob default/pi has failed",
        "lastUpdateTime": at(40),
        "lastTransitionTime": at(40),
    }
    assert mc.status["replicaStatuses"] == {"Launcher": {"failed": 2}, "Worker": {}}
    assert (mc.status["startTime"], mc.status["completionTime"]) == (at(0), at(40))

    mc.advance(10)
    assert mc.sync() == Writes(updated=[CONFIGMAP], deleted=[pod(0), pod(1)])
    steady(mc)
    assert mc.names("Job") == ["pi-launcher"]
    assert mc.names("Pod") == []
    assert launcher_pods(mc) == ["pi-launcher-00000", "pi-launcher-00001"]
    assert mc.status["completionTime"] == at(40)


# --- launcher failures -----------------------------------------------------------------------------


def test_a_dead_worker_is_named_in_the_failure(update_golden: bool) -> None:
    """Ours: the Failed message names the worker that died and how, then quotes the launcher's last
    output (its termination message: the log's tail, FallbackToLogsOnError), within 1,024 bytes."""
    mc = fake("dead-worker-named", update_golden)
    start(mc, mpijob("pi").workers(2).run_policy(backoffLimit=0).build())
    launcher = mc.get("Job", "pi-launcher")["spec"]["template"]["spec"]["containers"][0]
    assert launcher["terminationMessagePolicy"] == "FallbackToLogsOnError"

    mc.advance(10)
    mc.container_exits("pi-worker-1", 137, "OOMKilled")
    last_words = "\n".join(f"line {n}" for n in range(80)) + "\nmpirun noticed that process rank 1 was killed"
    mc.container_exits("pi-launcher-00000", 1, "Error", last_words)
    mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])  # discover_hosts.sh drops the dead worker
    failed = mc.status["conditions"][-1]
    assert (failed["type"], failed["reason"]) == ("Failed", "BackoffLimitExceeded/")
    message = failed["message"]
    assert message.startswith(
        "Job has reached the specified backoff limit. Failed workers: pi-worker-1: container worker exited"
        " with code 137 (OOMKilled). Launcher pi-launcher-00000: container launcher exited with code 1"
        " (Error), last output: ..."
    )
    assert message.endswith("line 79 | mpirun noticed that process rank 1 was killed")
    assert len(message.encode()) <= 1024 and "\n" not in message


def test_launcher_backoff_limit(update_golden: bool) -> None:
    """BackoffLimitExceeded: reason and message gain the newest failed launcher Pod's (upstream 5.4)."""
    mc = fake("launcher-backoff-limit", update_golden)
    start(mc, mpijob("pi").workers(2).run_policy(backoffLimit=1).build())
    assert mc.get("Job", "pi-launcher")["spec"]["backoffLimit"] == 1

    mc.advance(10)
    mc.set_launcher_pod("pi-launcher-00000", "Failed", reason="FailedReason1", message="first message")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"failed": 1}, "Worker": {"active": 2}}
    steady(mc)

    mc.advance(10)
    mc.start_launcher_pod()  # the Job controller retries once
    assert mc.sync() == Writes(status=1)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1, "failed": 1}, "Worker": {"active": 2}}
    steady(mc)

    mc.advance(10)
    mc.set_launcher_pod("pi-launcher-00001", "Failed", reason="FailedReason2", message="second message")
    mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert mc.sync() == Writes(status=1)
    assert_conditions(
        mc,
        {
            **CREATED,
            "Running": ("False", "MPIJobRunning"),
            "Failed": ("True", "BackoffLimitExceeded/FailedReason2"),
        },
    )
    assert mc.status["conditions"][-1] == {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded/FailedReason2",
        "message": "Job has reached the specified backoff limit: second message",
        "lastUpdateTime": at(40),
        "lastTransitionTime": at(40),
    }
    assert mc.status["replicaStatuses"] == {"Launcher": {"failed": 2}, "Worker": {}}
    assert mc.status["completionTime"] == at(40)
    steady(mc)
    assert mc.names("Pod") == []  # cleanPodPolicy Running: every worker was Running
    assert_conditions(
        mc,
        {
            **CREATED,
            "Running": ("False", "MPIJobRunning"),
            "Failed": ("True", "BackoffLimitExceeded/FailedReason2"),
        },
    )


def test_deadline_exceeded(update_golden: bool) -> None:
    """activeDeadlineSeconds goes to the launcher Job; its DeadlineExceeded passes through unchanged."""
    mc = fake("deadline-exceeded", update_golden)
    start(mc, mpijob("pi").workers(2).run_policy(activeDeadlineSeconds=30, cleanPodPolicy="All").build())
    assert mc.get("Job", "pi-launcher")["spec"]["activeDeadlineSeconds"] == 30

    mc.advance(30)
    mc.set_launcher_pod("pi-launcher-00000", "Failed", reason="DeadlineExceeded")
    mc.finish_launcher("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
    assert mc.sync() == Writes(status=1)
    assert mc.status["conditions"][-1] == {
        "type": "Failed",
        "status": "True",
        "reason": "DeadlineExceeded",
        "message": "Job was active longer than specified deadline",
        "lastUpdateTime": at(40),
        "lastTransitionTime": at(40),
    }
    assert_conditions(
        mc, {**CREATED, "Running": ("False", "MPIJobRunning"), "Failed": ("True", "DeadlineExceeded")}
    )
    assert mc.status["replicaStatuses"] == {"Launcher": {"failed": 1}, "Worker": {}}
    assert mc.status["completionTime"] == at(40)

    mc.advance(10)
    assert mc.sync() == Writes(updated=[CONFIGMAP], deleted=[pod(0), pod(1)])
    steady(mc)
    assert mc.names("Pod") == []
    assert launcher_pods(mc) == ["pi-launcher-00000"]


# --- managedBy -------------------------------------------------------------------------------------


def test_managed_externally(update_golden: bool) -> None:
    """TestMPIJobManagedExternally: managedBy MultiKueue → nothing created, status untouched.

    The only status write is Metacontroller's own ``observedGeneration``; the hook returns the status it
    was given (``{}``): no conditions, no startTime.
    """
    mc = fake("managed-externally", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(2).run_policy(managedBy="kueue.x-k8s.io/multikueue").build())

    assert mc.sync() == Writes(status=1)
    assert mc.last_response == {"status": {}, "children": [], "resyncAfterSeconds": 0}
    assert mc.status == {"observedGeneration": 1}
    steady(mc)
    mc.advance(30)
    assert mc.sync() == Writes()
    for kind in ("Pod", "Job", "Service", "ConfigMap", "Secret"):
        assert mc.names(kind) == [], kind
    assert mc.status == {"observedGeneration": 1}


def test_managed_externally_with_children(update_golden: bool) -> None:
    """managedBy MultiKueue on a job that already has children: nothing created, updated or deleted.

    The CRD makes managedBy immutable, so the edit here stands in for children that exist some other way
    (e.g. a job created before the CRD carried that rule). Deviation (docs/compatibility.md):
    upstream skips such a job;
    a hook must return every child unchanged, or Metacontroller would delete them.
    """
    mc = fake("managed-externally-with-children", update_golden)
    start(mc, mpijob("pi").workers(2).build())
    before = copy.deepcopy(mc.status)

    mc.advance(10)
    mc.edit_spec("runPolicy.managedBy", "kueue.x-k8s.io/multikueue")
    assert mc.sync() == Writes(status=1)  # Metacontroller's observedGeneration 1 → 2, nothing else
    assert mc.last_response["status"] == before
    assert mc.status == {**before, "observedGeneration": 2}
    steady(mc)

    # The launcher completes and a worker goes away: no Succeeded, no cleanup, no re-creation.
    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes()
    mc.delete("Pod", "pi-worker-0")
    assert mc.sync() == Writes()
    steady(mc)
    assert mc.status == {**before, "observedGeneration": 2}
    assert mc.names("Pod") == ["pi-worker-1"]
    assert launcher_pods(mc) == ["pi-launcher-00000"]
    assert (mc.names("Job"), mc.names("Service"), mc.names("ConfigMap"), mc.names("Secret")) == (
        ["pi-launcher"],
        ["pi"],
        ["pi-config"],
        ["pi-ssh"],
    )


# --- what a stateless hook must get right ----------------------------------------------------------


def test_ttl_deleted_launcher_is_not_recreated(update_golden: bool) -> None:
    """The TTL controller deletes a finished launcher Job: it stays gone (re-creating it re-runs the job)."""
    mc = fake("ttl-deleted-launcher", update_golden)
    start(mc, mpijob("pi").workers(2).run_policy(ttlSecondsAfterFinished=60, cleanPodPolicy="None").build())
    assert mc.get("Job", "pi-launcher")["spec"]["ttlSecondsAfterFinished"] == 60

    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    # Nothing to clean up (cleanPodPolicy None, the launcher done): no follow-up sync is asked for, which
    # saves Metacontroller a GET of the MPIJob per job.
    assert mc.last_response["resyncAfterSeconds"] == 0
    assert_conditions(mc, SUCCEEDED)
    assert mc.status["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}
    steady(mc)
    assert mc.names("Pod") == workers(0, 1)  # cleanPodPolicy None keeps them
    finished = copy.deepcopy(mc.status)

    mc.advance(60)
    mc.delete("Job", "pi-launcher")
    assert mc.sync() == Writes()
    mc.advance(600)
    steady(mc)
    assert mc.get("Job", "pi-launcher") is None
    assert launcher_pods(mc) == []
    assert mc.names("Pod") == workers(0, 1)
    assert mc.status == finished


def test_worker_deleted_mid_run_is_recreated(update_golden: bool) -> None:
    """A worker deleted mid-run comes back (once its graceful deletion finished); Running stays True."""
    mc = fake("worker-deleted", update_golden)
    start(mc, mpijob("pi").workers(2).build())

    # Terminating: the hook keeps it, Metacontroller neither touches nor re-creates it.
    mc.advance(10)
    mc.delete("Pod", "pi-worker-1", graceful=True)
    assert mc.sync() == Writes()
    steady(mc)

    mc.advance(10)
    mc.finish_deletions()
    assert mc.sync() == Writes(status=1, created=[pod(1)], updated=[CONFIGMAP])
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1}}
    assert mc.get("Pod", "pi-worker-1")["status"] == {"phase": "Pending"}
    steady(mc)

    mc.advance(10)
    mc.workers_running()
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    steady(mc)

    # Gone at once (e.g. a node deleted): re-created on the next sync.
    mc.advance(10)
    mc.delete("Pod", "pi-worker-0")
    assert mc.sync() == Writes(status=1, created=[pod(0)], updated=[CONFIGMAP])
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1}}
    steady(mc)
    assert mc.names("Pod") == workers(0, 1)
    assert_conditions(mc, RUNNING)
    assert running_condition(mc)["lastTransitionTime"] == at(10)


def test_scale_up_and_down(update_golden: bool) -> None:
    """Editing Worker replicas: new workers created or surplus ones deleted, the hostfile follows the spec."""
    mc = fake("scale-up-and-down", update_golden)
    start(mc, mpijob("pi").workers(2).build())
    assert mc.get("ConfigMap", "pi-config")["data"]["hostfile"] == hostfile("pi-worker-0", "pi-worker-1")

    mc.advance(10)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 4)
    assert mc.sync() == Writes(status=1, created=[pod(2), pod(3)], updated=[CONFIGMAP])
    assert mc.get("ConfigMap", "pi-config")["data"] == {
        "hostfile": hostfile(*workers(0, 1, 2, 3)),
        "discover_hosts.sh": discover_hosts(*workers(0, 1)),
    }
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    assert mc.status["observedGeneration"] == 2
    # mpirun -n 2 no longer fills the hostfile: a lint Warning, first, so STATE stays Running.
    assert_conditions(mc, {"Warning": ("True", "LintWarnings"), **RUNNING})
    assert "hostfile has 4 slots" in mc.status["conditions"][0]["message"]
    steady(mc)

    mc.advance(10)
    mc.workers_running()
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    assert mc.get("ConfigMap", "pi-config")["data"]["discover_hosts.sh"] == discover_hosts(
        *workers(0, 1, 2, 3)
    )
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 4}}
    steady(mc)

    mc.advance(10)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 1)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP], deleted=[pod(1), pod(2), pod(3)])
    assert mc.get("ConfigMap", "pi-config")["data"] == {
        "hostfile": hostfile("pi-worker-0"),
        "discover_hosts.sh": discover_hosts("pi-worker-0"),
    }
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1}}
    assert mc.status["observedGeneration"] == 3
    steady(mc)
    assert mc.names("Pod") == ["pi-worker-0"]
    # Still a mismatch, now the other way: the message follows, the transition time stays.
    assert_conditions(mc, {"Warning": ("True", "LintWarnings"), **RUNNING})
    warning = mc.status["conditions"][0]
    assert "hostfile has 1 slot " in warning["message"]
    assert (warning["lastTransitionTime"], warning["lastUpdateTime"]) == (at(20), at(40))


def test_lint_warning_goes_away_when_fixed(update_golden: bool) -> None:
    """The Warning condition appears with a finding, changes nothing else, and is gone once fixed."""
    mc = fake("lint-warning", update_golden)
    start(mc, mpijob("pi").workers(2).build())
    children = {name: mc.get("Pod", name) for name in mc.names("Pod")}

    mc.advance(10)
    mc.edit_spec("runLauncherAsWorker", True)  # the launcher's slots join the hostfile; -n 2 stays
    mc.sync()
    assert_conditions(mc, {"Warning": ("True", "LintWarnings"), **RUNNING})
    assert mc.status["conditions"][0]["lastTransitionTime"] == at(20)
    steady(mc)

    mc.advance(10)
    containers = copy.deepcopy(
        mc.parent["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    )
    containers[0]["args"] = ["-n", "3", "/pi"]
    mc.edit_spec("mpiReplicaSpecs.Launcher.template.spec.containers", containers)
    mc.sync()
    assert_conditions(mc, RUNNING)
    assert {name: mc.get("Pod", name) for name in children} == children
    steady(mc)


def test_invalid_edit_of_running_job(update_golden: bool) -> None:
    """An invalid edit keeps every child as it is and says why; fixing the spec lets the job carry on.

    Deviation (docs/compatibility.md):
    upstream records a Warning event only; we add an ``Invalid`` condition whose
    message follows the current errors, and drop it once the spec is valid again.
    """
    mc = fake("invalid-edit", update_golden)
    start(mc, mpijob("pi").workers(2).build())
    running = copy.deepcopy(mc.status)

    mc.advance(10)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 0)
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, {**RUNNING, "Invalid": ("True", "ValidationError")})
    assert mc.status["conditions"][-1] == {
        "type": "Invalid",
        "status": "True",
        "reason": "ValidationError",
        "message": "Found validation errors: spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: "
        "must be greater than or equal to 1",
        "lastUpdateTime": at(20),
        "lastTransitionTime": at(20),
    }
    assert mc.status["replicaStatuses"] == running["replicaStatuses"]
    steady(mc)
    assert mc.names("Pod") == workers(0, 1)
    assert mc.names("Job") == ["pi-launcher"]
    assert mc.get("ConfigMap", "pi-config")["data"]["hostfile"] == hostfile(*workers(0, 1))

    # A second mistake: the message lists both; the condition has been True since the first one.
    mc.advance(10)
    mc.edit_spec("mpiImplementation", "OpenMP")
    assert mc.sync() == Writes(status=1)
    assert mc.status["conditions"][-1] == {
        "type": "Invalid",
        "status": "True",
        "reason": "ValidationError",
        "message": "Found validation errors: [spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: "
        'must be greater than or equal to 1, spec.mpiImplementation: Unsupported value: "OpenMP": '
        'supported values: "Intel", "MPICH", "OpenMPI"]',
        "lastUpdateTime": at(30),
        "lastTransitionTime": at(20),  # still invalid since the first mistake
    }
    steady(mc)

    mc.advance(10)
    mc.edit_spec("mpiImplementation", "OpenMPI")
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 2)
    assert mc.sync() == Writes(status=1)
    assert mc.status == {**running, "observedGeneration": 5}
    steady(mc)
    assert mc.names("Pod") == workers(0, 1)

    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, SUCCEEDED)
    assert (mc.status["startTime"], mc.status["completionTime"]) == (at(0), at(50))
    steady(mc)
    assert mc.names("Pod") == []
    assert launcher_pods(mc) == ["pi-launcher-00000"]


def test_eviction(update_golden: bool) -> None:
    """An evicted worker fails the job, then cleanPodPolicy runs and the still-running launcher is deleted.

    Deviation (docs/compatibility.md):
    upstream sets ``Failed=True/MPIJobEvicted`` but no completionTime and leaves the
    launcher running on missing ranks; we finish the job.
    """
    mc = fake("eviction", update_golden)
    start(mc, mpijob("pi").workers(2).run_policy(cleanPodPolicy="Running").build())

    mc.advance(10)
    mc.set_pod("pi-worker-1", "Failed", reason="Evicted")
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    evicted = {**CREATED, "Running": ("False", "MPIJobRunning"), "Failed": ("True", "MPIJobEvicted")}
    assert_conditions(mc, evicted)
    assert mc.status["conditions"][-1] == {
        "type": "Failed",
        "status": "True",
        "reason": "MPIJobEvicted",
        "message": "1/2 workers are evicted",
        "lastUpdateTime": at(20),
        "lastTransitionTime": at(20),
    }
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1, "failed": 1}}
    assert (mc.status["startTime"], mc.status["completionTime"]) == (at(0), at(20))
    assert mc.names("Job") == ["pi-launcher"]
    assert mc.last_response["resyncAfterSeconds"] == 1  # the running launcher is deleted next

    mc.advance(10)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP], deleted=[pod(0), LAUNCHER])
    steady(mc)
    assert mc.names("Pod") == ["pi-worker-1"]  # Running deletes Running/Pending workers only
    assert (mc.names("Job"), launcher_pods(mc)) == ([], [])
    assert_service_configmap_secret(mc)
    assert_conditions(mc, evicted)
    assert mc.status["completionTime"] == at(20)
    assert mc.status["replicaStatuses"]["Worker"] == {}


def test_the_events_of_a_jobs_life_are_upstreams() -> None:
    """The MPIJob's Events over its life, as the Go operator (v0.8.2) records them: Created, Running (once
    per transition to Running, its message without the condition's period), Suspended, Resumed, Running
    again, Succeeded. Upstream records Running and Succeeded again on every sync while they hold; Events
    are named by their transition here, so a repeated sync posts none (``posted_events``)."""
    mc = FakeMetacontroller()
    start(mc, mpijob("pi").workers(2).build())
    mc.edit_spec("runPolicy.suspend", True)
    steady(mc)
    mc.edit_spec("runPolicy.suspend", False)
    steady(mc)
    mc.workers_running()
    mc.start_launcher_pod()
    steady(mc)
    mc.finish_launcher("Complete")
    steady(mc)
    who = "MPIJob default/pi"
    assert mc.posted_events() == [
        ("Normal", "MPIJobCreated", f"{who} is created."),
        ("Normal", "MPIJobRunning", f"{who} is running"),
        ("Normal", "MPIJobSuspended", "MPIJob suspended"),
        ("Normal", "MPIJobResumed", "MPIJob resumed"),
        ("Normal", "MPIJobRunning", f"{who} is running"),
        ("Normal", "MPIJobSucceeded", f"{who} successfully completed."),
    ]
    running = [e for e in mc.events if e.reason == "MPIJobRunning"]
    assert len(running) == 2 and running[0].key != running[1].key


def test_an_evicted_job_posts_upstreams_eviction_event() -> None:
    mc = FakeMetacontroller()
    start(mc, mpijob("pi").workers(2).build())
    mc.set_pod("pi-worker-1", "Failed", reason="Evicted")
    steady(mc)
    assert [reason for _, reason, _ in mc.posted_events()] == [
        "MPIJobCreated",
        "MPIJobRunning",
        "MPIJobEvicted",
    ]


def test_eviction_launcher_status_after_launcher_deleted() -> None:
    """Once the hook has deleted the launcher Job of an evicted job, no launcher is counted active."""
    mc = FakeMetacontroller()
    start(mc, mpijob("pi").workers(2).build())
    mc.advance(10)
    mc.set_pod("pi-worker-1", "Failed", reason="Evicted")
    mc.sync_until_steady()
    assert mc.get("Job", "pi-launcher") is None
    assert mc.status["replicaStatuses"]["Launcher"].get("active", 0) == 0


def test_discover_hosts_omits_workers_deleted_in_the_same_response() -> None:
    """Suspending a running job: the same response deletes the workers and lists none in discover_hosts.sh."""
    mc = FakeMetacontroller()
    start(mc, mpijob("pi").workers(2).build())
    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", True)
    assert mc.sync().deleted == [pod(0), pod(1), LAUNCHER]
    configmap = next(c for c in mc.last_response["children"] if c["kind"] == "ConfigMap")
    assert configmap["data"]["discover_hosts.sh"] == discover_hosts()


def test_run_launcher_as_worker(update_golden: bool) -> None:
    """runLauncherAsWorker: the launcher is the first host; worker replica-index labels start at 1.

    Deviation (docs/compatibility.md):
    upstream's scale-down compares the shifted label with replicas and deletes one
    wanted worker; we choose surplus workers by the index in their name.
    """
    mc = fake("run-launcher-as-worker", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(3).launcher_as_worker().build())
    assert mc.sync() == Writes(
        status=1, created=[SERVICE, CONFIGMAP, SECRET, pod(0), pod(1), pod(2), LAUNCHER]
    )
    steady(mc)
    assert mc.get("Service", "pi")["spec"] == {
        "clusterIP": "None",
        "selector": {
            "training.kubeflow.org/operator-name": "mpi-operator",
            "training.kubeflow.org/job-name": "pi",
        },
        "publishNotReadyAddresses": True,
    }
    assert mc.get("ConfigMap", "pi-config")["data"] == {
        "hostfile": hostfile("pi-launcher", *workers(0, 1, 2)),
        "discover_hosts.sh": discover_hosts("pi-launcher"),
    }
    for index in (0, 1, 2):
        assert mc.get("Pod", f"pi-worker-{index}")["metadata"]["labels"] == worker_labels(mc, index + 1)
    template = mc.get("Job", "pi-launcher")["spec"]["template"]
    assert template["metadata"] == {"labels": launcher_labels(**{"training.kubeflow.org/replica-index": "0"})}
    env = {e["name"] for e in template["spec"]["containers"][0]["env"]}
    assert "NVIDIA_VISIBLE_DEVICES" not in env  # the launcher runs ranks: it may see GPUs

    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    assert_conditions(mc, RUNNING)
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 3}}
    assert mc.get("ConfigMap", "pi-config")["data"]["discover_hosts.sh"] == discover_hosts(
        "pi-launcher", *workers(0, 1, 2)
    )
    steady(mc)

    mc.advance(10)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 2)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP], deleted=[pod(2)])
    assert mc.get("ConfigMap", "pi-config")["data"] == {
        "hostfile": hostfile("pi-launcher", *workers(0, 1)),
        "discover_hosts.sh": discover_hosts("pi-launcher", *workers(0, 1)),
    }
    assert mc.status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    steady(mc)
    assert mc.names("Pod") == workers(0, 1)


def test_wait_for_workers_ready_under_suspend(update_golden: bool) -> None:
    """WaitForWorkersReady with suspend: no launcher while suspended, even with Ready workers.

    Deviation (docs/compatibility.md):
    upstream creates a suspended launcher Job at once and un-suspends it on resume
    without waiting for Ready workers; here the launcher Job is created on resume once every worker is
    Ready, as for a job that was never suspended.
    """
    mc = fake("wait-for-workers-suspended", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(2).wait_for_workers().suspend().build())
    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET])
    assert_conditions(mc, SUSPENDED)
    steady(mc)

    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", False)
    assert mc.sync() == Writes(status=1, created=[pod(0), pod(1)])
    assert_conditions(mc, RESUMED)
    assert mc.status["startTime"] == at(10)
    steady(mc)
    assert mc.get("Job", "pi-launcher") is None

    # Workers become Ready in the same moment Kueue suspends the job again: still no launcher.
    mc.advance(10)
    mc.workers_running(ready=True)
    mc.edit_spec("runPolicy.suspend", True)
    # The workers never made it into discover_hosts.sh: the response that deletes them lists none.
    assert mc.sync() == Writes(status=1, deleted=[pod(0), pod(1)])
    # Running was already False/MPIJobSuspended, so only Suspended moves to the end (upstream setCondition).
    assert_conditions(
        mc, {**CREATED, "Running": ("False", "MPIJobSuspended"), "Suspended": ("True", "MPIJobSuspended")}
    )
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    assert mc.get("ConfigMap", "pi-config")["data"]["discover_hosts.sh"] == discover_hosts()
    steady(mc)
    assert (mc.names("Pod"), mc.names("Job")) == ([], [])

    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", False)
    assert mc.sync() == Writes(status=1, created=[pod(0), pod(1)])
    assert mc.status["startTime"] == at(30)
    steady(mc)
    assert mc.get("Job", "pi-launcher") is None

    mc.advance(10)
    mc.workers_running(ready=True)
    assert mc.sync() == Writes(status=1, created=[LAUNCHER], updated=[CONFIGMAP])
    assert mc.status["replicaStatuses"] == {"Launcher": {}, "Worker": {"active": 2}}
    steady(mc)
    assert_conditions(mc, RESUMED)


@pytest.mark.parametrize(
    ("policy", "kept", "deleted"),
    [
        ("None", [0, 1, 2, 3], []),
        ("Running", [1, 2], [0, 3]),
        ("All", [], [0, 1, 2, 3]),
    ],
    ids=["None", "Running", "All"],
)
def test_clean_pod_policy(policy: str, kept: list[int], deleted: list[int], update_golden: bool) -> None:
    """cleanPodPolicy after success: None keeps every worker, Running deletes Running and Pending ones,
    All deletes all (upstream 5.7). At completion worker-0 runs, 1 succeeded, 2 failed, 3 is a Pending
    replacement.
    """
    mc = fake(f"clean-pod-policy-{policy.lower()}", update_golden)
    start(mc, mpijob("pi").workers(4).run_policy(cleanPodPolicy=policy).build())

    mc.advance(10)
    mc.set_pod("pi-worker-1", "Succeeded")
    mc.set_pod("pi-worker-2", "Failed")
    mc.delete("Pod", "pi-worker-3")
    assert mc.sync() == Writes(status=1, created=[pod(3)], updated=[CONFIGMAP])
    assert mc.status["replicaStatuses"] == {
        "Launcher": {"active": 1},
        "Worker": {"active": 1, "succeeded": 1, "failed": 1},
    }
    assert_conditions(mc, RUNNING)  # worker failures other than evictions change no condition
    steady(mc)

    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, SUCCEEDED)
    assert mc.status["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}
    assert mc.status["completionTime"] == at(30)

    mc.advance(10)
    running_worker_deleted = 0 in deleted  # worker-0 was listed in discover_hosts.sh
    assert mc.sync() == Writes(
        updated=[CONFIGMAP] if running_worker_deleted else [], deleted=[pod(i) for i in deleted]
    )
    steady(mc)
    assert mc.names("Pod") == workers(*kept)
    assert mc.names("Job") == ["pi-launcher"]
    assert_conditions(mc, SUCCEEDED)
    assert mc.status["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}


def test_ssh_secret_is_stable(update_golden: bool) -> None:
    """The SSH Secret's data never changes, and comes back identical after being deleted mid-run.

    The fake Metacontroller's hook derives keys from a seed and the job's UID, as the hook does with
    ``MPI_OPERATOR_SSH_KEY_SEED_FILE`` set.
    """
    mc = fake("ssh-secret", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(2).build())
    assert mc.sync().created == [SERVICE, CONFIGMAP, SECRET, pod(0), pod(1), LAUNCHER]
    secret = copy.deepcopy(mc.get("Secret", "pi-ssh"))
    assert secret["type"] == "kubernetes.io/ssh-auth"
    data = secret["data"]
    assert sorted(data) == ["ssh-privatekey", "ssh-publickey"]
    assert base64.b64decode(data["ssh-privatekey"]).startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    assert base64.b64decode(data["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")

    def sync_checked() -> Writes:
        writes = mc.sync()
        returned = [c for c in mc.last_response["children"] if c["kind"] == "Secret"]
        assert [c["data"] for c in returned] == [data]
        assert mc.get("Secret", "pi-ssh")["data"] == data
        return writes

    for _ in range(3):
        sync_checked()
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    sync_checked()

    mc.advance(10)
    mc.delete("Secret", "pi-ssh")
    assert sync_checked() == Writes(created=[SECRET])
    recreated = mc.get("Secret", "pi-ssh")
    assert recreated["metadata"]["uid"] != secret["metadata"]["uid"]
    assert recreated["type"] == "kubernetes.io/ssh-auth"
    assert sync_checked() == Writes()

    mc.advance(10)
    mc.finish_launcher("Complete")
    for _ in range(4):
        sync_checked()
    assert_conditions(mc, SUCCEEDED)
    assert mc.sync().total == 0


def test_finished_before_running_was_ever_set() -> None:
    """The launcher completes before every worker ran: upstream appends ``Running=False`` saying the
    Running condition was never set, stamped with the completion time."""
    mc = FakeMetacontroller()
    mc.apply_mpijob(mpijob("pi").workers(2).build())
    mc.sync_until_steady()
    mc.advance(10)
    mc.start_launcher_pod()
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    assert mc.status["conditions"][1:] == [
        {
            "type": "Succeeded",
            "status": "True",
            "reason": "MPIJobSucceeded",
            "message": "MPIJob default/pi successfully completed.",
            "lastUpdateTime": at(10),
            "lastTransitionTime": at(10),
        },
        {
            "type": "Running",
            "status": "False",
            "reason": "MPIJobRunning",
            "message": "MPIJob default/pi is finished but Running condition was never set.",
            "lastUpdateTime": at(10),
            "lastTransitionTime": at(10),
        },
    ]
    steady(mc)


def test_backoff_failure_message_is_truncated() -> None:
    """The launcher Pod's message is appended, then cut to 1,024 bytes with ``...`` (upstream 5.4)."""
    mc = FakeMetacontroller()
    start(mc, mpijob("pi").workers(1).build())
    mc.advance(10)
    name = launcher_pods(mc)[0]
    mc.set_launcher_pod(name, "Failed", reason="OOMKilled", message="x" * 2000)
    mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    mc.sync()
    failed = next(c for c in mc.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded/OOMKilled"
    assert len(failed["message"].encode()) == 1024
    assert failed["message"] == ("Job has reached the specified backoff limit: " + "x" * 2000)[:1021] + "..."
    steady(mc)
