"""``mpijob doctor`` on a gang the scheduler holds: the gang is the verdict, not the Pods' own
``unschedulable`` that the same Pods also show.

The recorded Pods are the real node's (tests/fixtures/doctor/unschedulable.json: two workers Pending,
PodScheduled=False ``Insufficient cpu``), as the real node's gang job left them (tests/node/test_node_gang.py:
the same Pods, and the PodGroup's ``PodGroupInitiallyScheduled=False``); the PodGroup is added as each
scheduler writes it. The doctor reads it with the hook's own ``Observed.gang_wait``.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.doctor.checks import diagnose
from app.cli.doctor.snapshot import Snapshot
from tests.unit.cli.test_doctor import recorded

WORKLOAD_API = "scheduling.k8s.io/v1beta1"
VOLCANO = "scheduling.volcano.sh/v1beta1"
PLUGINS = "scheduling.x-k8s.io/v1alpha1"
TOPOLOGY = "mpi-operator-hook/gang-topology-key"
HELD = "pod group is unschedulable"
NO_PLACEMENT = "no feasible placements found"


def held_pods(api_version: str, status: dict[str, Any], spec: dict[str, Any] | None = None) -> Snapshot:
    """The recorded unschedulable workers, in a gang of ``api_version`` whose PodGroup has ``status``."""
    snap = recorded("unschedulable")
    gang = spec or ({"schedulingPolicy": {"gang": {"minCount": 3}}} if api_version == WORKLOAD_API else {})
    group = {"apiVersion": api_version, "kind": "PodGroup", "metadata": {"name": snap.name}, "spec": gang}
    snap.podgroups.append({**group, "status": status})
    return snap


def scheduled(status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": "PodGroupInitiallyScheduled", "status": status, "reason": reason, "message": message}
        ]
    }


def test_without_a_gang_the_recorded_pods_are_unschedulable() -> None:
    problem = diagnose(recorded("unschedulable")).problem
    assert problem is not None and problem.check == "unschedulable"


def test_a_held_workload_api_gang_is_named_before_the_pods() -> None:
    problem = diagnose(held_pods(WORKLOAD_API, scheduled("False", "Unschedulable", HELD))).problem
    assert problem is not None and problem.check == "podgroup-cannot-be-met", problem
    assert problem.summary == f"the scheduler holds the gang of PodGroup pi (Unschedulable): {HELD}"
    assert problem.evidence[0] == f"PodGroup pi ({WORKLOAD_API}): Unschedulable: {HELD}"
    assert problem.evidence[1].startswith("Pod pi-worker-0: PodScheduled=False (Unschedulable): 0/1 nodes")
    assert problem.fix.startswith("the gang starts only when all 3 Pods fit at once: free capacity")
    assert "lower spec.runPolicy.schedulingPolicy.minAvailable" in problem.fix


def test_a_topology_domain_that_holds_no_whole_gang_names_the_key() -> None:
    snap = held_pods(WORKLOAD_API, scheduled("False", "Unschedulable", NO_PLACEMENT))
    assert snap.job is not None
    snap.job["metadata"]["annotations"] = {TOPOLOGY: "topology.example.com/none"}
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "podgroup-cannot-be-met", problem
    assert problem.fix.startswith("no one value of the node label topology.example.com/none (the annotation")
    assert "kubectl get nodes -L topology.example.com/none" in problem.fix


def test_a_placed_gang_leaves_the_pods_verdict() -> None:
    """PodGroupInitiallyScheduled True: whatever keeps a Pod Pending now is the Pod's own."""
    problem = diagnose(held_pods(WORKLOAD_API, scheduled("True", "Scheduled", ""))).problem
    assert problem is not None and problem.check == "unschedulable"


VOLCANO_MESSAGE = "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"
UNSCHEDULABLE = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}


@pytest.mark.parametrize(
    ("api_version", "status", "spec", "named", "evidence"),
    [
        (
            VOLCANO,
            {"phase": "Pending", "conditions": [{**UNSCHEDULABLE, "message": VOLCANO_MESSAGE}]},
            {"minMember": 3},
            "podgroup-cannot-be-met",
            f"PodGroup pi ({VOLCANO}): phase Pending, NotEnoughResources: {VOLCANO_MESSAGE}",
        ),
        (
            VOLCANO,
            {"phase": "Running", "conditions": [{**UNSCHEDULABLE, "message": VOLCANO_MESSAGE}]},
            {"minMember": 3},
            "unschedulable",
            "",
        ),
        (
            PLUGINS,
            {"phase": "Scheduling"},
            {"minMember": 3},
            "podgroup-cannot-be-met",
            f"PodGroup pi ({PLUGINS}): phase Scheduling, Unschedulable: 2 worker(s) not placed",
        ),
    ],
    ids=["volcano: Pending", "volcano: Running with a stale condition", "scheduler-plugins: Scheduling"],
)
def test_the_other_schedulers_as_their_podgroup_says(
    api_version: str, status: dict[str, Any], spec: dict[str, Any], named: str, evidence: str
) -> None:
    problem = diagnose(held_pods(api_version, status, spec)).problem
    assert problem is not None and problem.check == named, problem
    if evidence:
        assert problem.evidence[0] == evidence
