"""The observed children of one MPIJob, sorted once into a typed snapshot the plan reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.kube import names
from app.kube.gang import SCHEDULER_PLUGINS_API_VERSION, VOLCANO_API_VERSION
from app.kube.request import ObservedJob, ObservedPod, ObservedSecret, SyncRequest


@dataclass(frozen=True)
class Observed:
    """What exists now. Workers are keyed by the index in their name (``<job>-worker-<i>``)."""

    launcher: ObservedJob | None = None
    workers: dict[int, ObservedPod] = field(default_factory=dict)
    secret: ObservedSecret | None = None
    # Launcher Pods reach us only through the customize hook (they are the Job's children, not ours).
    launcher_pods: list[ObservedPod] | None = None
    # The apiVersions in which the job's PodGroup ``<job>`` exists.
    podgroups: frozenset[str] = frozenset()


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
    return Observed(
        launcher=launcher,
        workers=workers,
        secret=secret,
        launcher_pods=_launcher_pods(job_name, request) if request.controller.has_customize_hook else None,
        podgroups=_podgroups(job_name, request),
    )


def _podgroups(job_name: str, request: SyncRequest) -> frozenset[str]:
    name = names.podgroup_name(job_name)
    kinds = (
        (VOLCANO_API_VERSION, request.children.volcano_podgroups),
        (SCHEDULER_PLUGINS_API_VERSION, request.children.scheduler_plugins_podgroups),
    )
    return frozenset(
        api_version
        for api_version, observed in kinds
        if any(pg.metadata.name == name for pg in (observed or {}).values())
    )


def _launcher_pods(job_name: str, request: SyncRequest) -> list[ObservedPod]:
    return [
        pod for pod in (request.related.pods or {}).values() if _is_launcher_of(pod.metadata.labels, job_name)
    ]


def _is_launcher_of(labels: dict[str, str], job_name: str) -> bool:
    return labels.get(names.JOB_NAME_LABEL) == job_name and labels.get(names.JOB_ROLE_LABEL) == names.LAUNCHER


# No worker index has more digits than MAX_WORKERS; a longer one is not a worker of ours.
_MAX_INDEX_DIGITS = 10


def _worker_index(name: str, prefix: str) -> int | None:
    """The index of ``<job>-worker-<i>``; ASCII digits only (``str.isdigit`` also accepts ``²``)."""
    suffix = name.removeprefix(prefix)
    if (
        suffix == name
        or not suffix.isascii()
        or not suffix.isdigit()
        or len(suffix) > _MAX_INDEX_DIGITS
        or (len(suffix) > 1 and suffix[0] == "0")
    ):
        return None
    return int(suffix)
