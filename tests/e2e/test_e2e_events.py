"""Kubernetes Events on the MPIJob, posted by the hook with its own ServiceAccount's token and RBAC from
deploy/ (tests/e2e/conftest.py: ``events_account``), against the real API server: each transition's Event
exists exactly once although the hook synced the job many times, and the account can do nothing but create
Events.
"""

from __future__ import annotations

import ssl
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.e2e import jobs
from tests.e2e.conftest import E2E, HOOK_ACCOUNT, HOOK_NAMESPACE
from tests.e2e.kube import finish_pod, run_pod, wait_for

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
    assert logged == ["MPIJobCreated", "MPIJobSucceeded"]
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
