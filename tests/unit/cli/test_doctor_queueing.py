"""``mpijob doctor`` on a job queued by Kueue: it reads the job's Workloads (by the job's UID, in the newest
Workload API served) and quotes Kueue's own reason. Conditions as Kueue v0.17 writes them; the real node
(tests/node/test_node_kueue.py) checks the same against the real Kueue."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.cli.doctor import queueing
from app.cli.doctor.snapshot import Snapshot
from tests.unit.cli.test_doctor_reads import NS, Server, _gather, _recorded

QUEUE = "team-a"


def _workload(*conditions: dict[str, str], created: str = "2026-12-04T09:00:00Z") -> dict[str, Any]:
    return {
        "metadata": {"name": "mpijob-pi-1a2b3", "creationTimestamp": created},
        "status": {"conditions": list(conditions)},
    }


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


MISSING = _condition("QuotaReserved", "False", "Inadmissible", "LocalQueue team-a doesn't exist")
EVICTED = _condition("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout doctor/pi")
PENDING = _condition("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set worker")

CASES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "no Workload": (
        [],
        "waiting for Kueue, which has made no Workload for it (queue team-a): is Kueue running, with its"
        " kubeflow.org/mpijob integration enabled?",
    ),
    "missing LocalQueue": ([_workload(MISSING)], "waiting for Kueue: LocalQueue team-a doesn't exist"),
    "no quota": ([_workload(PENDING)], "waiting for Kueue: couldn't assign flavors to pod set worker"),
    "evicted, then pending again": (
        [_workload(EVICTED, PENDING)],
        "waiting for Kueue, which evicted it (PodsReadyTimeout): Exceeded the PodsReady timeout doctor/pi",
    ),
    "nothing said yet": ([_workload()], "waiting for Kueue to admit it from queue team-a"),
    "the newest Workload speaks": (
        [_workload(EVICTED), _workload(MISSING, created="2026-12-04T09:30:00Z")],
        "waiting for Kueue: LocalQueue team-a doesn't exist",
    ),
    "a message that would break the line": (
        [_workload(_condition("QuotaReserved", "False", "Pending", "two\nlines"))],
        "waiting for Kueue: two\\nlines",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_what_kueue_says_the_job_waits_for(case: str) -> None:
    workloads, said = CASES[case]
    assert queueing.waiting_for(workloads, QUEUE) == said


def test_each_condition_of_each_workload_is_evidence() -> None:
    assert queueing.evidence([_workload(EVICTED, PENDING)]) == (
        "Workload mpijob-pi-1a2b3: Evicted=True PodsReadyTimeout: Exceeded the PodsReady timeout doctor/pi",
        "Workload mpijob-pi-1a2b3: QuotaReserved=False Pending: couldn't assign flavors to pod set worker",
    )


def _queued(snap: Snapshot) -> Snapshot:
    queued = copy.deepcopy(snap)
    assert queued.job is not None
    queued.job["metadata"]["uid"] = "0b3a"
    queued.job["metadata"].setdefault("labels", {})[queueing.QUEUE_LABEL] = QUEUE
    queued.job["spec"]["runPolicy"]["suspend"] = True
    return queued


def test_the_doctor_lists_the_jobs_workloads_by_its_uid_in_the_newest_api_served() -> None:
    server = Server(_queued(_recorded()))
    api = "/apis/kueue.x-k8s.io/v1beta2"
    server.objects[api] = {"kind": "APIResourceList"}
    server.objects[f"{api}/namespaces/{NS}/workloads"] = {"items": [_workload(MISSING)], "metadata": {}}
    snap = _gather(server)
    assert [w["status"]["conditions"] for w in snap.workloads] == [[MISSING]]
    (listed,) = [r for r in server.requests if r.url.path.endswith("/workloads")]
    assert listed.url.params["labelSelector"] == f"{queueing.JOB_UID_LABEL}=0b3a"
    assert {r.method for r in server.requests} == {"GET"}


def test_no_kueue_api_and_no_queue_mean_no_workload_read() -> None:
    unserved = Server(_queued(_recorded()))
    assert _gather(unserved).workloads == []
    assert not [r for r in unserved.requests if r.url.path.endswith("/workloads")]
    plain = Server(_recorded())
    assert _gather(plain).workloads == []
    assert not [r for r in plain.requests if "kueue" in r.url.path]
