"""The children one sync returns, rendered from the plan: every child that should exist, every time.

Metacontroller deletes whatever is left out, so omission is how workers and the launcher go away.
The order is the order Metacontroller creates them in: Service, ConfigMap, Secret, (Workload,) PodGroup,
workers, launcher. The builders take what the plan decided: which workers, whether the launcher, the failure
policy's attempt and the PodGroup the Pods join.
"""

from __future__ import annotations

from typing import Any

from app.api.defaults import Job
from app.children.configmap import build_configmap
from app.children.podgroup import gang_job, pod_group
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.templates import PodTemplates
from app.children.workload import runtime_pod_group, workload
from app.core.observed import Observed
from app.core.plan import Plan
from app.kube.keys import KeySource


def desired_children(
    job: Job, plan: Plan, observed: Observed, templates: PodTemplates, keys: KeySource, cluster_domain: str
) -> list[dict[str, Any]]:
    """``templates``: the job's pod templates, built once with its verdict."""
    attempt, scheduler = plan.restarts.attempt, plan.gang.scheduler
    children: list[dict[str, Any]] = [
        build_service(job),
        build_configmap(
            job, plan.workers.running, cluster_domain, plan.hostfile_order.order, plan.hostfile_order.kept
        ),
        build_ssh_secret(job, observed.secret, keys),
    ]
    if plan.gang.podgroup and scheduler is not None:
        gang = gang_job(job, plan.launcher_job.pending)
        if scheduler.kubernetes:
            children += [
                workload(gang, scheduler.api_version),
                runtime_pod_group(gang, scheduler.api_version),
            ]
        else:
            children.append(pod_group(scheduler, gang, observed.priorities))
    workers = templates.worker_factory(attempt, scheduler) if plan.workers.indices else None
    if workers is not None:
        children += [workers.build(i) for i in plan.workers.indices]
    launcher = templates.launcher_job(attempt, scheduler) if plan.launcher_job.keep else None
    if launcher is not None:
        children.append(launcher)
    return children
