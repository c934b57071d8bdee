"""The doctor and the hook read the same objects the same way: a launcher Job whose Pod failed while its
``backoffLimit`` still retries it has not failed for either; once the Job controller gives up (the Job's
Failed condition) both say so, and name the same failure."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from app.cli.doctor.checks import diagnose
from app.cli.doctor.facts import Facts, parse_time
from app.cli.doctor.snapshot import Snapshot
from app.core.config import SyncConfig
from app.core.sync import sync
from app.kube.keys import MIN_SEED_BYTES, SeededKeys
from app.kube.request import SyncRequest
from tests.support.builders import sync_request

RUNNING = Path(__file__).parents[2] / "fixtures" / "doctor" / "running.json"
BACKOFF_LIMIT = 3
GAVE_UP = {
    "type": "Failed",
    "status": "True",
    "reason": "BackoffLimitExceeded",
    "message": "Job has reached the specified backoff limit",
}


def _snapshot(*, job_gave_up: bool) -> Snapshot:
    """The recorded running job (a real node's objects), its launcher Pod failed once and retried."""
    snap = Snapshot.from_json(json.loads(RUNNING.read_text()))
    assert snap.job is not None and snap.launcher is not None
    snap.job["spec"]["runPolicy"]["backoffLimit"] = BACKOFF_LIMIT
    snap.launcher["spec"]["backoffLimit"] = BACKOFF_LIMIT
    snap.launcher["status"]["failed"] = 1
    if job_gave_up:
        snap.launcher["status"]["conditions"] = [GAVE_UP]
    retried = next(
        p for p in snap.pods if p["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"
    )
    failed = copy.deepcopy(retried)
    failed["metadata"]["name"] = "pi-launcher-first"
    failed["metadata"]["creationTimestamp"] = "2026-12-04T04:16:00Z"
    ended = {"terminated": {"exitCode": 1, "reason": "Error", "message": "mpirun: a rank exited"}}
    failed["status"] = {"phase": "Failed", "containerStatuses": [{"name": "mpi-launcher", "state": ended}]}
    snap.pods.append(failed)
    return snap


def _hook(snap: Snapshot) -> dict[str, Any]:
    """The hook's status for the same objects, as Metacontroller would send them."""
    assert snap.job is not None and snap.launcher is not None
    workers = [p for p in snap.pods if p["metadata"]["labels"]["training.kubeflow.org/job-role"] == "worker"]
    children = [snap.launcher, *({"kind": "Pod", **p} for p in workers)]
    launcher_pods = [p for p in snap.pods if p not in workers]
    request = sync_request(snap.job, children, launcher_pods)
    decoded = msgspec.json.decode(msgspec.json.encode(request), type=SyncRequest)
    now = parse_time(snap.now)
    assert isinstance(now, datetime)
    result = sync(decoded, now=now, keys=SeededKeys(b"s" * MIN_SEED_BYTES), config=SyncConfig())
    return result.status


def _failed(status: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in status["conditions"] if c["type"] == "Failed" and c["status"] == "True"), None)


def test_a_launcher_pod_the_job_retries_is_no_failure_for_either() -> None:
    snap = _snapshot(job_gave_up=False)
    assert _failed(_hook(snap)) is None
    assert Facts(snap).first_failure() is None
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "launcher-retrying", problem
    assert problem.summary == (
        "the launcher of pi failed once and is retried: launcher pi-launcher-first: container mpi-launcher"
        " exited with code 1 (Error)"
    )


def test_a_launcher_job_that_gave_up_has_failed_for_both() -> None:
    snap = _snapshot(job_gave_up=True)
    status = _hook(snap)
    failed = _failed(status)
    # Upstream appends the newest failed launcher Pod's reason (the kubelet gave none here).
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded/"
    first = Facts(snap).first_failure()
    assert first is not None and first.describe() == (
        "launcher pi-launcher-first: container mpi-launcher exited with code 1 (Error)"
    )
    assert first.pod in failed["message"]
    # The doctor then reads the status the hook wrote.
    assert snap.job is not None
    snap.job["status"] = status
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "job-failed", problem
    assert f"first failure: {first.describe()}" in problem.evidence
