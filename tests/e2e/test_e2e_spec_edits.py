"""Edits to a live MPIJob in a real control plane: suspend and resume (as Kueue does), an invalid edit that
freezes a running job, and a job another controller manages (MultiKueue).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import Kube, finish_pod, run_pod, wait_for

ROOT = Path(__file__).resolve().parents[2]
CRD = "mpijobs.kubeflow.org"
LAUNCHER_REPLICAS_RULE = (
    "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/mpiReplicaSpecs/properties/Launcher"
    "/properties/replicas/x-kubernetes-validations"
)
ADMITTED = {"nodeSelector": {"e2e.example.com/pool": "admitted"}}
ADMITTED_LABELS = {"kueue.x-k8s.io/admitted": "true"}


def _template_patch(spec: dict[str, object], labels: dict[str, str]) -> dict[str, object]:
    template = {"metadata": {"labels": labels}, "spec": spec}
    return {
        "spec": {"mpiReplicaSpecs": {"Launcher": {"template": template}, "Worker": {"template": template}}}
    }


def _suspend(e2e: E2E, ns: str, name: str) -> None:
    """Suspend a running job: Suspended=True, Running=False, no launcher Job and no workers left."""
    kube = e2e.kube
    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"suspend": True}}})
    job = jobs.wait_condition(kube, ns, name, "Suspended")
    assert jobs.condition_status(job) == {"Created": "True", "Running": "False", "Suspended": "True"}
    assert jobs.conditions(job)["Running"]["reason"] == "MPIJobSuspended"
    want = jobs.expected_children(name, 0, launcher=False)
    wait_for(
        lambda: _without_launcher_pods(kube, ns, name) == want,
        jobs.WAIT,
        lambda: f"suspended children {want}, have {_without_launcher_pods(kube, ns, name)}",
    )
    wait_for(
        lambda: jobs.get(kube, ns, name)["status"]["replicaStatuses"] == {"Launcher": {}, "Worker": {}},
        jobs.WAIT,
        "replica statuses cleared while suspended",
    )


def test_suspend_then_resume_with_template_edits(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "suspend"
    jobs.start_running(kube, ns, name, runPolicy={"cleanPodPolicy": "None"})
    old_workers = {p["metadata"]["uid"] for p in jobs.worker_pods(kube, ns, name)}
    _suspend(e2e, ns, name)

    # What Kueue does on admission: node selector and labels into the templates, then resume.
    kube.patch("mpijobs", ns, name, _template_patch(ADMITTED, ADMITTED_LABELS))
    kube.patch("mpijobs", ns, name, {"spec": {"runPolicy": {"suspend": False}}})
    job = jobs.wait_condition(kube, ns, name, "Suspended", "False")
    assert jobs.conditions(job)["Suspended"]["reason"] == "MPIJobResumed"
    workers = wait_for(lambda: len(p := jobs.worker_pods(kube, ns, name)) == 2 and p, jobs.WAIT, "2 workers")
    assert not old_workers & {p["metadata"]["uid"] for p in workers}
    launcher_job = wait_for(lambda: kube.get("jobs", ns, f"{name}-launcher"), jobs.WAIT, "a new launcher Job")
    template = launcher_job["spec"]["template"]
    for pod_spec, labels in [(p["spec"], p["metadata"]["labels"]) for p in workers] + [
        (template["spec"], template["metadata"]["labels"])
    ]:
        assert pod_spec["nodeSelector"] == ADMITTED["nodeSelector"]
        assert labels.items() >= ADMITTED_LABELS.items()
    for pod in workers:
        run_pod(kube, pod)
    launcher = jobs.launcher_job_pod(kube, ns, name, launcher_job)
    assert launcher["spec"]["nodeSelector"] == ADMITTED["nodeSelector"]
    run_pod(kube, launcher)
    job = jobs.wait_condition(kube, ns, name, "Running")
    assert job["status"]["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    reasons = [e[1] for e in e2e.hook.events(ns, name)]
    assert reasons == ["MPIJobCreated", "MPIJobRunning", "MPIJobSuspended", "MPIJobResumed", "MPIJobRunning"]


def _without_launcher_pods(kube: Kube, ns: str, name: str) -> dict[str, set[str]]:
    """The children, less launcher Pods: those of a deleted Job wait for the garbage collector."""
    found = jobs.children(kube, ns)
    found["pods"] -= {p["metadata"]["name"] for p in jobs.launcher_pods(kube, ns, name)}
    return found


def _relaxed_crd(kube: Kube) -> Iterator[None]:
    """The CRD without the rule "Launcher replicas must be 1", as if the job predated it; restored after."""
    kube.patch(
        "customresourcedefinitions", None, CRD, [{"op": "remove", "path": LAUNCHER_REPLICAS_RULE}], "json"
    )
    try:
        yield
    finally:
        kube.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(ROOT / "crds"))


def test_invalid_edit_freezes_a_running_job_and_fixing_it_resumes(e2e: E2E, ns: str) -> None:
    kube, name = e2e.kube, "frozen"
    launcher = jobs.start_running(kube, ns, name, runPolicy={"cleanPodPolicy": "None"})
    before = jobs.uids(kube, ns)
    relaxed = _relaxed_crd(kube)
    next(relaxed)
    try:
        invalid = {"spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 2}, "Worker": {"replicas": 3}}}}
        wait_for(
            lambda: _patched(kube, ns, name, invalid), jobs.WAIT, "the apiserver to take the relaxed CRD"
        )
        job = jobs.wait_condition(kube, ns, name, "Invalid")
        invalid_condition = jobs.conditions(job)["Invalid"]
        assert (invalid_condition["reason"], invalid_condition["message"]) == (
            "ValidationError",
            "Found validation errors: spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1",
        )
        # Frozen: nothing deleted, re-created or added (no third worker), even when a worker changes.
        run_pod(kube, jobs.worker_pods(kube, ns, name)[0], ready=False)
        e2e.poke(ns, name)
        e2e.poke(ns, name)
        assert jobs.uids(kube, ns) == before

        kube.patch("mpijobs", ns, name, {"spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1}}}})
    finally:
        next(relaxed, None)
    wait_for(
        lambda: "Invalid" not in jobs.conditions(jobs.get(kube, ns, name)),
        jobs.WAIT,
        "the Invalid condition to go",
    )
    third = wait_for(lambda: kube.get("pods", ns, f"{name}-worker-2"), jobs.WAIT, "the third worker")
    run_pod(kube, third)
    finish_pod(kube, launcher, 0)
    job = jobs.wait_condition(kube, ns, name, "Succeeded")
    assert "Invalid" not in jobs.conditions(job)
    assert ("Warning", "ValidationError") in [e[:2] for e in e2e.hook.events(ns, name)]


def _patched(kube: Kube, ns: str, name: str, patch: dict[str, object]) -> bool:
    try:
        kube.patch("mpijobs", ns, name, patch)
    except Exception as err:  # the old rule may still be cached by the apiserver for a moment
        if "must be 1" in str(err):
            return False
        raise
    return True


def test_managed_by_multikueue_is_left_alone(e2e: E2E, ns: str) -> None:
    kube = e2e.kube
    jobs.create(kube, ns, jobs.manifest("elsewhere", runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    # Metacontroller's first sync writes {observedGeneration} (it writes a status on every sync). A status
    # written by someone else while that sync is in flight is overwritten: a race the hook cannot prevent.
    wait_for(lambda: jobs.get(kube, ns, "elsewhere").get("status"), jobs.WAIT, "the first sync's status")
    # MultiKueue mirrors the status from the worker cluster; we must not touch it.
    mirrored = {
        "conditions": [
            {
                "type": "Running",
                "status": "True",
                "reason": "MPIJobRunning",
                "message": "mirrored",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    kube.patch("mpijobs", ns, "elsewhere", {"status": mirrored}, sub="status")
    e2e.poke(ns, "elsewhere")
    e2e.poke(ns, "elsewhere")
    job = jobs.get(kube, ns, "elsewhere")
    # The hook returns the status as it is; Metacontroller adds observedGeneration to every status it writes.
    assert job["status"] == {**mirrored, "observedGeneration": job["metadata"]["generation"]}
    assert jobs.children(kube, ns) == {kind: set() for kind in jobs.CHILD_KINDS}
    assert e2e.hook.events(ns, "elsewhere") == []
