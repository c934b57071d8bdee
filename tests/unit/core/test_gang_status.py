"""The ``GangSchedulingUnavailable`` notice: when it appears, where it goes, when it goes away."""

from __future__ import annotations

from typing import Any

import pytest

from app.settings import Settings
from tests.support.builders import mpijob, observe, sync_request
from tests.support.golden_cases import run

VOLCANO = Settings(gang_scheduling="volcano")
NOTICE = {
    "type": "GangSchedulingUnavailable",
    "status": "True",
    "reason": "PodGroupChildNotDeclared",
    "message": "an older notice",
    "lastUpdateTime": "2026-05-04T09:00:00Z",
    "lastTransitionTime": "2026-05-04T09:00:00Z",
}
SUCCEEDED = {
    "type": "Succeeded",
    "status": "True",
    "reason": "MPIJobSucceeded",
    "message": "MPIJob default/pi successfully completed.",
    "lastUpdateTime": "2026-05-04T09:00:20Z",
    "lastTransitionTime": "2026-05-04T09:00:20Z",
}
FINISHED = {
    "conditions": [NOTICE, SUCCEEDED],
    "completionTime": "2026-05-04T09:00:20Z",
    "startTime": "2026-05-04T09:00:00Z",
    "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}},
    "observedGeneration": 1,
}


def types(response: dict[str, Any]) -> list[str]:
    return [c["type"] for c in response["status"]["conditions"]]


@pytest.mark.parametrize(("podgroup", "settings"), [(None, Settings()), ("volcano", VOLCANO)])
def test_no_notice_when_gang_scheduling_is_off_or_declared(podgroup: str | None, settings: Settings) -> None:
    assert types(run(sync_request(mpijob().build(), podgroup=podgroup), settings)) == ["Created"]


def test_notice_goes_first_so_the_state_column_shows_the_jobs_state() -> None:
    assert types(run(sync_request(mpijob().build()), VOLCANO)) == ["GangSchedulingUnavailable", "Created"]


def test_finished_job_keeps_its_notice_while_undeclared() -> None:
    response = run(sync_request(mpijob().status(FINISHED).build()), VOLCANO)
    assert response["status"]["conditions"] == [NOTICE, SUCCEEDED]


def test_finished_job_loses_its_notice_once_the_overlay_is_applied() -> None:
    response = run(sync_request(mpijob().status(FINISHED).build(), podgroup="volcano"), VOLCANO)
    assert types(response) == ["Succeeded"]


def test_finished_job_gets_no_new_notice() -> None:
    status = {**FINISHED, "conditions": [SUCCEEDED]}
    assert types(run(sync_request(mpijob().status(status).build()), VOLCANO)) == ["Succeeded"]


TOPOLOGY = "mpi-operator-hook/gang-topology-key"


def _with_topology(key: str) -> dict[str, Any]:
    return mpijob().set("metadata.annotations", {TOPOLOGY: key}).build()


@pytest.mark.parametrize(
    ("podgroup", "settings", "named"),
    [(None, Settings(), "''"), ("volcano", VOLCANO, "'volcano'")],
    ids=["no gang scheduling", "volcano"],
)
def test_topology_without_the_workload_api_is_refused_with_a_notice(
    podgroup: str | None, settings: Settings, named: str
) -> None:
    """Ours: a topology key the backend cannot place is said, not silently dropped; the job runs."""
    response = run(sync_request(_with_topology("topology.kubernetes.io/zone"), podgroup=podgroup), settings)
    notice, created = response["status"]["conditions"]
    assert (notice["type"], notice["reason"], created["type"]) == (
        "GangSchedulingUnavailable",
        "TopologyNeedsWorkloadAPI",
        "Created",
    )
    assert "'topology.kubernetes.io/zone'" in notice["message"] and f"it is {named}" in notice["message"]
    assert "MPI_OPERATOR_GANG_SCHEDULING=kubernetes" in notice["message"]
    assert any(c["kind"] == "Pod" for c in response["children"])


def test_topology_with_the_workload_api_is_placed_without_a_notice() -> None:
    request = sync_request(_with_topology("topology.kubernetes.io/zone"), podgroup="kubernetes")
    response = run(request, Settings(gang_scheduling="kubernetes"))
    assert types(response) == ["Created"]
    kinds = [c["kind"] for c in response["children"]]
    assert kinds.count("Workload") == 1 and kinds.count("PodGroup") == 1


def test_workload_api_undeclared_names_both_children_and_each_releases_overlay() -> None:
    response = run(sync_request(mpijob().build()), Settings(gang_scheduling="kubernetes"))
    notice = response["status"]["conditions"][0]
    assert notice["reason"] == "PodGroupChildNotDeclared"
    assert (
        "(scheduling.k8s.io/v1beta1 (Kubernetes 1.37) or v1alpha2 (1.36) workloads and podgroups);"
        " apply deploy/overlays/kubernetes/ or deploy/overlays/kubernetes-1.36/."
    ) in notice["message"]
    assert not any(c["kind"] in ("Workload", "PodGroup") for c in response["children"])
    assert not any("schedulingGroup" in str(c) for c in response["children"])


def test_a_bad_topology_key_is_a_validation_error() -> None:
    response = run(sync_request(_with_topology("not a label key")), Settings(gang_scheduling="kubernetes"))
    (invalid,) = [c for c in response["status"]["conditions"] if c["reason"] == "ValidationError"]
    assert f"metadata.annotations[{TOPOLOGY}]: Invalid value: " in invalid["message"]
    assert "node label key" in invalid["message"]


def test_a_frozen_job_keeps_its_workload_api_children_with_their_spec() -> None:
    """An invalid edit freezes the children. Under server-side apply there is no last-applied annotation,
    and a stub without the immutable spec would make Metacontroller (Recreate) delete the objects and fail
    to create them again: the stored spec comes back instead."""
    settings = Settings(gang_scheduling="kubernetes")
    job = mpijob().status({"replicaStatuses": {"Worker": {}}, "observedGeneration": 1})
    first = run(sync_request(job.build(), podgroup="kubernetes"), settings)["children"]
    observed = [observe(c) for c in first]
    for child in observed:
        del child["metadata"]["annotations"]["metacontroller.k8s.io/last-applied-configuration"]
    edited = job.generation(2).workers(-1).build()
    children = run(sync_request(edited, observed, podgroup="kubernetes"), settings)["children"]
    by_kind = {(c["kind"], c["apiVersion"]): c for c in children}
    for built in (c for c in first if c["apiVersion"] == "scheduling.k8s.io/v1beta1"):
        assert by_kind[(built["kind"], built["apiVersion"])]["spec"] == built["spec"]


# --- GangScheduled: the scheduler holds the gang ---------------------------------------------------------

KUBERNETES = Settings(gang_scheduling="kubernetes")
HELD_MESSAGE = "pod group is unschedulable"


def _scheduled(status: str, reason: str, message: str = "") -> dict[str, Any]:
    condition = {"type": "PodGroupInitiallyScheduled", "status": status, "reason": reason, "message": message}
    return {"conditions": [{**condition, "lastTransitionTime": "2026-05-04T09:00:03Z"}]}


def _next_sync(
    job: dict[str, Any], first: dict[str, Any], group_status: dict[str, Any] | None
) -> dict[str, Any]:
    """The sync after ``first``: its children exist (the PodGroup with ``group_status``), its status is
    stored."""
    children = [observe(c) for c in first["children"]]
    for child in children:
        if child["kind"] == "PodGroup" and group_status is not None:
            child["status"] = group_status
    parent = {**job, "status": first["status"]}
    return run(sync_request(parent, children, podgroup="kubernetes"), KUBERNETES)


def _first() -> tuple[dict[str, Any], dict[str, Any]]:
    job = mpijob().build()
    return job, run(sync_request(job, podgroup="kubernetes"), KUBERNETES)


def test_a_held_gang_is_said_first_with_the_schedulers_reason_and_the_state_stays() -> None:
    job, first = _first()
    held = _next_sync(job, first, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    gang, created = held["status"]["conditions"]
    assert (gang["type"], gang["status"], gang["reason"], created["type"]) == (
        "GangScheduled",
        "False",
        "Unschedulable",
        "Created",
    )
    assert gang["message"] == (
        "PodGroup pi (scheduling.k8s.io/v1beta1) is not scheduled: pod group is unschedulable. No Pod of"
        " the gang starts until all of them fit at once."
    )


def test_a_held_gang_changes_nothing_while_nothing_changes_and_goes_once_placed() -> None:
    job, first = _first()
    held = _next_sync(job, first, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    again = _next_sync(job, held, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    assert again["status"] == held["status"]  # byte for byte: no status write, no flapping
    placed = _next_sync(job, again, _scheduled("True", "Scheduled"))
    assert types(placed) == ["Created"]


def test_a_new_scheduler_message_replaces_the_old_and_keeps_the_transition_time() -> None:
    job, first = _first()
    held = _next_sync(job, first, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    parent = mpijob().build()
    later = _next_sync(parent, held, _scheduled("False", "Unschedulable", "no feasible placements found"))
    before, after = held["status"]["conditions"][0], later["status"]["conditions"][0]
    assert "no feasible placements found" in after["message"]
    assert after["lastTransitionTime"] == before["lastTransitionTime"]


def test_a_long_scheduler_message_is_bounded_to_one_line() -> None:
    job, first = _first()
    held = _next_sync(job, first, _scheduled("False", "Unschedulable", "no node\nfits " + "x" * 5000))
    message = held["status"]["conditions"][0]["message"]
    assert len(message.encode()) <= 1024 and message.endswith("...") and "\n" not in message
    assert "no node | fits x" in message


def test_a_finished_job_no_longer_says_its_gang_waits() -> None:
    job, first = _first()
    held = _next_sync(job, first, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    status = {**held["status"], "conditions": [*held["status"]["conditions"], SUCCEEDED]}
    status["completionTime"] = "2026-05-04T09:00:20Z"
    done = _next_sync(job, {**held, "status": status}, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    assert types(done) == ["Created", "Succeeded"]


def test_a_lint_warning_still_goes_first() -> None:
    job = mpijob().set("spec.mpiReplicaSpecs.Worker.slotsPerWorker", 2).build()  # lint: slots misplaced
    first = run(sync_request(job, podgroup="kubernetes"), KUBERNETES)
    held = _next_sync(job, first, _scheduled("False", "Unschedulable", HELD_MESSAGE))
    assert types(held) == ["Warning", "GangScheduled", "Created"]


# What Volcano v1.14.1 and the coscheduler v0.34.7 wrote on the real node (tests/node/test_node_gangs.py).
VOLCANO_HELD = "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"
COSCHEDULER_REFUSED = "0/1 nodes are available: resource gap: map[cpu:{{850 -3} {<nil>}  DecimalSI}]."


def _held_by(backend: str, setting: str, group: dict[str, Any], worker_scheduled: dict[str, Any]) -> str:
    """The GangScheduled message of a job whose PodGroup (in ``backend``) and workers say ``group`` and
    ``worker_scheduled``."""
    settings = Settings(gang_scheduling=setting)
    job = mpijob().set("spec.runPolicy.schedulingPolicy", {"queue": "small"}).build()
    first = run(sync_request(job, podgroup=backend), settings)
    children = [observe(c) for c in first["children"]]
    for child in children:
        if child["kind"] == "PodGroup":
            child["status"] = group
        elif child["kind"] == "Pod":
            child["status"] = {"phase": "Pending", "conditions": [worker_scheduled]}
    held = run(sync_request({**job, "status": first["status"]}, children, podgroup=backend), settings)
    (gang,) = [c for c in held["status"]["conditions"] if c["type"] == "GangScheduled"]
    return str(gang["message"])


def test_volcano_says_which_queue_holds_the_gang() -> None:
    unschedulable = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}
    group = {"phase": "Pending", "conditions": [{**unschedulable, "message": VOLCANO_HELD}]}
    said = _held_by("volcano", "volcano", group, {"type": "PodScheduled", "status": "False"})
    assert said == (
        f"PodGroup pi (scheduling.volcano.sh/v1beta1) is Pending in queue small: {VOLCANO_HELD}. No Pod of"
        " the gang starts until all of them fit at once."
    )


def test_the_coscheduler_says_why_through_the_first_worker_it_refused() -> None:
    refused = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    said = _held_by(
        "plugins",
        "scheduler-plugins-scheduler",
        {"phase": "Scheduling"},
        {**refused, "message": COSCHEDULER_REFUSED},
    )
    why = COSCHEDULER_REFUSED.rstrip(".")
    assert said == (
        "PodGroup pi (scheduling.x-k8s.io/v1alpha1) is Scheduling: the scheduler could not place 2 of the"
        f" job's workers (pi-worker-0: {why}). No Pod of the gang starts until all of them fit at once."
    )
