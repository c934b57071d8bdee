"""Kubernetes Events on the MPIJob, posted by the hook with its own ServiceAccount's token and RBAC from
deploy/ (tests/e2e/conftest.py: ``events_account``), against the real API server: each transition's Event
exists exactly once although the hook synced the job many times, and the account can do nothing but create
Events.
"""

from __future__ import annotations

import ssl
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e import jobs
from tests.e2e.conftest import E2E, HOOK_ACCOUNT, HOOK_NAMESPACE
from tests.e2e.kube import evict_pod, finish_pod, run_pod, wait_for

COMPONENT = "mpi-job-controller"
USER = f"system:serviceaccount:{HOOK_NAMESPACE}:{HOOK_ACCOUNT}"
GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{HOOK_NAMESPACE}", "system:authenticated"]


@pytest.fixture
def posting(e2e: E2E) -> E2E:
    if e2e.plane is None or e2e.hook_token_file is None:
        pytest.skip("Events need a token from the control plane the tests start")
    return e2e


def _ours(e2e: E2E, ns: str, uid: str) -> list[dict[str, Any]]:
    """Events about the job with this uid from upstream's component (Metacontroller posts its own)."""
    url = f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.uid={uid}"
    items = e2e.kube.request("GET", url)["items"]
    return [e for e in items if (e.get("source") or {}).get("component") == COMPONENT]


def test_each_transition_is_one_event_on_the_mpijob(posting: E2E, ns: str) -> None:
    e2e, kube, name = posting, posting.kube, "described"
    jobs.create(kube, ns, jobs.manifest(name))
    uid = jobs.wait_condition(kube, ns, name, "Created")["metadata"]["uid"]
    launcher = jobs.wait_launcher_pod(kube, ns, name)
    jobs.run_workers(kube, ns, name, 2)
    run_pod(kube, launcher)
    jobs.wait_condition(kube, ns, name, "Running")
    finish_pod(kube, jobs.wait_launcher_pod(kube, ns, name), 0)
    jobs.wait_condition(kube, ns, name, "Succeeded")
    for _ in range(3):  # more syncs of the finished job: none may post again
        e2e.poke(ns, name)

    logged = [reason for _, reason, _ in e2e.hook.events(ns, name)]
    assert logged == ["MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"]
    events = wait_for(
        lambda: (found := _ours(e2e, ns, uid)) and len(found) >= len(logged) and found,
        jobs.WAIT,
        f"the hook's Events about {ns}/{name}",
    )
    reasons = Counter(e["reason"] for e in events)
    assert reasons == Counter(logged), "each reason exactly once"
    syncs = e2e.hook.syncs(ns, name)
    assert syncs > 3 * len(events), f"{syncs} syncs"
    for event in events:
        assert event["involvedObject"] == {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "namespace": ns,
            "name": name,
            "uid": uid,
        }
        assert event["type"] == "Normal"
        assert event["count"] == 1
        assert event["reportingComponent"] == COMPONENT
        assert event["firstTimestamp"] == event["lastTimestamp"]
    created = next(e for e in events if e["reason"] == "MPIJobCreated")
    assert created["message"] == f"MPIJob {ns}/{name} is created."

    described = kube.kubectl("describe", "mpijob", name, "-n", ns).stdout
    assert "MPIJobCreated" in described and "MPIJobSucceeded" in described
    assert COMPONENT in described


def _review(e2e: E2E, ns: str, verb: str, resource: str, group: str = "", sub: str = "") -> bool:
    """Would the API server allow the hook's account this? (a SubjectAccessReview, as ``kubectl auth
    can-i --as``)."""
    attributes = {"namespace": ns, "verb": verb, "group": group, "resource": resource}
    if sub:
        attributes["subresource"] = sub
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": USER, "groups": GROUPS, "resourceAttributes": attributes},
    }
    answer = e2e.kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


def test_the_hooks_account_may_only_create_events(posting: E2E, ns: str) -> None:
    e2e = posting
    assert _review(e2e, ns, "create", "events")
    assert _review(e2e, "another-namespace", "create", "events")  # MPIJobs live in any namespace
    denied = [
        ("patch", "events", ""),
        ("update", "events", ""),
        ("delete", "events", ""),
        ("get", "events", ""),
        ("list", "events", ""),
        ("list", "pods", ""),
        ("create", "pods", ""),
        ("get", "secrets", ""),
        ("get", "mpijobs", "kubeflow.org"),
        ("update", "mpijobs", "kubeflow.org"),
        ("create", "events", "events.k8s.io"),
    ]
    assert [d for d in denied if _review(e2e, ns, *d)] == []

    # The token itself: the API server refuses it anything but creating an Event.
    assert e2e.plane is not None and e2e.hook_token_file is not None
    token = e2e.hook_token_file.read_text().strip()
    context = ssl.create_default_context(cafile=str(e2e.plane.pki.ca_cert))
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=e2e.plane.server, verify=context, headers=headers, timeout=30) as api:
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "can-create", "namespace": ns},
            "involvedObject": {"kind": "MPIJob", "namespace": ns, "name": "none"},
            "reason": "Test",
            "message": "created with the hook's token",
            "type": "Normal",
        }
        assert api.post(f"/api/v1/namespaces/{ns}/events", json=event).status_code == 201
        assert api.get(f"/api/v1/namespaces/{ns}/pods").status_code == 403
        assert api.get(f"/api/v1/namespaces/{ns}/events").status_code == 403
        assert api.delete(f"/api/v1/namespaces/{ns}/events/can-create").status_code == 403
        assert api.get(f"/api/v1/namespaces/{ns}/secrets").status_code == 403


# Upstream's Events about an MPIJob and their types (v2/pkg/controller/mpi_job_controller.go at v0.8.2:
# syncHandler, updateMPIJobStatus and updateMPIJobFailedStatus). A failed launcher Job's Event takes the
# Job's reason (BackoffLimitExceeded/<newest failed Pod's reason>, DeadlineExceeded, ...), else
# MPIJobFailed. Upstream records Running, Succeeded and Evicted again on every sync that sees them (the
# recorder then counts them on one Event); ours are one Event per transition.
UPSTREAM_EVENTS = {
    "ValidationError": "Warning",
    "MPIJobCreated": "Normal",
    "MPIJobSuspended": "Normal",
    "MPIJobResumed": "Normal",
    "MPIJobSucceeded": "Normal",
    "MPIJobEvicted": "Warning",
    "MPIJobRunning": "Normal",
    "MPIJobFailed": "Warning",
}
# Ours, where upstream has no such Event: the lint Warning, a gang scheduler whose PodGroup child is not
# declared, and the failure policy's (a restart's reason names the replica and the cause: WorkerError,
# LauncherOOMKilled, ...; the job's failure FailJobRule or MaxRestartsReached). All Warnings.
OUR_EVENTS = {
    "LintWarnings": "Warning",
    "PodGroupChildNotDeclared": "Warning",
    "TopologyNeedsWorkloadAPI": "Warning",
    "WorkerError": "Warning",
    "FailJobRule": "Warning",
    "MaxRestartsReached": "Warning",
}
# The launcher Job's Failed reasons, which upstream's MPIJobFailed Event takes instead (Kubernetes').
JOB_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded")
CREATED, RUNNING = ("Normal", "MPIJobCreated"), ("Normal", "MPIJobRunning")


def _suspend_and_resume(e2e: E2E, ns: str, name: str) -> None:
    kube = e2e.kube
    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"suspend": True}}})
    jobs.wait_condition(kube, ns, name, "Suspended")
    wait_for(
        lambda: kube.get("jobs", ns, f"{name}-launcher") is None and not jobs.worker_pods(kube, ns, name),
        jobs.WAIT,
        "no launcher Job and no workers while suspended",
    )
    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    jobs.wait_condition(kube, ns, name, "Suspended", "False")
    # A new launcher Job and new workers: run them, and the job is Running again.
    jobs.run_workers(kube, ns, name, 2)
    launcher_job = wait_for(lambda: kube.get("jobs", ns, f"{name}-launcher"), jobs.WAIT, "a new launcher Job")
    launcher = jobs.launcher_job_pod(kube, ns, name, launcher_job)
    run_pod(kube, launcher)
    jobs.wait_condition(kube, ns, name, "Running")
    finish_pod(kube, launcher, 0)
    jobs.wait_condition(kube, ns, name, "Succeeded")


def _launcher_fails(e2e: E2E, ns: str, name: str) -> None:
    finish_pod(e2e.kube, jobs.wait_launcher_pod(e2e.kube, ns, name), 1)
    jobs.wait_condition(e2e.kube, ns, name, "Failed")


def _worker_evicted(e2e: E2E, ns: str, name: str) -> None:
    evict_pod(e2e.kube, jobs.worker_pods(e2e.kube, ns, name)[1])
    jobs.wait_condition(e2e.kube, ns, name, "Failed")


def _worker_fails_and_the_gang_restarts(e2e: E2E, ns: str, name: str) -> None:
    kube = e2e.kube
    finish_pod(kube, jobs.worker_pods(kube, ns, name)[1], 1)
    jobs.wait_condition(kube, ns, name, "Restarting")
    launcher = jobs.run_attempt(kube, ns, name, 1)
    finish_pod(kube, launcher, 0)
    jobs.wait_condition(kube, ns, name, "Succeeded")


# A failure policy whose second rule the first already covers: lint's failure-rule-unreachable, a Warning.
RESTART_THEN_UNREACHABLE = {
    "maxRestarts": 1,
    "rules": [
        {"action": "RestartJob"},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
    ],
}
SUSPENDED, RESUMED = ("Normal", "MPIJobSuspended"), ("Normal", "MPIJobResumed")
SUCCEEDED = ("Normal", "MPIJobSucceeded")
# Each life: what happens once the job runs, the Events it posts in order, and its spec besides the defaults.
LIVES: dict[str, tuple[Callable[[E2E, str, str], None], list[tuple[str, str]], dict[str, Any]]] = {
    "succeeds": (_suspend_and_resume, [CREATED, RUNNING, SUSPENDED, RESUMED, RUNNING, SUCCEEDED], {}),
    # The launcher Pod's status has no reason: upstream appends "/" and an empty one.
    "fails": (_launcher_fails, [CREATED, RUNNING, ("Warning", "BackoffLimitExceeded/")], {}),
    "evicted": (_worker_evicted, [CREATED, RUNNING, ("Warning", "MPIJobEvicted")], {}),
    # Ours: the lint Warning on the first sync, then Running once per attempt around the restart.
    "restarts": (
        _worker_fails_and_the_gang_restarts,
        [CREATED, ("Warning", "LintWarnings"), RUNNING, ("Warning", "WorkerError"), RUNNING, SUCCEEDED],
        {"failurePolicy": RESTART_THEN_UNREACHABLE},
    ),
}


def _posted_as(reason: str) -> str | None:
    """The Event type the reason is posted as, upstream's or ours; None for a reason neither has."""
    if reason.split("/")[0] in JOB_REASONS:
        return "Warning"
    return UPSTREAM_EVENTS.get(reason) or OUR_EVENTS.get(reason)


@pytest.mark.parametrize("life", sorted(LIVES))
def test_a_jobs_events_are_upstreams(posting: E2E, ns: str, life: str) -> None:
    """Over a job's life the MPIJob carries the Events the Go operator posts, of the same types, in the
    same order, plus ours (the lint Warning, the failure policy's): the hook's log says the order, the API
    server holds each once."""
    e2e, kube = posting, posting.kube
    then, upstream, spec = LIVES[life]
    jobs.start_running(kube, ns, life, runPolicy={"backoffLimit": 0}, **spec)
    then(e2e, ns, life)
    e2e.poke(ns, life)
    logged = [(kind, reason) for kind, reason, _ in e2e.hook.events(ns, life)]
    assert logged == upstream
    assert all(_posted_as(reason) == kind for kind, reason in logged)
    uid = jobs.get(kube, ns, life)["metadata"]["uid"]
    posted = wait_for(
        lambda: (found := _ours(e2e, ns, uid)) and len(found) >= len(upstream) and found,
        jobs.WAIT,
        f"the hook's Events about {ns}/{life}",
    )
    assert Counter((e["type"], e["reason"]) for e in posted) == Counter(upstream)
    running = [e["message"] for e in posted if e["reason"] == "MPIJobRunning"]
    assert running and set(running) == {f"MPIJob {ns}/{life} is running"}  # upstream's, without a period
    lint = [e["message"] for e in posted if e["reason"] == "LintWarnings"]
    assert all(m.startswith("mpijob lint: 1 finding: [failure-rule-unreachable]") for m in lint), lint
