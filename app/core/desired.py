"""The children one sync returns, rendered from the plan: every child that should exist, every time.

Metacontroller deletes whatever is left out, so omission is how workers and the launcher go away.
The order is the order Metacontroller creates them in: Service, ConfigMap, Secret, PodGroup, workers,
launcher. With gang scheduling, the launcher and the workers are decorated to join the PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api.defaults import Job
from app.children.configmap import build_configmap
from app.children.launcher import build_launcher
from app.children.podgroup import gang_job, membership, pod_group
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.workers import WorkerFactory
from app.core.plan import Plan
from app.kube.keys import KeySource
from app.kube.request import ObservedSecret


def desired_children(
    job: Job,
    plan: Plan,
    secret: ObservedSecret | None,
    keys: KeySource,
    cluster_domain: str,
    priorities: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """``priorities``: PriorityClass values by name, for the PodGroup's minResources."""
    children = [
        build_service(job),
        build_configmap(job, plan.running_workers, cluster_domain),
        build_ssh_secret(job, secret, keys),
    ]
    member = membership(plan.gang, job.name) if plan.gang is not None else None
    if plan.podgroup and plan.gang is not None:
        children.append(pod_group(plan.gang, gang_job(job, plan.launcher_pending), priorities or {}))
    if plan.workers and job.worker is not None:
        factory = WorkerFactory(job, job.worker, cluster_domain, member)
        children += [factory.build(i) for i in plan.workers]
    if plan.create_or_keep_launcher and job.launcher is not None:
        children.append(build_launcher(job, job.launcher, member))
    return children
