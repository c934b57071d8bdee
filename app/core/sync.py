"""The sync hook as a pure function: one Metacontroller request in, desired children and status out.

Read top-down, in the order a sync happens:
1. Parse the parent. A job managed by another controller, or being deleted, gets its children and
   status back untouched.
2. Default and validate. An invalid job keeps every child it has (re-emitted as last applied) and gets an
   ``Invalid`` condition listing every error: never a deleted running job because of a bad edit.
3. Classify the observed children, then decide everything once (``plan``).
4. Render the status and the children from the plan.
No clock, randomness or I/O here: ``now``, key material and the cluster domain are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from app.api.defaults import Job, with_defaults
from app.api.types import KUBEFLOW_JOB_CONTROLLER, JobStatus, MPIJob, ObjectMeta
from app.api.validation import FieldError, aggregate, validate
from app.core.desired import PodTemplates, desired_children
from app.core.freeze import frozen_children
from app.core.memo import ParentMemo
from app.core.observed import classify
from app.core.plan import make_plan
from app.core.status import Event, invalid_status, next_status
from app.core.warnings import lint_message, place_warning, without_warning
from app.kube import depth, names
from app.kube.gang import RESOURCE as PODGROUPS
from app.kube.gang import gang_scheduler
from app.kube.keys import KeySource
from app.kube.request import RequestError, SyncRequest


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
    events: tuple[Event, ...] = ()
    # Ask Metacontroller for another sync after this many seconds (0: only when something changes).
    resync_after_seconds: float = 0

    @property
    def launcher(self) -> str | None:
        """The launcher Job's name when this response keeps one (for ``mpi_operator_job_info``)."""
        launcher = names.launcher_name(self.name)
        wanted = any(c["kind"] == "Job" and c["metadata"]["name"] == launcher for c in self.children)
        return launcher if wanted else None

    def response(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "children": self.children,
            "resyncAfterSeconds": self.resync_after_seconds,
        }


# The clean-up of a finished job (cleanPodPolicy, a launcher still running after an eviction) waits for the
# sync after the one that stored "finished". With ignoreStatusChanges nothing else may trigger that sync, so
# the finishing sync asks for it (found by the e2e tests: workers left running forever).
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
    and its pod templates as far as a sync has built them."""

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


# What the parent alone decides, before any child is looked at. Shared between syncs of the same parent
# bytes (``ParentMemo``), so a verdict is never mutated (only its templates fill in, as a cache).
Verdict = Valid | Invalid | LeftAlone


def judge(parent: bytes, *, cluster_domain: str, annotation_budget: bool) -> Verdict:
    """Parse, default, validate and lint the parent; raises ``ValidationError`` if it does not parse."""
    parsed = MPIJob.model_validate_json(parent)
    meta = parsed.metadata
    managed_by = parsed.spec.run_policy.managed_by
    if (managed_by is not None and managed_by != KUBEFLOW_JOB_CONTROLLER) or meta.deletion_timestamp:
        return LeftAlone(meta)
    job = with_defaults(parsed)
    errors = validate(job, cluster_domain=cluster_domain, annotation_budget=annotation_budget)
    if errors:
        return Invalid(meta, parsed.status, tuple(errors))
    warning = lint_message(parsed, orjson.loads(parent))
    job = replace(job, status=without_warning(parsed.status))
    return Valid(job, parsed.status, warning, PodTemplates(job))


def sync(
    request: SyncRequest,
    *,
    now: datetime,
    keys: KeySource,
    cluster_domain: str,
    gang_scheduling: str = "",
    annotation_budget: bool = True,
    memo: ParentMemo[Verdict] | None = None,
) -> SyncResult:
    """``gang_scheduling``: as upstream's ``--gang-scheduling`` (empty, ``volcano`` or a scheduler name).
    ``annotation_budget``: Metacontroller applies with dynamic-apply, so each child must fit its
    256 KiB last-applied annotation (``app.api.limits``); False under server-side apply.
    ``memo``: remembers each parent's verdict between syncs (the answer is the same without it)."""
    if request.too_deep is not None:
        return _too_deep(request, request.too_deep, now)
    parent = bytes(request.parent)

    def verdict_now() -> Verdict:
        return judge(parent, cluster_domain=cluster_domain, annotation_budget=annotation_budget)

    try:
        if memo is None:
            verdict = verdict_now()
        else:
            verdict = memo.get_or_compute((cluster_domain, annotation_budget), parent, verdict_now)
    except ValidationError as err:
        return _unparsable(request, err, now)
    if isinstance(verdict, LeftAlone):
        return _left_alone(request, verdict.meta)
    if isinstance(verdict, Invalid):
        return _invalid(request, verdict.meta, verdict.stored, list(verdict.errors), now)
    return _reconcile(
        verdict, request, now=now, keys=keys, cluster_domain=cluster_domain, gang=gang_scheduling
    )


def _reconcile(
    verdict: Valid, request: SyncRequest, *, now: datetime, keys: KeySource, cluster_domain: str, gang: str
) -> SyncResult:
    """The job's life from the plan; the lint ``Warning`` condition is added last and changes nothing."""
    job = verdict.job
    observed = classify(job.name, request)
    scheduler = gang_scheduler(gang)
    # A PodGroup kind the CompositeController does not declare must never be emitted (its CRD may be
    # missing): without it the job runs ungrouped and its status says which overlay to apply.
    declared = scheduler is not None and request.controller.declares_child(scheduler.api_version, PODGROUPS)
    plan = make_plan(job, observed, scheduler if declared else None)
    status, events = next_status(job, plan, now, None if declared else scheduler)
    events += place_warning(status, verdict.stored, verdict.warning, now)
    priorities = request.related.priority_values
    children = desired_children(
        job, plan, observed.secret, keys, cluster_domain, priorities, verdict.templates
    )
    resync = RESYNC_AFTER_FINISHING_SECONDS if plan.finishing else 0
    return SyncResult(status, children, Outcome.SYNCED, job.namespace, job.name, events, resync)


def _left_alone(request: SyncRequest, meta: ObjectMeta) -> SyncResult:
    """Managed elsewhere or being deleted: every child and the status exactly as they are."""
    parent = orjson.loads(bytes(request.parent))
    status = parent.get("status") or {}
    return SyncResult(status, frozen_children(request), Outcome.LEFT_ALONE, meta.namespace, meta.name)


def _invalid(
    request: SyncRequest, meta: ObjectMeta, previous: JobStatus, errors: list[FieldError], now: datetime
) -> SyncResult:
    status, events = invalid_status(previous, meta.generation, aggregate(errors), now)
    return SyncResult(status, frozen_children(request), Outcome.INVALID, meta.namespace, meta.name, events)


def _unparsable(request: SyncRequest, err: ValidationError, now: datetime) -> SyncResult:
    """A spec of the wrong shape is an invalid job too: its errors in upstream's path notation."""
    if _recursion(err):
        _, where = depth.prune(bytes(request.parent), MAX_PARENT_DEPTH)
        return _too_deep(request, f"parent.{where or ''}", now)
    try:
        head = _Head.model_validate_json(bytes(request.parent))
    except ValidationError:
        raise RequestError("parent MPIJob has malformed metadata or status") from None
    errors = [
        FieldError(_field_path(e["loc"]), "Invalid", e["msg"], _short(e.get("input"))) for e in err.errors()
    ]
    return _invalid(request, head.metadata, head.status, errors, now)


def _recursion(err: ValidationError) -> bool:
    return any(e["type"] == "json_invalid" and "recursion limit" in e["msg"] for e in err.errors())


def _too_deep(request: SyncRequest, where: str, now: datetime) -> SyncResult:
    """Nesting beyond the parsers: an Invalid job when it is in the MPIJob (unknown fields under a
    template's metadata are kept by the CRD at any depth the apiserver takes), else a bad request."""
    if not where.startswith("parent."):
        raise RequestError("request body nests too deeply")
    pruned, _ = depth.prune(bytes(request.parent), MAX_PARENT_DEPTH)
    try:
        head = _Head.model_validate_json(pruned)
    except ValidationError:
        raise RequestError("parent MPIJob has malformed metadata or status") from None
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
