"""Small observed fixtures for the policy and plan tables: a defaulted job, its Pods and its launcher Job.

Each builds the wire object Metacontroller would send and decodes it with the hook's own types, so a table
row reads as the few fields that matter (``worker(1, "Failed", exit_code=137, exit_reason="OOMKilled")``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.api.defaults import Job, with_defaults
from app.api.types import MPIJob
from app.core.observed import Observed
from app.kube import names
from app.kube.request import ObservedLauncherJob, ObservedPod
from tests.support.builders import MPIJobBuilder, mpijob

NAME = "pi"
STAMP = "2026-05-04T09:00:00Z"
# Node labels for the ordered hostfile's tables: two blocks of two racks, and n5 in block b1 without a rack.
BLOCK, RACK = "example.com/block", "example.com/rack"
TOPOLOGY_NODES = {
    "n1": {BLOCK: "b1", RACK: "r1"},
    "n2": {BLOCK: "b1", RACK: "r2"},
    "n3": {BLOCK: "b2", RACK: "r1"},
    "n4": {BLOCK: "b2", RACK: "r2"},
    "n5": {BLOCK: "b1"},
}


def defaulted(builder: MPIJobBuilder | None = None) -> Job:
    """The job as the plan sees it: ``mpijob("pi")`` (2 workers, AtStartup, cleanPodPolicy Running)."""
    return with_defaults(MPIJob.model_validate((builder or mpijob(NAME)).build()))


def with_policy(
    builder: MPIJobBuilder, max_restarts: int | None = None, *rules: dict[str, Any]
) -> MPIJobBuilder:
    """``spec.failurePolicy`` with ``maxRestarts`` and ``rules`` (in order)."""
    policy: dict[str, Any] = {"rules": list(rules)} if rules else {}
    if max_restarts is not None:
        policy["maxRestarts"] = max_restarts
    return builder.set("spec.failurePolicy", policy)


def condition(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    found = {"type": kind, "status": status, "lastTransitionTime": STAMP, "lastUpdateTime": STAMP}
    return {**found, **({"reason": reason} if reason else {}), **({"message": message} if message else {})}


def _decode(obj: dict[str, Any], kind: type[Any]) -> Any:
    return msgspec.json.decode(msgspec.json.encode(obj), type=kind)


def _labels(role: str, attempt: int | None) -> dict[str, str]:
    labels = {names.JOB_NAME_LABEL: NAME, names.JOB_ROLE_LABEL: role}
    if attempt is not None:
        labels[names.RESTART_ATTEMPT_LABEL] = str(attempt)
    return labels


def pod(
    name: str,
    role: str,
    phase: str = "Running",
    *,
    ready: bool = False,
    reason: str | None = None,
    exit_code: int | None = None,
    exit_reason: str = "Error",
    disrupted: bool = False,
    attempt: int | None = None,
    created: str = STAMP,
    node: str = "",
) -> ObservedPod:
    """A Pod as the API server reports it; ``exit_code``: its container ended so (non-zero: a failure);
    ``node``: the node it is bound to."""
    status: dict[str, Any] = {"phase": phase}
    if reason is not None:
        status["reason"] = reason
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    if disrupted:
        conditions.append({"type": "DisruptionTarget", "status": "True"})
    status["conditions"] = conditions
    if exit_code is not None:
        ended = {"exitCode": exit_code, "reason": exit_reason}
        status["containerStatuses"] = [{"name": role, "state": {"terminated": ended}}]
    metadata = {"name": name, "labels": _labels(role, attempt), "creationTimestamp": created}
    pod: ObservedPod = _decode(
        {"metadata": metadata, "spec": {"nodeName": node}, "status": status}, ObservedPod
    )
    return pod


def worker(index: int, phase: str = "Running", **how: Any) -> ObservedPod:
    return pod(names.worker_name(NAME, index), names.WORKER, phase, **how)


def workers(*phases: str, **how: Any) -> dict[int, ObservedPod]:
    """Workers ``0..n-1`` in these phases."""
    return {i: worker(i, phase, **how) for i, phase in enumerate(phases)}


def launcher_job(
    *,
    complete: bool = False,
    failed: str | None = None,
    failed_pods: int = 0,
    ready: int = 0,
    attempt: int | None = None,
    completion_time: str | None = None,
) -> ObservedLauncherJob:
    """The launcher Job; ``failed``: the reason of its Failed condition (BackoffLimitExceeded, ...)."""
    conditions = []
    if complete:
        conditions.append({"type": "Complete", "status": "True"})
    if failed is not None:
        conditions.append({"type": "Failed", "status": "True", "reason": failed, "message": f"{failed}."})
    status: dict[str, Any] = {"conditions": conditions, "failed": failed_pods, "ready": ready}
    if completion_time is not None:
        status["completionTime"] = completion_time
    metadata = {"name": names.launcher_name(NAME), "labels": _labels(names.LAUNCHER, attempt)}
    job: ObservedLauncherJob = _decode({"metadata": metadata, "status": status}, ObservedLauncherJob)
    return job


def launcher_pod(phase: str = "Running", suffix: str = "x1", **how: Any) -> ObservedPod:
    return pod(f"{names.launcher_name(NAME)}-{suffix}", names.LAUNCHER, phase, **how)


def observed(
    launcher: ObservedLauncherJob | None = None,
    worker_pods: dict[int, ObservedPod] | None = None,
    launcher_pods: list[ObservedPod] | None = None,
    **rest: Any,
) -> Observed:
    """What a sync sees; ``rest``: the other ``Observed`` fields (podgroups, podgroups_declared, ...)."""
    return Observed(launcher_job=launcher, workers=worker_pods or {}, launcher_pods=launcher_pods, **rest)
