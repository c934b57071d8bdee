"""The launcher Job and the worker factory of one job: the costly part of its children, built once.

They depend only on the parent and the settings, so a job's verdict carries them (``core.sync.judge``)
and every sync of the same parent bytes reuses them. Each sync's children share their nested dicts with
these (as one response's workers already share one spec): children are serialised or read, never edited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.api.defaults import Job
from app.children.launcher import build_launcher
from app.children.podgroup import membership
from app.children.workers import WorkerFactory
from app.kube.gang import GangScheduler


@dataclass(frozen=True)
class PodTemplates:
    # The gang scheduler the Pods are decorated for (None: no PodGroup membership).
    gang: GangScheduler | None
    launcher: Mapping[str, Any] | None
    workers: WorkerFactory | None


def pod_templates(job: Job, cluster_domain: str, gang: GangScheduler | None) -> PodTemplates:
    member = membership(gang, job.name) if gang is not None else None
    launcher = build_launcher(job, job.launcher, member) if job.launcher is not None else None
    workers = WorkerFactory(job, job.worker, cluster_domain, member) if job.worker is not None else None
    return PodTemplates(gang, launcher, workers)
