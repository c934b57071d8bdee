"""The observed children of one MPIJob, sorted once into a typed snapshot the plan reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from app.core.reasons import POD_EVICTED, REASON_DEADLINE_EXCEEDED
from app.kube import gang, names
from app.kube.gang import SCHEDULER_PLUGINS_API_VERSION, VOLCANO_API_VERSION, WORKLOAD_API_VERSIONS
from app.kube.pod_phase import PodPhase
from app.kube.request import (
    ObservedLauncherJob,
    ObservedPod,
    ObservedPodGroup,
    ObservedSecret,
    ObservedWorkloadPodGroup,
    PodCondition,
    PodGroupSpec,
    PodGroupStatus,
    SyncRequest,
)


class LauncherJobOutcome(StrEnum):
    """Where the launcher Job stands: its Complete or Failed condition, else running."""

    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class FailedPod:
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Exit:
    """How a Pod's container ended with a failure: what a user needs to act on it."""

    pod: str
    container: str
    code: int
    # The kubelet's reason: OOMKilled, Error, ContainerCannotRun, ...
    reason: str
    # The termination message; with FallbackToLogsOnError, the tail of the container's log.
    message: str


def failed_exit(pod: ObservedPod) -> Exit | None:
    """The first container of ``pod`` whose last run ended with a non-zero exit code."""
    if pod.status is None:
        return None
    for container in pod.status.container_statuses:
        ended = container.last_termination
        if ended is not None and ended.exitCode != 0:
            name = pod.metadata.name
            return Exit(name, container.name, ended.exitCode, ended.reason or "", ended.message or "")
    return None


@dataclass(frozen=True, slots=True)
class LauncherJobState:
    """The observed launcher Job, summarised for the status."""

    outcome: LauncherJobOutcome
    running_pods: int
    failed_pods: int
    completion_time: str | None = None
    failure_reason: str | None = None
    failure_message: str | None = None
    # The newest failed launcher Pod (customize hook), which explains a backoff failure.
    newest_failed_pod: FailedPod | None = None
    # How the newest launcher Pod's container last failed (customize hook), with its last words.
    last_exit: Exit | None = None

    @property
    def done(self) -> bool:
        return self.outcome != LauncherJobOutcome.RUNNING

    @property
    def ends_job(self) -> bool:
        """Done in a way no failure policy changes: succeeded, or past ``activeDeadlineSeconds`` (which
        bounds the whole job, not one attempt)."""
        return self.outcome == LauncherJobOutcome.SUCCEEDED or self.failure_reason == REASON_DEADLINE_EXCEEDED


@dataclass(frozen=True, slots=True)
class WorkerCounts:
    """Worker Pods by phase over upstream's worker list of this sync: workers ``0..listed-1``."""

    listed: int = 0
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    evicted: int = 0


@dataclass(frozen=True, slots=True)
class GangWait:
    """The gang scheduler's word that the job's gang waits: it places none of the Pods until all fit."""

    # The scheduler's reason: the Workload API's PodGroupScheduled reason, Volcano's Unschedulable
    # condition's, or (scheduler-plugins, whose PodGroup has none) the Pods' PodScheduled reason.
    reason: str
    # The scheduler's message (scheduler-plugins: the first worker it could not place, and why).
    message: str = ""
    phase: str = ""
    # scheduler-plugins: the workers whose PodScheduled is False with reason Unschedulable.
    unplaced: int = 0
    # Volcano: the queue the PodGroup waits in (its message does not name it).
    queue: str = ""


@dataclass(frozen=True)
class Observed:
    """What exists now. Workers are keyed by the index in their name (``<job>-worker-<i>``)."""

    launcher_job: ObservedLauncherJob | None = None
    workers: dict[int, ObservedPod] = field(default_factory=dict)
    secret: ObservedSecret | None = None
    # Launcher Pods reach us only through the customize hook (they are the Job's children, not ours).
    launcher_pods: list[ObservedPod] | None = None
    # The apiVersions in which the job's PodGroup ``<job>`` exists.
    podgroups: frozenset[str] = frozenset()
    # What each scheduler says of the job's PodGroup, by apiVersion (for those that have a status).
    podgroup_statuses: Mapping[str, PodGroupStatus] = field(default_factory=dict)
    # What Volcano's or scheduler-plugins' PodGroup of the job asks (minMember, queue), by apiVersion.
    podgroup_specs: Mapping[str, PodGroupSpec] = field(default_factory=dict)
    # The PodGroup apiVersions the CompositeController declares as children (Metacontroller manages them).
    podgroups_declared: frozenset[str] = frozenset()
    # PriorityClass values by name (customize hook, gang scheduling only): they rank a PodGroup's replicas.
    priorities: Mapping[str, int] = field(default_factory=dict)
    # Node labels by node name (customize hook, ordered hostfiles only): they order the hostfile.
    node_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # What the job's ConfigMap holds now (None: no ConfigMap yet).
    stored_config: Mapping[str, str] | None = None

    @property
    def stored_hostfile(self) -> str | None:
        return None if self.stored_config is None else self.stored_config.get(names.HOSTFILE_KEY, "")

    @cached_property
    def launcher_job_state(self) -> LauncherJobState | None:
        """The launcher Job, summarised once (None when it does not exist)."""
        return summarise_launcher_job(self.launcher_job, self.launcher_pods)

    def gang_wait(self, api_version: str) -> GangWait | None:
        """Whether the scheduler of ``api_version`` holds the job's gang, by what its PodGroup says (and,
        for scheduler-plugins, the workers): one reading for the hook and the doctor."""
        status = self.podgroup_statuses.get(api_version)
        if status is None:
            return None
        if api_version in WORKLOAD_API_VERSIONS:
            held = _workload_api_wait(status, gang.WORKLOAD_SCHEDULED_CONDITIONS[api_version])
            return held or _preempted([*self.workers.values(), *(self.launcher_pods or [])])
        if api_version == VOLCANO_API_VERSION:
            spec = self.podgroup_specs.get(api_version)
            return _volcano_wait(status, (spec.queue if spec is not None else None) or "")
        unplaced = [self.workers[i] for i in sorted(self.workers) if _unschedulable(self.workers[i])]
        return _coscheduler_wait(status, unplaced)

    def failed_worker_exits(self) -> list[Exit]:
        """How each failed worker's container ended, by index (for the Failed condition's message)."""
        pods = (self.workers[index] for index in sorted(self.workers))
        return [
            exit for pod in pods if pod.phase == PodPhase.FAILED and (exit := failed_exit(pod)) is not None
        ]


def count_workers(observed: Observed, listed: int) -> WorkerCounts:
    """The phases of upstream's worker list of this sync: workers ``0..listed-1``."""
    active = succeeded = failed = evicted = 0
    for index in range(listed):
        pod = observed.workers.get(index)
        phase = pod.phase if pod is not None else ""
        if phase == PodPhase.FAILED:
            failed += 1
            evicted += pod is not None and pod.status is not None and pod.status.reason == POD_EVICTED
        elif phase == PodPhase.SUCCEEDED:
            succeeded += 1
        elif phase == PodPhase.RUNNING:
            active += 1
    return WorkerCounts(listed, active, succeeded, failed, evicted)


def find_launcher_job(job_name: str, request: SyncRequest) -> ObservedLauncherJob | None:
    """The job's launcher Job among the observed children, if it exists."""
    name = names.launcher_name(job_name)
    jobs = (request.children.launcher_jobs or {}).values()
    return next((j for j in jobs if j.metadata.name == name), None)


def classify(job_name: str, request: SyncRequest) -> Observed:
    children = request.children
    launcher_job = find_launcher_job(job_name, request)
    secret_name = names.ssh_secret_name(job_name)
    secret = next((s for s in (children.secrets or {}).values() if s.metadata.name == secret_name), None)
    groups = _podgroups(job_name, request)
    prefix = names.worker_prefix(job_name)
    workers: dict[int, ObservedPod] = {}
    for pod in (children.pods or {}).values():
        index = _worker_index(pod.metadata.name, prefix)
        if index is not None:
            workers[index] = pod
    return Observed(
        launcher_job=launcher_job,
        workers=workers,
        secret=secret,
        launcher_pods=_launcher_pods(job_name, request) if request.controller.has_customize_hook else None,
        podgroups=frozenset(groups),
        podgroup_statuses={v: group.status for v, group in groups.items() if group.status is not None},
        podgroup_specs={v: spec for v, group in groups.items() if (spec := _spec(group)) is not None},
        podgroups_declared=request.controller.declared_podgroups,
        priorities=request.related.priority_values,
        node_labels={
            node.metadata.name: node.metadata.labels for node in (request.related.nodes or {}).values()
        },
        stored_config=_stored_config(job_name, request),
    )


def _stored_config(job_name: str, request: SyncRequest) -> Mapping[str, str] | None:
    name = names.config_name(job_name)
    stored = next((c for c in (request.children.configmaps or {}).values() if c.metadata.name == name), None)
    return None if stored is None else (stored.data or {})


def _podgroups(job_name: str, request: SyncRequest) -> dict[str, ObservedPodGroup | ObservedWorkloadPodGroup]:
    """The job's PodGroup in each apiVersion in which it exists."""
    name = names.podgroup_name(job_name)
    kinds: tuple[tuple[str, Mapping[str, ObservedPodGroup | ObservedWorkloadPodGroup] | None], ...] = (
        (VOLCANO_API_VERSION, request.children.volcano_podgroups),
        (SCHEDULER_PLUGINS_API_VERSION, request.children.scheduler_plugins_podgroups),
        *((v, request.children.workload_podgroups(v)) for v in WORKLOAD_API_VERSIONS),
    )
    found: dict[str, ObservedPodGroup | ObservedWorkloadPodGroup] = {}
    for api_version, observed in kinds:
        group = next((pg for pg in (observed or {}).values() if pg.metadata.name == name), None)
        if group is not None:
            found[api_version] = group
    return found


def _spec(group: ObservedPodGroup | ObservedWorkloadPodGroup) -> PodGroupSpec | None:
    """What Volcano's or scheduler-plugins' PodGroup asks (the Workload API's is not read back: its spec is
    what the hook wrote, ``freeze``)."""
    return group.spec if isinstance(group, ObservedPodGroup) else None


def _workload_api_wait(status: PodGroupStatus, condition: str) -> GangWait | None:
    scheduled = status.condition(condition)
    if scheduled is None or scheduled.status != "False":
        return None
    return GangWait(scheduled.reason or gang.POD_UNSCHEDULABLE, scheduled.message or "")


def _volcano_wait(status: PodGroupStatus, queue: str) -> GangWait | None:
    held = status.condition(gang.VOLCANO_UNSCHEDULABLE_CONDITION)
    if status.phase not in gang.VOLCANO_WAITING_PHASES or held is None or held.status != "True":
        return None
    return GangWait(
        held.reason or gang.POD_UNSCHEDULABLE, held.message or "", status.phase or "", queue=queue
    )


def _coscheduler_wait(status: PodGroupStatus, unplaced: list[ObservedPod]) -> GangWait | None:
    """The coscheduler's PodGroup has a phase only: why it refused the gang is what the first worker it
    could not place says (its PodScheduled message: the resource gap, the Permit timeout, ...)."""
    if status.phase not in gang.SCHEDULER_PLUGINS_WAITING_PHASES or not unplaced:
        return None
    first = unplaced[0]
    why = next((c.message for c in _pod_conditions(first) if c.type == "PodScheduled" and c.message), "")
    said = f"{first.metadata.name}: {why}" if why else ""
    return GangWait(gang.POD_UNSCHEDULABLE, said, status.phase or "", len(unplaced))


def _preempted(pods: list[ObservedPod]) -> GangWait | None:
    """The gang preempted by the scheduler (Kubernetes 1.37 preempts a ``disruptionMode: all`` group whole):
    its Pods carry DisruptionTarget=True, reason PreemptionByScheduler, while they terminate; the PodGroup
    stays initially scheduled, so this is the only word of it."""
    for pod in pods:
        for c in _pod_conditions(pod):
            if c.type == gang.DISRUPTION_TARGET and c.status == "True" and c.reason == gang.PREEMPTED:
                return GangWait(
                    gang.PREEMPTED, f"{pod.metadata.name}: {c.message or ''}", gang.PREEMPTED_PHASE
                )
    return None


def _pod_conditions(pod: ObservedPod) -> list[PodCondition]:
    return (pod.status.conditions if pod.status else None) or []


def _unschedulable(pod: ObservedPod) -> bool:
    return any(
        c.type == "PodScheduled" and c.status == "False" and c.reason == gang.POD_UNSCHEDULABLE
        for c in _pod_conditions(pod)
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


def summarise_launcher_job(
    launcher: ObservedLauncherJob | None, launcher_pods: list[ObservedPod] | None
) -> LauncherJobState | None:
    """The observed launcher Job, summarised (``launcher_pods``: from the customize hook, if any)."""
    if launcher is None:
        return None
    if launcher.condition("Complete") is not None:
        completion = launcher.status.completionTime if launcher.status else None
        return LauncherJobState(
            LauncherJobOutcome.SUCCEEDED, 0, launcher.failed_pods, completion_time=completion
        )
    if (failed := launcher.condition("Failed")) is not None:
        return LauncherJobState(
            LauncherJobOutcome.FAILED,
            0,
            launcher.failed_pods,
            failure_reason=failed.reason,
            failure_message=failed.message,
            newest_failed_pod=_newest_failed(launcher_pods or []),
            last_exit=_newest_exit(launcher_pods or []),
        )
    running = _running_launcher_pods(launcher, launcher_pods)
    return LauncherJobState(LauncherJobOutcome.RUNNING, running, launcher.failed_pods)


def _running_launcher_pods(launcher: ObservedLauncherJob, pods: list[ObservedPod] | None) -> int:
    """Running launcher Pods; without the customize hook, the Job's ``ready`` count stands in."""
    if pods is not None:
        return sum(1 for pod in pods if pod.phase == PodPhase.RUNNING)
    return (launcher.status.ready if launcher.status else None) or 0


def newest_failed_pod(pods: list[ObservedPod]) -> ObservedPod | None:
    """The launcher Pod created last among those that failed."""
    failed = [pod for pod in pods if pod.phase == PodPhase.FAILED]
    return max(failed, key=lambda pod: pod.metadata.creationTimestamp or "") if failed else None


def _newest_failed(pods: list[ObservedPod]) -> FailedPod | None:
    newest = newest_failed_pod(pods)
    if newest is None or newest.status is None:
        return None
    return FailedPod(newest.status.reason or "", newest.status.message or "")


def _newest_exit(pods: list[ObservedPod]) -> Exit | None:
    newest_first = sorted(pods, key=lambda pod: pod.metadata.creationTimestamp or "", reverse=True)
    return next((exit for pod in newest_first if (exit := failed_exit(pod)) is not None), None)
