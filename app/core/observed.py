"""The observed children of one MPIJob, sorted once into a typed snapshot the policies read."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.core import names
from app.core.request import ObservedJob, ObservedPod, ObservedSecret, SyncRequest


@dataclass(frozen=True)
class Observed:
    """What exists now. Workers are keyed by the index in their name (``<job>-worker-<i>``)."""

    launcher: ObservedJob | None = None
    workers: dict[int, ObservedPod] = field(default_factory=dict)
    secret: ObservedSecret | None = None
    has_service: bool = False
    has_configmap: bool = False
    # Launcher Pods reach us only through the customize hook (they are the Job's children, not ours).
    launcher_pods: list[ObservedPod] | None = None


def classify(job_name: str, request: SyncRequest) -> Observed:
    children = request.children
    launcher_name = names.launcher_name(job_name)
    launcher = next((j for j in (children.jobs or {}).values() if j.metadata.name == launcher_name), None)
    secret_name = names.ssh_secret_name(job_name)
    secret = next((s for s in (children.secrets or {}).values() if s.metadata.name == secret_name), None)
    prefix = names.worker_prefix(job_name)
    workers: dict[int, ObservedPod] = {}
    for pod in (children.pods or {}).values():
        index = _worker_index(pod.metadata.name, prefix)
        if index is not None:
            workers[index] = pod
    launcher_pods = None
    if request.controller.has_customize_hook:
        launcher_pods = [
            p
            for p in (request.related.pods or {}).values()
            if (p.metadata.labels or {}).get(names.JOB_NAME_LABEL) == job_name
            and (p.metadata.labels or {}).get(names.JOB_ROLE_LABEL) == names.LAUNCHER
        ]
    return Observed(
        launcher=launcher,
        workers=workers,
        secret=secret,
        has_service=any(s.metadata.name == job_name for s in (children.services or {}).values()),
        has_configmap=any(
            c.metadata.name == names.config_name(job_name) for c in (children.configmaps or {}).values()
        ),
        launcher_pods=launcher_pods,
    )


def _worker_index(name: str, prefix: str) -> int | None:
    suffix = name.removeprefix(prefix)
    if suffix == name or not suffix.isdigit() or (len(suffix) > 1 and suffix[0] == "0"):
        return None
    return int(suffix)
