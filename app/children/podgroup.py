"""The PodGroup ``<job>`` that gang-schedules an MPIJob, and the Pod decoration that joins it.

Upstream's ``--gang-scheduling`` picks a PodGroup kind: Volcano's or the scheduler-plugins coscheduler's
(``app.kube.gang``); the Workload API's children are built in ``app.children.workload``. The builders
here are pure and take plain values (``GangJob``) and the observed
PriorityClass values, so the core decides only *whether* a PodGroup exists, never what is in it. Two
deliberate fixes to upstream (docs/compatibility.md):

* While a ``WaitForWorkersReady`` launcher does not exist yet, the group counts only the workers
  (upstream #608: a group waiting for a launcher that waits for the group never starts).
* When the workers have a higher priority than the launcher and the gang is smaller than the job, the
  workers fill the gang first; upstream gives the launcher ``minMember - 1`` replicas and keeps every worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from app.api.defaults import Job, Replica, gang_size
from app.api.types import SchedulingPolicy
from app.kube import names
from app.kube.gang import KIND, GangScheduler
from app.kube.quantity import canonical_quantity, format_quantity, parse_quantity

# Volcano: the job annotation naming the queue, and the Pod annotation naming the group.
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
# scheduler-plugins: the Pod label naming the group.
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# The Workload API (Kubernetes 1.36): the Pod spec field naming the group.
POD_SCHEDULING_GROUP = "schedulingGroup"


@dataclass(frozen=True, slots=True)
class GangJob:
    """What a PodGroup is computed from: the job's identity, schedulingPolicy and replica specs."""

    name: str
    namespace: str
    policy: SchedulingPolicy | None
    launcher_spec: Replica | None
    worker_spec: Replica | None
    annotations: Mapping[str, str] = field(default_factory=dict)
    # WaitForWorkersReady and the launcher Job is neither observed nor created in this response.
    launcher_pending: bool = False


def gang_job(job: Job, launcher_pending: bool = False) -> GangJob:
    return GangJob(
        name=job.name,
        namespace=job.namespace,
        policy=job.run_policy.scheduling_policy,
        launcher_spec=job.launcher_spec,
        worker_spec=job.worker_spec,
        annotations=job.metadata.annotations,
        launcher_pending=launcher_pending,
    )


def min_member(job: GangJob) -> int:
    """``schedulingPolicy.minAvailable``, else workers + 1; never a launcher that does not exist yet
    (``defaults.gang_size``)."""
    workers = job.worker_spec.replicas if job.worker_spec is not None else 0
    explicit = job.policy.min_available if job.policy is not None else None
    return gang_size(explicit, workers, launcher=not job.launcher_pending)


def min_count(job: GangJob) -> int:
    """The Workload API's minCount: ``min_member``, at least 1 (the API's validation; a gang of one is no
    gang, as with the others)."""
    return max(min_member(job), 1)


def priority_class_name(job: GangJob) -> str:
    """Volcano's group priority: schedulingPolicy, else the launcher's, else the workers' PriorityClass."""
    if job.policy is not None and job.policy.priority_class:
        return job.policy.priority_class
    for replica in (job.launcher_spec, job.worker_spec):
        name = _pod_spec(replica).get("priorityClassName") if replica is not None else None
        if isinstance(name, str) and name:
            return name
    return ""


def volcano_queue(job: GangJob) -> str:
    if job.policy is not None and job.policy.queue:
        return job.policy.queue
    return job.annotations.get(VOLCANO_QUEUE_ANNOTATION, "")


def min_resources(job: GangJob, members: int, priorities: Mapping[str, int]) -> dict[str, str] | None:
    """The gang's resources: explicit ones, else the requests of its first ``members`` Pods by priority.

    Per container and resource the request counts, else the limit (the scheduler's view of a Pod that only
    sets limits). ``priorities`` maps PriorityClass names to values; an unknown class counts as 0.
    """
    if job.policy is not None and job.policy.min_resources is not None:
        return _canonical(job.policy.min_resources)
    if members == 0:
        return None
    total: dict[str, tuple[Decimal, str]] = {}
    for replica, count in _gang_counts(job, members, priorities):
        for container in _pod_spec(replica).get("containers") or []:
            if isinstance(container, dict):
                _add(total, container.get("resources"), count)
    return {resource: format_quantity(*amount) for resource, amount in total.items()}


def _gang_counts(job: GangJob, members: int, priorities: Mapping[str, int]) -> list[tuple[Replica, int]]:
    """How many Pods of each replica type are in the gang: higher priority first, Launcher first on a tie."""
    ranked: list[tuple[int, int, Replica]] = []
    if job.launcher_spec is not None and not job.launcher_pending:
        ranked.append((_priority(job.launcher_spec, priorities), 0, job.launcher_spec))
    if job.worker_spec is not None:
        ranked.append((_priority(job.worker_spec, priorities), 1, job.worker_spec))
    ranked.sort(key=lambda entry: (-entry[0], entry[1]))
    counts, left = [], members
    for _, _, replica in ranked:
        count = min(replica.replicas, max(left, 0))
        counts.append((replica, count))
        left -= count
    return counts


def _priority(replica: Replica, priorities: Mapping[str, int]) -> int:
    name = _pod_spec(replica).get("priorityClassName")
    return priorities.get(name, 0) if isinstance(name, str) and name else 0


def _add(total: dict[str, tuple[Decimal, str]], resources: Any, count: int) -> None:
    """Add ``count`` times a container's requests (limits where no request) to ``total``, as upstream."""
    if not isinstance(resources, dict):
        return
    merged: dict[str, Any] = {}
    for key in ("limits", "requests"):  # a request wins over the limit of the same resource
        if isinstance(resources.get(key), dict):
            merged.update(resources[key])
    for resource, value in merged.items():
        parsed = parse_quantity(value) if isinstance(value, int | float | str) else None
        if parsed is None:
            continue  # the apiserver rejects such a Pod; it cannot count towards the gang either
        amount, form = parsed
        if resource in total:
            so_far, so_far_form = total[resource]
            # resource.Quantity.Add keeps the first addend's format unless that one is zero.
            total[resource] = (so_far + amount * count, so_far_form if so_far != 0 else form)
        else:
            total[resource] = (amount * count, form)


def _canonical(resources: Mapping[str, Any]) -> dict[str, str]:
    return {name: canonical_quantity(value) for name, value in resources.items()}


def _pod_spec(replica: Replica | None) -> dict[str, Any]:
    spec = (replica.template.get("spec") if replica is not None else None) or {}
    return spec if isinstance(spec, dict) else {}


def pod_group(scheduler: GangScheduler, job: GangJob, priorities: Mapping[str, int]) -> dict[str, Any]:
    """The PodGroup child for ``scheduler``; Metacontroller adds the ownerReference."""
    members = min_member(job)
    resources = min_resources(job, members, priorities)
    spec: dict[str, Any] = {}
    # Zero and empty fields are left out, as Go's omitempty does: scheduler-plugins requires minMember >= 1
    # and Volcano's queue pattern rejects "", and an empty map would be a write on every sync.
    if members:
        spec["minMember"] = members
    if scheduler.volcano:
        if queue := volcano_queue(job):
            spec["queue"] = queue
        if priority := priority_class_name(job):
            spec["priorityClassName"] = priority
    else:
        timeout = job.policy.schedule_timeout_seconds if job.policy is not None else None
        spec["scheduleTimeoutSeconds"] = timeout if timeout is not None else 0
    if resources:
        spec["minResources"] = resources
    metadata = {"name": names.podgroup_name(job.name), "namespace": job.namespace}
    return {"apiVersion": scheduler.api_version, "kind": KIND, "metadata": metadata, "spec": spec}


@dataclass(frozen=True, slots=True)
class Membership:
    """What joins a Pod (the launcher's template, every worker) to the job's PodGroup."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    # Pod spec fields set over the user's: the gang scheduler's schedulerName, or the Workload API's group.
    spec: Mapping[str, Any]


def membership(scheduler: GangScheduler, job_name: str) -> Membership:
    group = names.podgroup_name(job_name)
    if scheduler.kubernetes:
        # The default scheduler (or the user's own) reads spec.schedulingGroup; schedulerName is left alone.
        return Membership({}, {}, {POD_SCHEDULING_GROUP: {"podGroupName": group}})
    scheduler_name = {"schedulerName": scheduler.scheduler_name}
    if scheduler.volcano:
        return Membership({}, {VOLCANO_GROUP_ANNOTATION: group}, scheduler_name)
    return Membership({SCHEDULER_PLUGINS_GROUP_LABEL: group}, {}, scheduler_name)


def decorate(
    membership: Membership, labels: Mapping[str, str], annotations: Mapping[str, str], spec: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    """New labels, annotations and pod spec with the group's; a user's schedulerName (or schedulingGroup)
    is overridden."""
    return (
        {**labels, **membership.labels},
        {**annotations, **membership.annotations},
        {**spec, **membership.spec},
    )
