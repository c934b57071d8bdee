"""The children one sync returns, rendered from the plan: every child that should exist, every time.

Metacontroller deletes whatever is left out, so omission is how workers and the launcher go away.
The order is the order Metacontroller creates them in: Service, ConfigMap, Secret, PodGroup, workers,
launcher. With gang scheduling, the launcher and the workers are decorated to join the PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api.defaults import Job, Replica
from app.children.configmap import build_configmap
from app.children.launcher import build_launcher
from app.children.podgroup import Membership, gang_job, membership, pod_group
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.workers import WorkerFactory
from app.core.plan import Plan
from app.kube.gang import GangScheduler
from app.kube.keys import KeySource
from app.kube.request import ObservedSecret


class PodTemplates:
    """The launcher Job and the worker factory of one job, each built once per gang scheduler (and
    cluster domain) and kept with the job's verdict, so later syncs of the same parent reuse them.

    Every sync's children share their nested dicts with these (as one response's workers already share
    one spec): a ``SyncResult`` is serialised or read, never edited.
    """

    def __init__(self, job: Job) -> None:
        self._job = job
        self._launchers: dict[GangScheduler | None, dict[str, Any]] = {}
        self._workers: dict[tuple[str, GangScheduler | None], WorkerFactory] = {}

    def launcher(self, replica: Replica, gang: GangScheduler | None) -> dict[str, Any]:
        built = self._launchers.get(gang)
        if built is None:
            built = build_launcher(self._job, replica, self._membership(gang))
            self._launchers[gang] = built
        return built

    def workers(self, replica: Replica, cluster_domain: str, gang: GangScheduler | None) -> WorkerFactory:
        factory = self._workers.get((cluster_domain, gang))
        if factory is None:
            factory = WorkerFactory(self._job, replica, cluster_domain, self._membership(gang))
            self._workers[(cluster_domain, gang)] = factory
        return factory

    def _membership(self, gang: GangScheduler | None) -> Membership | None:
        return membership(gang, self._job.name) if gang is not None else None


def desired_children(
    job: Job,
    plan: Plan,
    secret: ObservedSecret | None,
    keys: KeySource,
    cluster_domain: str,
    priorities: Mapping[str, int] | None = None,
    templates: PodTemplates | None = None,
) -> list[dict[str, Any]]:
    """``priorities``: PriorityClass values by name, for the PodGroup's minResources. ``templates``: the
    job's pod templates from an earlier sync of the same parent (built here when not given)."""
    templates = templates or PodTemplates(job)
    children = [
        build_service(job),
        build_configmap(job, plan.running_workers, cluster_domain),
        build_ssh_secret(job, secret, keys),
    ]
    if plan.podgroup and plan.gang is not None:
        children.append(pod_group(plan.gang, gang_job(job, plan.launcher_pending), priorities or {}))
    if plan.workers and job.worker is not None:
        factory = templates.workers(job.worker, cluster_domain, plan.gang)
        children += [factory.build(i) for i in plan.workers]
    if plan.create_or_keep_launcher and job.launcher is not None:
        children.append(templates.launcher(job.launcher, plan.gang))
    return children
