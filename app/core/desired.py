"""The children one sync returns, rendered from the plan: every child that should exist, every time.

Metacontroller deletes whatever is left out, so omission is how workers and the launcher go away.
The order is the order Metacontroller creates them in: Service, ConfigMap, Secret, PodGroup, workers,
launcher. With gang scheduling, the launcher and the workers are decorated to join the PodGroup.
"""

from __future__ import annotations

from typing import Any

from app.api.defaults import Job
from app.children.configmap import build_configmap
from app.children.podgroup import gang_job, pod_group
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.templates import PodTemplates, pod_templates
from app.core.observed import Observed
from app.core.plan import Plan
from app.kube.keys import KeySource


def desired_children(
    job: Job, plan: Plan, observed: Observed, templates: PodTemplates, keys: KeySource, cluster_domain: str
) -> list[dict[str, Any]]:
    """``templates``: the job's pod templates, built with its verdict for the configured gang scheduler."""
    if templates.gang != plan.gang:
        # Gang scheduling is configured but its PodGroup child is not declared: Pods join no group.
        templates = pod_templates(job, cluster_domain, plan.gang)
    children: list[dict[str, Any]] = [
        build_service(job),
        build_configmap(job, plan.running_worker_names, cluster_domain),
        build_ssh_secret(job, observed.secret, keys),
    ]
    if plan.return_podgroup and plan.gang is not None:
        children.append(pod_group(plan.gang, gang_job(job, plan.launcher_pending), observed.priorities))
    if plan.worker_indices and templates.workers is not None:
        children += [templates.workers.build(i) for i in plan.worker_indices]
    if plan.keep_launcher and templates.launcher is not None:
        children.append(dict(templates.launcher))
    return children
