"""What a TrainJob on Trainer does differently from the MPIJob under the hook, said per field the job sets.

Only fields the job sets (or whose default matters) get a note, each with the reason: a note is what the
user must know before the job runs on Trainer, not a list of everything that is the same.
"""

from __future__ import annotations

from app.api.defaults import DEFAULT_SSH_AUTH_MOUNT_PATH, Job, gang_size
from app.api.hostfile_order_annotations import ORDER_ANNOTATION, asks_topology_order
from app.api.types import CleanPodPolicy, LauncherCreationPolicy, ReplicaType, RestartPolicy
from app.children import pods
from app.children.podgroup import gang_job, priority_class_name
from app.convert import trainer
from app.convert.trainer_failures import pod_criteria
from app.convert.trainer_runtime import UNUSED_TRAINER_KEY_PATH
from app.kube import names
from app.kube.gang import GangScheduler

_RUN_POLICY = "spec.runPolicy"
# Trainer lists hosts in the order of the replicated jobs; JobSet lists a job after the one it depends on.
LAUNCHER_LAST = (
    "hostfile: the launcher comes last, not first (its replicated job comes after the nodes'), so rank 0 runs"
    " on the first node, not on the launcher"
)


def derived_notes(job: Job, gang: GangScheduler | None) -> list[str]:
    """The notes of a conversion to a TrainingRuntime derived from the job."""
    notes = [*clean_pod_policy_notes(job), *deadline_notes(job)]
    notes += _gang_notes(job, gang) + _failure_notes(job) + renamed_container_notes(job)
    if job.ssh_auth_mount_path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        notes.append(
            f"sshAuthMountPath {DEFAULT_SSH_AUTH_MOUNT_PATH}: the runtime mounts the key there itself (mode"
            f" 0600, from Trainer's Secret {trainer.ssh_secret_name(job.name)}): Trainer mounts it with mode"
            f" 0640, which ssh refuses as root, so its own copy goes to {UNUSED_TRAINER_KEY_PATH}, unused"
        )
    waits = job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
    if waits and job.run_launcher_as_worker:
        notes.append(LAUNCHER_LAST)
    if names.LAUNCHER_WAIT_ANNOTATION in job.metadata.annotations:
        notes.append(
            f"metadata.annotations[{names.LAUNCHER_WAIT_ANNOTATION}]: the hook's; Trainer has no launcher"
            " wait (launcherCreationPolicy WaitForWorkersReady makes the launcher depend on Ready nodes)"
        )
    return notes


def order_notes(job: Job) -> list[str]:
    """Topology order is the hook's (``app.api.hostfile_order_annotations``): Trainer keeps index order."""
    if not asks_topology_order(job.metadata.annotations):
        return []
    return [
        f"metadata.annotations[{ORDER_ANNOTATION}] topology: the hook's; Trainer writes the hostfile in"
        " index order, not sorted by the nodes' labels"
    ]


def clean_pod_policy_notes(job: Job) -> list[str]:
    """JobSet deletes the Jobs still running once it finishes: what cleanPodPolicy Running does."""
    policy = job.clean_pod_policy
    if policy == CleanPodPolicy.RUNNING:
        return []
    if policy == CleanPodPolicy.ALL:
        return [
            f"{_RUN_POLICY}.cleanPodPolicy All: the JobSet deletes the node Pods still running when the job"
            " finishes; node Pods that ended by themselves stay until the JobSet is deleted"
        ]
    return [
        f"{_RUN_POLICY}.cleanPodPolicy {policy}: not carried: the JobSet deletes the node Pods still running"
        " when the job finishes (as Running does); a JobSet cannot keep them"
    ]


def deadline_notes(job: Job) -> list[str]:
    deadline = job.run_policy.active_deadline_seconds
    if deadline is None:
        return []
    notes = []
    if job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY:
        notes.append(
            f"{_RUN_POLICY}.activeDeadlineSeconds {deadline}: the TrainJob's counts from its start, the"
            " nodes' start-up included; the MPIJob's launcher Job counted from its creation, once the workers"
            " were Ready"
        )
    if job.has_failure_policy:
        notes.append(
            f"{_RUN_POLICY}.activeDeadlineSeconds {deadline}: a TrainJob past its deadline fails; the hook"
            " let spec.failurePolicy restart a launcher that exceeded it"
        )
    return notes


def workload_api_notes(job: Job) -> list[str]:
    """The hook's Workload API backend (``kubernetes``) has no counterpart in Trainer v2.3."""
    topology = job.metadata.annotations.get(names.GANG_TOPOLOGY_ANNOTATION)
    annotation = f"metadata.annotations[{names.GANG_TOPOLOGY_ANNOTATION}]"
    where = f"; {annotation} {topology!r} neither" if topology else ""
    return [
        "gang scheduling with the Workload API (--gang-scheduling kubernetes): not carried: Trainer v2.3's"
        f" podGroupPolicy has no Workload policy, only Volcano and the coscheduler{where}; the runtime"
        " schedules its Pods one by one"
    ]


def _gang_notes(job: Job, gang: GangScheduler | None) -> list[str]:
    policy = job.run_policy.scheduling_policy
    if gang is None:
        if policy is None:
            return []
        return [
            f"{_RUN_POLICY}.schedulingPolicy: not carried: which gang scheduler ran the job is the hook's"
            " setting, not the job's; give --gang-scheduling volcano (or the coscheduler's scheduler name)"
            " to carry it as the runtime's podGroupPolicy"
        ]
    notes = []
    pods_total = gang_size(None, job.worker_replicas)
    if policy is not None and policy.min_available is not None and policy.min_available != pods_total:
        notes.append(
            f"{_RUN_POLICY}.schedulingPolicy.minAvailable {policy.min_available}: not carried: Trainer's"
            f" PodGroup always counts every Pod ({pods_total})"
        )
    if policy is not None and policy.min_resources is not None:
        notes.append(
            f"{_RUN_POLICY}.schedulingPolicy.minResources: not carried: Trainer's PodGroup sums the Pods'"
            " requests"
        )
    if gang.volcano:
        notes += _volcano_priority_notes(job)
    return notes


def _volcano_priority_notes(job: Job) -> list[str]:
    """Trainer's Volcano PodGroup takes the priorityClassName of the last replicated job that has one."""
    wanted = priority_class_name(gang_job(job))
    waits = job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
    order = (job.worker_spec, job.launcher_spec) if waits else (job.launcher_spec, job.worker_spec)
    got = ""
    for replica in order:
        name = ((replica.template.get("spec") or {}) if replica is not None else {}).get("priorityClassName")
        got = name if isinstance(name, str) and name else got
    if got == wanted:
        return []
    return [
        f"Volcano PodGroup priorityClassName: {got or 'none'} on Trainer (the Pods' own), {wanted} under the"
        " hook (schedulingPolicy.priorityClass, else the launcher's): give the Pods the class you mean"
    ]


def _failure_notes(job: Job) -> list[str]:
    if not job.has_failure_policy:
        return []
    notes = [
        "spec.failurePolicy: a restart is JobSet's: every Pod sees its attempt in MPIJOB_RESTART_ATTEMPT"
        f" (from the Pod label {trainer.JOBSET_RESTART_ATTEMPT_LABEL}); the label"
        f" {names.RESTART_ATTEMPT_LABEL} and the Restarting condition's reasons are the hook's"
    ]
    assert job.worker_spec is not None and job.launcher_spec is not None  # validated
    if pods.restart_policy(job.worker_spec.restart_policy) == RestartPolicy.ON_FAILURE:
        notes.append(
            "spec.failurePolicy with Worker restartPolicy OnFailure: a node Pod that fails (evicted) is"
            " replaced alone; the hook restarted the gang"
        )
    backoff = job.run_policy.backoff_limit
    launcher_rules = [
        r
        for r in job.failure_rules
        if pod_criteria(r) is not None and (not r.replica_types or ReplicaType.LAUNCHER in r.replica_types)
    ]
    if (
        launcher_rules
        and backoff != 0
        and pods.restart_policy(job.launcher_spec.restart_policy) == RestartPolicy.NEVER
    ):
        notes.append(
            "spec.failurePolicy: Kubernetes matches the Launcher rules against each failed launcher Pod; the"
            f" hook matched the last one, after runPolicy.backoffLimit ({backoff or 'default 6'}) retries"
        )
    return notes


def renamed_container_notes(job: Job) -> list[str]:
    renamed = []
    for kind in (ReplicaType.LAUNCHER, ReplicaType.WORKER):
        replica = job.replica(kind)
        containers = ((replica.template.get("spec") or {}) if replica is not None else {}).get("containers")
        name = containers[0].get("name") if containers else None
        if name != trainer.MPI_CONTAINER:
            renamed.append(f"{kind.value} {name!r}")
    if not renamed:
        return []
    return [
        f"containers: {' and '.join(renamed)} are named {trainer.MPI_CONTAINER!r} (Trainer mounts the SSH key"
        f" and hostfile into containers of that name only): kubectl logs -c {trainer.MPI_CONTAINER}"
    ]
