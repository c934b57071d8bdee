"""The launcher Job and the worker factory of one job: the costly part of its children, built once.

They depend only on the parent and the settings, so a job's verdict carries them (``core.sync.judge``)
and every sync of the same parent bytes reuses them. What the plan decides (the failure policy's attempt,
the PodGroup the Pods join) is added per sync (``launcher_job``, ``worker_factory``), and costs nothing
when there is neither. Each sync's children share their nested dicts with these (as one response's
workers already share one spec): children are serialised or read, never edited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.api.defaults import Job
from app.children import launcher_job
from app.children.podgroup import Membership, membership
from app.children.workers import WorkerFactory
from app.kube.gang import GangScheduler


@dataclass(frozen=True)
class PodTemplates:
    job_name: str
    # The launcher Job without the plan's attempt and PodGroup membership.
    launcher_job_base: Mapping[str, Any] | None
    workers: WorkerFactory | None

    def launcher_job(self, attempt: int | None, gang: GangScheduler | None) -> dict[str, Any] | None:
        """The launcher Job of ``attempt`` (None: no failure policy), joined to ``gang``'s PodGroup."""
        if self.launcher_job_base is None:
            return None
        return launcher_job.for_plan(self.launcher_job_base, attempt, self._membership(gang))

    def worker_factory(self, attempt: int | None, gang: GangScheduler | None) -> WorkerFactory | None:
        """The worker Pods of ``attempt``, joined to ``gang``'s PodGroup."""
        return self.workers.for_plan(attempt, self._membership(gang)) if self.workers is not None else None

    def _membership(self, gang: GangScheduler | None) -> Membership | None:
        return membership(gang, self.job_name) if gang is not None else None


def pod_templates(job: Job, cluster_domain: str) -> PodTemplates:
    built = launcher_job.build_launcher_job(job, job.launcher_spec) if job.launcher_spec is not None else None
    workers = WorkerFactory(job, job.worker_spec, cluster_domain) if job.worker_spec is not None else None
    return PodTemplates(job.name, built, workers)
