"""``Observed.gang_wait``: what each gang scheduler writes on the job's PodGroup, read from the wire as a
sync request carries it, into whether (and why) the scheduler holds the gang.

The statuses are the schedulers' own documented ones: the Workload API's ``PodGroupInitiallyScheduled``
condition (1.37; ``PodGroupScheduled`` in 1.36; reasons ``Unschedulable``, ``SchedulerError``), Volcano's
``Unschedulable`` condition with its phase, scheduler-plugins' phase (no condition, no message) with the
Pods' ``PodScheduled`` (the message of the coscheduler v0.34.7 seen on the real node).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from app.core.observed import GangWait, classify
from app.kube.request import decode_request
from tests.support.builders import PODGROUP_API_VERSIONS, mpijob, sync_request

KUBERNETES_MESSAGE = "pod group is unschedulable"
VOLCANO_MESSAGE = "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"


def condition(kind: str, status: str, reason: str = "", message: str = "", **more: str) -> dict[str, str]:
    found = {"type": kind, "status": status, "lastTransitionTime": "2026-05-04T09:00:05Z", **more}
    return {**found, **({"reason": reason} if reason else {}), **({"message": message} if message else {})}


def podgroup(backend: str, status: dict[str, Any] | None, name: str = "pi") -> dict[str, Any]:
    group: dict[str, Any] = {
        "apiVersion": PODGROUP_API_VERSIONS[backend],
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {},
    }
    if status is not None:
        group["status"] = status
    return group


def worker(index: int, scheduled: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Pending", "conditions": [scheduled] if scheduled else []}
    return {
        "kind": "Pod",
        "metadata": {"name": f"pi-worker-{index}", "namespace": "default"},
        "status": status,
    }


UNPLACED = condition("PodScheduled", "False", "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")
# What the coscheduler wrote on a worker of a gang too big for the real node (tests/node/test_node_gangs.py).
COSCHEDULER_MESSAGE = (
    "0/1 nodes are available: resource gap: map[cpu:{{850 -3} {<nil>}  DecimalSI}]. no new claims to"
    " deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.,"
    " PodGroup default/pi gets rejected due to Pod pi-worker-0 is unschedulable even after PostFilter"
)
REFUSED = condition("PodScheduled", "False", "Unschedulable", COSCHEDULER_MESSAGE)
GATED = condition("PodScheduled", "False", "SchedulingGated", "Scheduling is blocked")
PLACED = condition("PodScheduled", "True")
PREEMPTED_MESSAGE = "default-scheduler: preempting to accommodate a higher priority PodGroup"
PREEMPTED = condition("DisruptionTarget", "True", "PreemptionByScheduler", PREEMPTED_MESSAGE)

# id: (backend, PodGroup status, the workers' PodScheduled conditions, want)
CASES: dict[str, tuple[str, dict[str, Any] | None, list[dict[str, str] | None], GangWait | None]] = {
    "workload API: not placed, the scheduler's reason and message": (
        "kubernetes",
        {
            "conditions": [
                condition("PodGroupInitiallyScheduled", "False", "Unschedulable", KUBERNETES_MESSAGE)
            ]
        },
        [UNPLACED, UNPLACED],
        GangWait("Unschedulable", KUBERNETES_MESSAGE),
    ),
    "workload API: a scheduler error": (
        "kubernetes",
        {
            "conditions": [
                condition("PodGroupInitiallyScheduled", "False", "SchedulerError", "parsing nodeAffinity")
            ]
        },
        [],
        GangWait("SchedulerError", "parsing nodeAffinity"),
    ),
    "workload API: placed": (
        "kubernetes",
        {"conditions": [condition("PodGroupInitiallyScheduled", "True", "Scheduled")]},
        [PLACED, PLACED],
        None,
    ),
    "workload API 1.36: its condition's name": (
        "kubernetes-1.36",
        {"conditions": [condition("PodGroupScheduled", "False", "Unschedulable", KUBERNETES_MESSAGE)]},
        [UNPLACED, UNPLACED],
        GangWait("Unschedulable", KUBERNETES_MESSAGE),
    ),
    "workload API 1.37: 1.36's condition name is not its own": (
        "kubernetes",
        {"conditions": [condition("PodGroupScheduled", "False", "Unschedulable", KUBERNETES_MESSAGE)]},
        [UNPLACED, UNPLACED],
        None,
    ),
    "workload API: placed, then preempted whole by a higher priority gang: its Pods say so": (
        "kubernetes",
        {"conditions": [condition("PodGroupInitiallyScheduled", "True", "Scheduled")]},
        [PREEMPTED, PREEMPTED],
        GangWait("PreemptionByScheduler", f"pi-worker-0: {PREEMPTED_MESSAGE}", "preempted by the scheduler"),
    ),
    "workload API: not tried yet (no condition)": ("kubernetes", {}, [None, None], None),
    "workload API: no status": ("kubernetes", None, [None], None),
    "workload API: only a disruption": (
        "kubernetes",
        {"conditions": [condition("DisruptionTarget", "True", "PreemptionByScheduler")]},
        [],
        None,
    ),
    "volcano: Pending and Unschedulable": (
        "volcano",
        {
            "phase": "Pending",
            "conditions": [
                condition("Unschedulable", "True", "NotEnoughResources", VOLCANO_MESSAGE, transitionID="a1")
            ],
        },
        [None, None],
        GangWait("NotEnoughResources", VOLCANO_MESSAGE, "Pending"),
    ),
    "volcano: Inqueue and Unschedulable": (
        "volcano",
        {"phase": "Inqueue", "conditions": [condition("Unschedulable", "True", "NotEnoughTasks", "1/3")]},
        [],
        GangWait("NotEnoughTasks", "1/3", "Inqueue"),
    ),
    "volcano: Running keeps a stale Unschedulable condition": (
        "volcano",
        {
            "phase": "Running",
            "conditions": [
                condition("Unschedulable", "True", "NotEnoughResources", VOLCANO_MESSAGE),
                condition("Scheduled", "True", "tasks in gang are ready to be scheduled"),
            ],
        },
        [PLACED],
        None,
    ),
    "volcano: Pending, not judged yet": ("volcano", {"phase": "Pending"}, [None], None),
    "volcano: Pending, Unschedulable False": (
        "volcano",
        {"phase": "Pending", "conditions": [condition("Unschedulable", "False")]},
        [],
        None,
    ),
    "scheduler-plugins: Scheduling, two workers not placed; the first says why": (
        "plugins",
        {"phase": "Scheduling"},
        [REFUSED, REFUSED],
        GangWait("Unschedulable", f"pi-worker-0: {COSCHEDULER_MESSAGE}", "Scheduling", 2),
    ),
    "scheduler-plugins: Pending (fewer Pods than minMember), one refused": (
        "plugins",
        {"phase": "Pending"},
        [None, REFUSED],
        GangWait("Unschedulable", f"pi-worker-1: {COSCHEDULER_MESSAGE}", "Pending", 1),
    ),
    "scheduler-plugins: a refused Pod without a message": (
        "plugins",
        {"phase": "Scheduling"},
        [condition("PodScheduled", "False", "Unschedulable")],
        GangWait("Unschedulable", "", "Scheduling", 1),
    ),
    "scheduler-plugins before v0.26.7: PreScheduling": (
        "plugins",
        {"phase": "PreScheduling"},
        [UNPLACED],
        GangWait(
            "Unschedulable", "pi-worker-0: 0/1 nodes are available: 1 Insufficient cpu.", "PreScheduling", 1
        ),
    ),
    "scheduler-plugins: Scheduling, no Pod refused yet": ("plugins", {"phase": "Scheduling"}, [None], None),
    "scheduler-plugins: a gated Pod is not the scheduler's verdict": (
        "plugins",
        {"phase": "Scheduling"},
        [GATED, GATED],
        None,
    ),
    "scheduler-plugins: Running": ("plugins", {"phase": "Running"}, [UNPLACED, PLACED], None),
}


@pytest.mark.parametrize(("backend", "status", "pods", "want"), CASES.values(), ids=CASES.keys())
def test_what_the_podgroup_says(
    backend: str, status: dict[str, Any] | None, pods: list[dict[str, str] | None], want: GangWait | None
) -> None:
    children = [podgroup(backend, status), *(worker(i, scheduled) for i, scheduled in enumerate(pods))]
    request = decode_request(orjson.dumps(sync_request(mpijob().build(), children, podgroup=backend)))
    assert classify("pi", request).gang_wait(PODGROUP_API_VERSIONS[backend]) == want


def test_another_jobs_podgroup_says_nothing_of_this_one() -> None:
    held = {
        "conditions": [condition("PodGroupInitiallyScheduled", "False", "Unschedulable", KUBERNETES_MESSAGE)]
    }
    children = [podgroup("kubernetes", held, name="other")]
    request = decode_request(orjson.dumps(sync_request(mpijob().build(), children, podgroup="kubernetes")))
    observed = classify("pi", request)
    assert observed.podgroups == frozenset()
    assert observed.gang_wait(PODGROUP_API_VERSIONS["kubernetes"]) is None


def test_volcano_names_the_queue_the_gang_waits_in() -> None:
    """Volcano's message does not name the queue whose capability holds the gang; the hook adds it."""
    held = {"phase": "Pending", "conditions": [condition("Unschedulable", "True", "NotEnoughResources", "x")]}
    group = {**podgroup("volcano", held), "spec": {"minMember": 3, "queue": "small"}}
    request = decode_request(orjson.dumps(sync_request(mpijob().build(), [group], podgroup="volcano")))
    want = GangWait("NotEnoughResources", "x", "Pending", queue="small")
    assert classify("pi", request).gang_wait(PODGROUP_API_VERSIONS["volcano"]) == want
