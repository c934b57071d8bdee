"""The children one sync returns, rendered from the plan: every child that should exist, every time.

Metacontroller deletes whatever is left out, so omission is how workers and the launcher go away.
The order is the order Metacontroller creates them in: Service, ConfigMap, Secret, workers, launcher.
"""

from __future__ import annotations

from typing import Any

from app.api.defaults import Job
from app.children.configmap import build_configmap
from app.children.launcher import build_launcher
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.workers import WorkerFactory
from app.core.plan import Plan
from app.kube.keys import KeySource
from app.kube.request import ObservedSecret


def desired_children(
    job: Job, plan: Plan, secret: ObservedSecret | None, keys: KeySource, cluster_domain: str
) -> list[dict[str, Any]]:
    children = [
        build_service(job),
        build_configmap(job, plan.running_workers, cluster_domain),
        build_ssh_secret(job, secret, keys),
    ]
    if plan.workers and job.worker is not None:
        factory = WorkerFactory(job, job.worker, cluster_domain)
        children += [factory.build(i) for i in plan.workers]
    if plan.create_or_keep_launcher and job.launcher is not None:
        children.append(build_launcher(job, job.launcher))
    return children
