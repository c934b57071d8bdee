"""The sync hook as a pure function: one Metacontroller request in, desired children and status out.

Read top-down, in the order a sync happens:
1. Read the parent (``app.kube.parent``, once). A job managed by another controller, or being deleted,
   gets its children and status back untouched.
2. Default and validate. An invalid job (a parent of the wrong shape too) keeps every child it has
   (re-emitted as last applied) and gets an ``Invalid`` condition listing every error: never a deleted
   running job because of a bad edit.
3. Classify the observed children, then decide everything once (``plan``: the policies).
4. Render the status and the children from the plan.
No clock, randomness, caches or I/O here: ``now``, key material and the settings are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from app.api.defaults import Job, with_defaults
from app.api.hostfile_order_annotations import order_labels
from app.api.types import KUBEFLOW_JOB_CONTROLLER, JobStatus, ObjectMeta
from app.api.validation import FieldError, aggregate, validate
from app.children.templates import PodTemplates, pod_templates
from app.core.config import SyncConfig
from app.core.desired import desired_children
from app.core.freeze import frozen_children
from app.core.intents import Event
from app.core.lint_warning import lint_message, without_warning
from app.core.observed import classify, find_launcher_job
from app.core.plan import Inputs, make_plan
from app.core.policies.finishing import has_finished
from app.core.policies.hostfile_order import TopologyOrder
from app.core.status import invalid_status, next_status
from app.core.timings import Timing, phase_timings
from app.kube import names
from app.kube.keys import KeySource
from app.kube.parent import Unreadable, read_parent
from app.kube.request import SyncRequest


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
    # The launcher Job's name when this response keeps one, and whether the status this response writes says
    # the job finished, before or by this sync (for ``mpi_operator_job_info``).
    launcher_job: str | None = None
    writes_finished: bool = False
    events: tuple[Event, ...] = ()
    # Ask Metacontroller for another sync after this many seconds (0: only when something changes).
    resync_after_seconds: float = 0
    # How long the job waited or ran, for the phases this sync's transitions end (``timings``).
    timings: tuple[Timing, ...] = ()

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
    """Managed by another controller, or being deleted: its status goes back exactly as sent."""

    meta: ObjectMeta
    stored: JobStatus
    status: Mapping[str, Any]


# What the parent alone decides, before any child is looked at. Immutable, so the shell may remember it
# by the parent's bytes and share it between syncs (``app.server.memo``).
Verdict = Valid | Invalid | LeftAlone
Judge = Callable[[bytes, SyncConfig], Verdict]


def judge(parent: bytes, config: SyncConfig) -> Verdict:
    """Read (``app.kube.parent``, once), default, validate and lint the parent. A parent that does not
    parse is an invalid job, its errors in upstream's notation."""
    read = read_parent(parent)
    if isinstance(read, Unreadable):
        return Invalid(read.meta, read.status, read.errors)
    parsed, meta = read.job, read.job.metadata
    managed_by = parsed.spec.run_policy.managed_by
    if (managed_by is not None and managed_by != KUBEFLOW_JOB_CONTROLLER) or meta.deletion_timestamp:
        return LeftAlone(meta, parsed.status, read.document.get("status") or {})
    job = with_defaults(parsed)
    errors = validate(job, cluster_domain=config.cluster_domain, annotation_budget=config.annotation_budget)
    if errors:
        return Invalid(meta, parsed.status, tuple(errors))
    warning = lint_message(parsed, read.document, job)
    job = replace(job, status=without_warning(parsed.status))
    return Valid(job, parsed.status, warning, pod_templates(job, config.cluster_domain))


def sync(
    request: SyncRequest, *, now: datetime, keys: KeySource, config: SyncConfig, judge: Judge = judge
) -> SyncResult:
    """``judge``: the parent's verdict; the shell passes one that remembers it (the answer is the same)."""
    verdict = judge(bytes(request.parent), config)
    if isinstance(verdict, LeftAlone):
        return _kept(request, verdict.meta, verdict.stored, dict(verdict.status), Outcome.LEFT_ALONE)
    if isinstance(verdict, Invalid):
        errors = aggregate(list(verdict.errors))
        status, events = invalid_status(verdict.stored, verdict.meta.generation, errors, now)
        return _kept(request, verdict.meta, verdict.stored, status, Outcome.INVALID, events)
    return _reconcile(verdict, request, now=now, keys=keys, config=config)


def _reconcile(
    verdict: Valid, request: SyncRequest, *, now: datetime, keys: KeySource, config: SyncConfig
) -> SyncResult:
    """The job's life from the plan: its status, children and what the shell records."""
    job = verdict.job
    observed = classify(job.name, request)
    labels = order_labels(job.metadata.annotations, config.hostfile_order_labels)
    topology = None if labels is None else TopologyOrder(labels, config.cluster_domain)
    plan = make_plan(job, observed, Inputs(config.gang, verdict.warning, now, topology))
    status, events = next_status(job, plan, verdict.stored, now)
    timings = phase_timings(verdict.stored, status, events) if events else ()
    children = desired_children(job, plan, observed, verdict.templates, keys, config.cluster_domain)
    return SyncResult(
        status,
        children,
        Outcome.SYNCED,
        job.namespace,
        job.name,
        uid=job.metadata.uid,
        launcher_job=names.launcher_name(job.name) if plan.launcher_job.keep else None,
        writes_finished=plan.writes_finished,
        events=events,
        resync_after_seconds=RESYNC_AFTER_FINISHING_SECONDS if plan.follow_up_sync else 0,
        timings=timings,
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
    exists = find_launcher_job(meta.name, request) is not None
    return SyncResult(
        status,
        frozen_children(request),
        outcome,
        meta.namespace,
        meta.name,
        uid=meta.uid,
        launcher_job=names.launcher_name(meta.name) if exists else None,
        writes_finished=has_finished(stored),
        events=events,
    )
