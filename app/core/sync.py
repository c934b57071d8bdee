"""The sync hook as a pure function: one Metacontroller request in, desired children and status out.

Order of decisions (the hard part of a sync hook):
1. Parse the parent. A job managed by another controller, or being deleted, gets its children and
   status back untouched.
2. Default and validate. An invalid job keeps every child it has (re-emitted as last applied) and gets an
   ``Invalid`` condition listing every error — never a deleted running job because of a bad edit.
3. Status from the previous status and the observed children (upstream ``updateMPIJobStatus``).
4. Desired children from the spec and that status. "Finished" is read from the status written earlier,
   so a launcher deleted by its TTL is never re-created; cleanup happens only once the status that says
   "finished" has been stored.
No clock, randomness or I/O here: ``now`` and key material are injected.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from app.api.defaults import with_defaults
from app.api.types import (
    KUBEFLOW_JOB_CONTROLLER,
    CleanPodPolicy,
    ConditionType,
    JobStatus,
    LauncherCreationPolicy,
    MPIJob,
    ObjectMeta,
    ReplicaType,
)
from app.api.validation import FieldError, aggregate, validate
from app.children.configmap import build_configmap
from app.children.launcher import build_launcher
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.workers import WorkerFactory
from app.core import status as st
from app.core.freeze import frozen_children
from app.core.keys import KeySource
from app.core.observed import Observed, classify
from app.core.request import ObservedJob, RequestError, SyncRequest
from app.settings import Settings


@dataclass(frozen=True)
class Event:
    """What upstream would have recorded as a Kubernetes Event; the shell logs it and counts metrics."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class SyncResult:
    status: dict[str, Any]
    children: list[dict[str, Any]]
    resync_after_seconds: float = 0
    events: tuple[Event, ...] = field(default=())
    job: str = ""  # "<namespace>/<name>", for the shell's logs

    def response(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "children": self.children,
            "resyncAfterSeconds": self.resync_after_seconds,
        }


class _Head(BaseModel):
    """Just enough of a parent whose spec does not parse: who it is and what status it has."""

    metadata: ObjectMeta = ObjectMeta()
    status: JobStatus = JobStatus()


def sync(request: SyncRequest, *, now: datetime, keys: KeySource, settings: Settings) -> SyncResult:
    try:
        job = MPIJob.model_validate_json(bytes(request.parent))
    except ValidationError as err:
        return _unparsable(request, err, now)
    return _named(_sync_parsed(request, job, now=now, keys=keys, settings=settings), job.metadata)


def _named(result: SyncResult, meta: ObjectMeta) -> SyncResult:
    return replace(result, job=f"{meta.namespace}/{meta.name}")


def _sync_parsed(
    request: SyncRequest, job: MPIJob, *, now: datetime, keys: KeySource, settings: Settings
) -> SyncResult:
    managed_by = job.spec.run_policy.managed_by
    if (managed_by is not None and managed_by != KUBEFLOW_JOB_CONTROLLER) or job.metadata.deletion_timestamp:
        return _hands_off(request)
    defaulted = with_defaults(job)
    errors = validate(defaulted)
    if errors:
        return _invalid(request, job.metadata, job.status, errors, now)
    observed = classify(job.metadata.name, request)
    return _reconcile(defaulted, observed, now=now, keys=keys, settings=settings)


# --- jobs we must not touch ------------------------------------------------------------------------


def _hands_off(request: SyncRequest) -> SyncResult:
    """Managed elsewhere or being deleted: every child and the status exactly as they are."""
    parent = orjson.loads(bytes(request.parent))
    return SyncResult(status=parent.get("status") or {}, children=frozen_children(request))


def _invalid(
    request: SyncRequest, meta: ObjectMeta, previous: JobStatus, errors: list[FieldError], now: datetime
) -> SyncResult:
    message = st.truncate(f"Found validation errors: {aggregate(errors)}")
    conditions = st.conditions_from(previous)
    current = st.find(conditions, ConditionType.INVALID)
    changed = current is None or current.get("message") != message
    if changed:
        # Unlike other conditions the message matters here: it tells the user what to fix now. The
        # transition time stays that of the first invalid spec.
        st.remove_condition(conditions, ConditionType.INVALID)
        st.set_condition(conditions, ConditionType.INVALID, "True", st.REASON_INVALID, message, now)
        if current is not None and current["status"] == "True" and current.get("lastTransitionTime"):
            conditions[-1]["lastTransitionTime"] = current["lastTransitionTime"]
    status = st.render(
        conditions,
        _replica_statuses(previous),
        previous.start_time,
        previous.completion_time,
        meta.generation,
    )
    events = (Event("Warning", st.REASON_INVALID, message),) if changed else ()
    return SyncResult(status=status, children=frozen_children(request), events=events)


def _unparsable(request: SyncRequest, err: ValidationError, now: datetime) -> SyncResult:
    try:
        head = _Head.model_validate_json(bytes(request.parent))
    except ValidationError:
        raise RequestError("parent MPIJob has malformed metadata or status") from None
    errors = [
        FieldError(_field_path(e["loc"]), "Invalid", e["msg"], _short(e.get("input"))) for e in err.errors()
    ]
    return _named(_invalid(request, head.metadata, head.status, errors, now), head.metadata)


def _field_path(loc: tuple[int | str, ...]) -> str:
    """pydantic's location in upstream's notation: ``spec.mpiReplicaSpecs[Worker].replicas``."""
    path = ""
    for index, part in enumerate(loc):
        in_map = index > 0 and loc[index - 1] == "mpiReplicaSpecs"
        if in_map or isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _short(value: object) -> object:
    """The offending value for a message: scalars as they are (cut short), structures not at all."""
    if isinstance(value, str):
        return value[:64]
    return value if isinstance(value, int | float | bool) or value is None else "<object>"


def _replica_statuses(status: JobStatus) -> dict[str, dict[str, int]] | None:
    if status.replica_statuses is None:
        return None
    return {
        kind: st.replica_status(s.active, s.succeeded, s.failed)
        for kind, s in status.replica_statuses.items()
    }


# --- the normal path -------------------------------------------------------------------------------


def _reconcile(
    job: MPIJob, observed: Observed, *, now: datetime, keys: KeySource, settings: Settings
) -> SyncResult:
    name, namespace = job.metadata.name, job.metadata.namespace
    previous = job.status
    conditions = st.conditions_from(previous)
    events: list[Event] = []
    st.remove_condition(conditions, ConditionType.INVALID)
    if not conditions:
        message = f"MPIJob {namespace}/{name} is created."
        st.set_condition(conditions, ConditionType.CREATED, "True", st.REASON_CREATED, message, now)
        events.append(Event("Normal", st.REASON_CREATED, message))

    if st.is_finished(conditions):
        return _finished(job, observed, conditions, events, keys=keys, settings=settings)

    worker_spec = job.spec.replica(ReplicaType.WORKER)
    replicas = (worker_spec.replicas or 0) if worker_spec else 0
    suspended = bool(job.spec.run_policy.suspend)
    start_time = previous.start_time
    completion_time = previous.completion_time
    if start_time is None and not suspended:
        start_time = st.timestamp(now)

    launcher = observed.launcher
    launcher_done = launcher is not None and launcher.done
    # Upstream's "worker list" of this sync: none while suspended or once the launcher is done.
    worker_indices = range(replicas) if not suspended and not launcher_done else range(0)

    if suspended:
        if st.set_condition(
            conditions, ConditionType.SUSPENDED, "True", st.REASON_SUSPENDED, "MPIJob suspended", now
        ):
            events.append(Event("Normal", st.REASON_SUSPENDED, "MPIJob suspended"))
    elif st.find(conditions, ConditionType.SUSPENDED) is not None and st.set_condition(
        conditions, ConditionType.SUSPENDED, "False", st.REASON_RESUMED, "MPIJob resumed", now
    ):
        events.append(Event("Normal", st.REASON_RESUMED, "MPIJob resumed"))
        start_time = st.timestamp(now)

    replica_statuses = _replica_statuses(previous) or {}
    launcher_running = 0
    if launcher is not None:
        failed_pods = launcher.failed_pods
        launcher_status = st.replica_status(failed=failed_pods)
        if launcher.condition("Complete"):
            launcher_status = st.replica_status(succeeded=1, failed=failed_pods)
            message = f"MPIJob {namespace}/{name} successfully completed."
            completion_time = (
                completion_time or (launcher.status and launcher.status.completionTime) or (st.timestamp(now))
            )
            if st.set_condition(
                conditions, ConditionType.SUCCEEDED, "True", st.REASON_SUCCEEDED, message, now
            ):
                events.append(Event("Normal", st.REASON_SUCCEEDED, message))
        elif failed := launcher.condition("Failed"):
            reason, message = _launcher_failure(job, failed.reason, failed.message, observed)
            completion_time = completion_time or st.timestamp(now)
            if st.set_condition(conditions, ConditionType.FAILED, "True", reason, message, now):
                events.append(Event("Warning", reason, message))
        else:
            launcher_running = _running_launcher_pods(launcher, observed)
            launcher_status = st.replica_status(active=launcher_running, failed=failed_pods)
        replica_statuses[ReplicaType.LAUNCHER.value] = launcher_status
    elif suspended and ReplicaType.LAUNCHER.value in replica_statuses:
        replica_statuses[ReplicaType.LAUNCHER.value] = {}  # its launcher Job is gone while suspended

    active = succeeded = failed_workers = evicted = 0
    for index in worker_indices:
        pod = observed.workers.get(index)
        phase = pod.phase if pod else ""
        if phase == "Failed":
            failed_workers += 1
            evicted += pod is not None and pod.status is not None and pod.status.reason == "Evicted"
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Running":
            active += 1
    replica_statuses[ReplicaType.WORKER.value] = st.replica_status(active, succeeded, failed_workers)

    if evicted:
        # Upstream leaves evicted jobs half-alive; we finish them so the launcher stops (README: deviations).
        message = f"{evicted}/{len(worker_indices)} workers are evicted"
        if st.set_condition(conditions, ConditionType.FAILED, "True", st.REASON_EVICTED, message, now):
            events.append(Event("Warning", st.REASON_EVICTED, message))
        completion_time = completion_time or st.timestamp(now)

    finished = st.is_finished(conditions)
    if suspended:
        st.set_condition(
            conditions,
            ConditionType.RUNNING,
            "False",
            st.REASON_SUSPENDED,
            f"MPIJob {namespace}/{name} is suspended.",
            now,
        )
    elif finished:
        if st.find(conditions, ConditionType.RUNNING) is None:
            stamp = completion_time or st.timestamp(now)
            conditions.append(
                {
                    "type": ConditionType.RUNNING.value,
                    "status": "False",
                    "reason": st.REASON_RUNNING,
                    "message": f"MPIJob {namespace}/{name} is finished but Running condition was never set.",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                }
            )
    elif launcher is not None and launcher_running >= 1 and active == len(worker_indices):
        st.set_condition(
            conditions,
            ConditionType.RUNNING,
            "True",
            st.REASON_RUNNING,
            f"MPIJob {namespace}/{name} is running.",
            now,
        )

    status = st.render(conditions, replica_statuses, start_time, completion_time, job.metadata.generation)
    children = _desired_children(
        job,
        observed,
        worker_indices=worker_indices,
        suspended=suspended,
        finished=finished,
        replicas=replicas,
        keys=keys,
        settings=settings,
    )
    return SyncResult(status=status, children=children, events=tuple(events))


def _desired_children(
    job: MPIJob,
    observed: Observed,
    *,
    worker_indices: range,
    suspended: bool,
    finished: bool,
    replicas: int,
    keys: KeySource,
    settings: Settings,
) -> list[dict[str, Any]]:
    worker_spec = job.spec.replica(ReplicaType.WORKER)
    if worker_spec is None:
        wanted: list[int] = []
    elif finished:
        # Finishing now: keep the workers that exist, create none; cleanPodPolicy acts once the status
        # that says "finished" is stored.
        wanted = [i for i in sorted(observed.workers) if i < replicas]
    else:
        wanted = list(worker_indices)
    children = _common_children(job, observed, wanted, keys=keys, settings=settings)
    if suspended:
        return children
    if observed.launcher is not None or (
        not finished and _may_create_launcher(job, observed, worker_indices)
    ):
        children.append(build_launcher(job))
    return children


def _common_children(
    job: MPIJob, observed: Observed, workers: list[int], *, keys: KeySource, settings: Settings
) -> list[dict[str, Any]]:
    """Service, ConfigMap, Secret and the given workers. ``discover_hosts.sh`` lists only running
    workers this response keeps, so a worker deleted by this very response is already gone from it."""
    factory = WorkerFactory(job, settings.cluster_domain) if workers else None
    running = [
        pod.metadata.name
        for i in workers
        if (pod := observed.workers.get(i)) is not None and pod.phase == "Running"
    ]
    children = [
        build_service(job),
        build_configmap(job, running, settings.cluster_domain),
        build_ssh_secret(job, observed.secret, keys),
    ]
    if factory is not None:
        children += [factory.build(i) for i in workers]
    return children


def _may_create_launcher(job: MPIJob, observed: Observed, worker_indices: range) -> bool:
    if job.spec.launcher_creation_policy == LauncherCreationPolicy.AT_STARTUP:
        return True
    # Any other value waits for every worker Pod to be Ready, as upstream.
    return all((pod := observed.workers.get(i)) is not None and pod.ready for i in worker_indices)


def _finished(
    job: MPIJob,
    observed: Observed,
    conditions: list[st.Condition],
    events: list[Event],
    *,
    keys: KeySource,
    settings: Settings,
) -> SyncResult:
    """A job whose stored status says it finished: keep what exists, clean workers per policy."""
    previous = job.status
    worker_spec = job.spec.replica(ReplicaType.WORKER)
    policy = job.spec.run_policy.clean_pod_policy
    replica_statuses = _replica_statuses(previous)
    kept = sorted(observed.workers)
    if policy in (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING) and previous.completion_time:
        if policy == CleanPodPolicy.ALL:
            kept = []
        else:
            kept = [i for i in kept if observed.workers[i].phase not in ("Running", "Pending")]
        replica_statuses = {**(replica_statuses or {}), ReplicaType.WORKER.value: {}}
    children = _common_children(
        job, observed, kept if worker_spec is not None else [], keys=keys, settings=settings
    )
    launcher = observed.launcher
    if launcher is not None and launcher.done:
        # Kept for its logs until its TTL removes it; never re-created once gone.
        children.append(build_launcher(job))
    elif launcher is not None:
        # A launcher still running for a job that already failed (evicted workers) is deleted: it can
        # only hang on the missing ranks (README: deviations).
        replica_statuses = {
            **(replica_statuses or {}),
            ReplicaType.LAUNCHER.value: st.replica_status(failed=launcher.failed_pods),
        }
    status = st.render(
        conditions, replica_statuses, previous.start_time, previous.completion_time, job.metadata.generation
    )
    return SyncResult(status=status, children=children, events=tuple(events))


def _running_launcher_pods(launcher: ObservedJob, observed: Observed) -> int:
    """Running launcher Pods; without the customize hook, the Job's ``ready`` count stands in."""
    if observed.launcher_pods is not None:
        return sum(1 for p in observed.launcher_pods if p.phase == "Running")
    return (launcher.status.ready if launcher.status else None) or 0


def _launcher_failure(
    job: MPIJob, reason: str | None, message: str | None, observed: Observed
) -> tuple[str, str]:
    """Upstream ``updateMPIJobFailedStatus``: the Job's reason, plus the newest failed Pod's on backoff."""
    reason = reason or st.REASON_FAILED
    message = message or f"MPIJob {job.metadata.namespace}/{job.metadata.name} has failed"
    if reason == st.REASON_BACKOFF_LIMIT_EXCEEDED and observed.launcher_pods:
        newest = None
        for pod in observed.launcher_pods:
            if pod.phase != "Failed":
                continue
            if newest is None or (pod.metadata.creationTimestamp or "") > (
                newest.metadata.creationTimestamp or ""
            ):
                newest = pod
        if newest is not None and newest.status is not None:
            reason += "/" + (newest.status.reason or "")
            message += ": " + (newest.status.message or "")
    return reason, st.truncate(message)
