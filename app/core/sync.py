"""The sync hook as a pure function: one Metacontroller request in, desired children and status out.

Read top-down, in the order a sync happens:
1. Parse the parent. A job managed by another controller, or being deleted, gets its children and
   status back untouched.
2. Default and validate. An invalid job keeps every child it has (re-emitted as last applied) and gets an
   ``Invalid`` condition listing every error: never a deleted running job because of a bad edit.
3. Classify the observed children, then decide everything once (``plan``).
4. Render the status and the children from the plan.
No clock, randomness, caches or I/O here: ``now``, key material and the settings are passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from app.api.defaults import Job, with_defaults
from app.api.types import KUBEFLOW_JOB_CONTROLLER, JobStatus, MPIJob, ObjectMeta
from app.api.validation import FieldError, aggregate, validate
from app.children.templates import PodTemplates, pod_templates
from app.core.config import SyncConfig
from app.core.desired import desired_children
from app.core.freeze import frozen_children
from app.core.intents import Event
from app.core.observed import classify
from app.core.plan import Inputs, finished, make_plan
from app.core.status import invalid_status, next_status
from app.core.warnings import lint_message, without_warning
from app.kube import depth, names
from app.kube.keys import KeySource
from app.kube.request import PrunedRequest, Request, RequestError, SyncRequest


class Outcome(StrEnum):
    SYNCED = "ok"
    INVALID = "invalid_job"
    # Managed by another controller, or being deleted: nothing was changed.
    LEFT_ALONE = "left_alone"


@dataclass(frozen=True)
class SyncResult:
    status: dict[str, Any]
    children: list[dict[str, Any]]
    outcome: Outcome
    namespace: str
    name: str
    # The parent's uid: Events are posted about it.
    uid: str = ""
    # The launcher Job's name when this response keeps one, and whether the status says the job finished
    # (for ``mpi_operator_job_info``).
    launcher: str | None = None
    finished: bool = False
    events: tuple[Event, ...] = ()
    # Ask Metacontroller for another sync after this many seconds (0: only when something changes).
    resync_after_seconds: float = 0

    def response(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "children": self.children,
            "resyncAfterSeconds": self.resync_after_seconds,
        }


# The clean-up of a finished job (cleanPodPolicy, a launcher still running after an eviction), and the
# deletion of an attempt the failure policy restarts, wait for the sync after the one that stored "finished"
# or the next attempt. With ignoreStatusChanges nothing else may trigger that sync, so the deciding sync asks
# for it (found by the e2e tests: workers left running forever); only then (Plan.follow_up_sync), as each
# sync costs Metacontroller a GET of the MPIJob.
RESYNC_AFTER_FINISHING_SECONDS = 1.0


# Deeper than any pod template needs (~15 levels below the parent), well inside the parser's ~200.
MAX_PARENT_DEPTH = 64


class _Head(BaseModel):
    """Just enough of a parent whose spec does not parse: who it is and what status it has."""

    metadata: ObjectMeta = ObjectMeta()
    status: JobStatus = JobStatus()


@dataclass(frozen=True)
class Valid:
    """A job to reconcile: defaulted, with its stored status minus the lint Warning (``job.status``),
    the lint Warning's message, and its pod templates."""

    job: Job
    stored: JobStatus
    warning: str | None
    templates: PodTemplates


@dataclass(frozen=True)
class Invalid:
    meta: ObjectMeta
    stored: JobStatus
    errors: tuple[FieldError, ...]


@dataclass(frozen=True)
class LeftAlone:
    """Managed by another controller, or being deleted."""

    meta: ObjectMeta
    stored: JobStatus


# What the parent alone decides, before any child is looked at. Immutable, so the shell may remember it
# by the parent's bytes and share it between syncs (``app.server.memo``).
Verdict = Valid | Invalid | LeftAlone
Judge = Callable[[bytes, SyncConfig], Verdict]


def judge(parent: bytes, config: SyncConfig) -> Verdict:
    """Parse, default, validate and lint the parent; raises ``ValidationError`` if it does not parse."""
    parsed = MPIJob.model_validate_json(parent)
    meta = parsed.metadata
    managed_by = parsed.spec.run_policy.managed_by
    if (managed_by is not None and managed_by != KUBEFLOW_JOB_CONTROLLER) or meta.deletion_timestamp:
        return LeftAlone(meta, parsed.status)
    job = with_defaults(parsed)
    errors = validate(job, cluster_domain=config.cluster_domain, annotation_budget=config.annotation_budget)
    if errors:
        return Invalid(meta, parsed.status, tuple(errors))
    warning = lint_message(parsed, orjson.loads(parent), job)
    job = replace(job, status=without_warning(parsed.status))
    return Valid(job, parsed.status, warning, pod_templates(job, config.cluster_domain, config.gang))


def sync(
    request: Request, *, now: datetime, keys: KeySource, config: SyncConfig, judge: Judge = judge
) -> SyncResult:
    """``judge``: the parent's verdict; the shell passes one that remembers it (the answer is the same)."""
    if isinstance(request, PrunedRequest):
        return _too_deep(request.request, bytes(request.request.parent), request.where, now)
    parent = bytes(request.parent)
    try:
        verdict = judge(parent, config)
    except ValidationError as err:
        return _unparsable(request, parent, err, now)
    if isinstance(verdict, LeftAlone):
        return _left_alone(request, parent, verdict)
    if isinstance(verdict, Invalid):
        return _invalid(request, verdict.meta, verdict.stored, list(verdict.errors), now)
    return _reconcile(verdict, request, now=now, keys=keys, config=config)


def _reconcile(
    verdict: Valid, request: SyncRequest, *, now: datetime, keys: KeySource, config: SyncConfig
) -> SyncResult:
    """The job's life from the plan: its status, children and what the shell records."""
    job = verdict.job
    observed = classify(job.name, request)
    plan = make_plan(job, observed, Inputs(config.gang, verdict.warning, now))
    status, events = next_status(job, plan, verdict.stored, now)
    children = desired_children(job, plan, observed, verdict.templates, keys, config.cluster_domain)
    return SyncResult(
        status,
        children,
        Outcome.SYNCED,
        job.namespace,
        job.name,
        uid=job.metadata.uid,
        launcher=names.launcher_name(job.name) if plan.keep_launcher else None,
        finished=plan.finished,
        events=events,
        resync_after_seconds=RESYNC_AFTER_FINISHING_SECONDS if plan.follow_up_sync else 0,
    )


def _kept(
    request: SyncRequest,
    meta: ObjectMeta,
    stored: JobStatus,
    status: dict[str, Any],
    outcome: Outcome,
    events: tuple[Event, ...] = (),
) -> SyncResult:
    """Every child as it is; the launcher and "finished" as they stand (for the shell's records)."""
    launcher = names.launcher_name(meta.name)
    exists = any(j.metadata.name == launcher for j in (request.children.jobs or {}).values())
    return SyncResult(
        status,
        frozen_children(request),
        outcome,
        meta.namespace,
        meta.name,
        uid=meta.uid,
        launcher=launcher if exists else None,
        finished=finished(stored),
        events=events,
    )


def _left_alone(request: SyncRequest, parent: bytes, verdict: LeftAlone) -> SyncResult:
    """Managed elsewhere or being deleted: every child and the status exactly as they are."""
    status = orjson.loads(parent).get("status") or {}
    return _kept(request, verdict.meta, verdict.stored, status, Outcome.LEFT_ALONE)


def _invalid(
    request: SyncRequest, meta: ObjectMeta, previous: JobStatus, errors: list[FieldError], now: datetime
) -> SyncResult:
    status, events = invalid_status(previous, meta.generation, aggregate(errors), now)
    return _kept(request, meta, previous, status, Outcome.INVALID, events)


def _unparsable(request: SyncRequest, parent: bytes, err: ValidationError, now: datetime) -> SyncResult:
    """A spec of the wrong shape is an invalid job too: its errors in upstream's path notation."""
    if _recursion(err):
        _, where = depth.prune(parent, MAX_PARENT_DEPTH)
        return _too_deep(request, parent, f"parent.{where or ''}", now)
    head = _head(parent)
    errors = [
        FieldError(_field_path(e["loc"]), "Invalid", e["msg"], _short(e.get("input"))) for e in err.errors()
    ]
    return _invalid(request, head.metadata, head.status, errors, now)


def _head(parent: bytes) -> _Head:
    try:
        return _Head.model_validate_json(parent)
    except ValidationError:
        raise RequestError("parent MPIJob has malformed metadata or status") from None


def _recursion(err: ValidationError) -> bool:
    return any(e["type"] == "json_invalid" and "recursion limit" in e["msg"] for e in err.errors())


def _too_deep(request: SyncRequest, parent: bytes, where: str, now: datetime) -> SyncResult:
    """Nesting beyond the parsers: an Invalid job when it is in the MPIJob (unknown fields under a
    template's metadata are kept by the CRD at any depth the apiserver takes), else a bad request."""
    if not where.startswith("parent."):
        raise RequestError("request body nests too deeply")
    pruned, _ = depth.prune(parent, MAX_PARENT_DEPTH)
    head = _head(pruned)
    detail = f"must not nest deeper than {MAX_PARENT_DEPTH} levels"
    error = FieldError(where.removeprefix("parent.")[:128], "Forbidden", detail)
    return _invalid(request, head.metadata, head.status, [error], now)


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
