"""Upstream ``SetDefaults_MPIJob``, applied once: the parsed MPIJob becomes a ``Job`` with no default left.

Defaulting happens in memory on every sync and is never persisted, as upstream. Every field upstream
defaults is plain (not Optional) here, so no later step re-defaults or asserts. The pod templates are
shared with the parsed parent, never copied: builders decorate copies of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.api.types import (
    CleanPodPolicy,
    FailurePolicy,
    FailurePolicyRule,
    JobStatus,
    LauncherCreationPolicy,
    MPIImplementation,
    MPIJob,
    MPIJobSpec,
    ObjectMeta,
    ReplicaType,
    RestartPolicy,
    RunPolicy,
)

# Upstream's defaults, also the CRD's (tools/gen_crd.py): one spelling each.
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SLOTS_PER_WORKER = 1
DEFAULT_LAUNCHER_CREATION_POLICY = LauncherCreationPolicy.AT_STARTUP
DEFAULT_MPI_IMPLEMENTATION = MPIImplementation.OPENMPI
# Upstream's doc comment says "Running"; its code (and so ours) defaults to None.
DEFAULT_CLEAN_POD_POLICY = CleanPodPolicy.NONE
# Ours: a failure policy that says nothing restarts nothing (a counted restart over a limit of 0 fails).
DEFAULT_MAX_RESTARTS = 0
DEFAULT_RESTART_POLICY = {
    ReplicaType.LAUNCHER: RestartPolicy.ON_FAILURE,
    ReplicaType.WORKER: RestartPolicy.NEVER,
}


@dataclass(frozen=True, slots=True)
class Replica:
    """A Launcher or Worker replica spec with its defaults applied."""

    replicas: int
    restart_policy: str
    template: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Job:
    """An MPIJob as the hook reasons about it: defaulted, identity first, then the spec."""

    metadata: ObjectMeta
    status: JobStatus
    slots_per_worker: int
    run_launcher_as_worker: bool
    ssh_auth_mount_path: str
    launcher_creation_policy: str
    mpi_implementation: str
    clean_pod_policy: str
    run_policy: RunPolicy
    has_replica_specs: bool
    launcher_spec: Replica | None
    worker_spec: Replica | None
    # Ours: None without ``spec.failurePolicy`` (the job then behaves exactly as upstream's).
    failure_policy: FailurePolicy | None = None
    max_restarts: int = DEFAULT_MAX_RESTARTS

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def has_failure_policy(self) -> bool:
        """The one answer to "does this job have a failure policy?": without one it behaves as upstream's."""
        return self.failure_policy is not None

    @property
    def failure_rules(self) -> list[FailurePolicyRule]:
        """The failure policy's rules, in order (none without a policy)."""
        return (self.failure_policy.rules if self.failure_policy is not None else None) or []

    @property
    def worker_replicas(self) -> int:
        return self.worker_spec.replicas if self.worker_spec is not None else 0

    def replica(self, kind: ReplicaType) -> Replica | None:
        return self.launcher_spec if kind is ReplicaType.LAUNCHER else self.worker_spec


def gang_size(min_available: int | None, workers: int, *, launcher: bool = True) -> int:
    """Upstream's ``calculateMinAvailable`` (the PodGroup's minMember): ``schedulingPolicy.minAvailable``,
    else every Pod of the job, its workers and the launcher (``runLauncherAsWorker`` lists the launcher in
    the hostfile but adds no Pod). Ours (upstream #608): without the launcher (``launcher`` False: a
    ``WaitForWorkersReady`` launcher not created yet) the gang counts only the workers, never more. The
    one rule for the builders, lint and the doctor; ``gang_size(None, workers)`` is the job's Pod count."""
    pods = workers + 1 if launcher else workers
    if min_available is None:
        return pods
    return min_available if launcher else min(min_available, pods)


def with_defaults(job: MPIJob) -> Job:
    spec = job.spec
    return Job(
        metadata=job.metadata,
        status=job.status,
        slots_per_worker=DEFAULT_SLOTS_PER_WORKER if spec.slots_per_worker is None else spec.slots_per_worker,
        run_launcher_as_worker=bool(spec.run_launcher_as_worker),
        # An empty string is defaulted like an absent field (upstream tests for "").
        ssh_auth_mount_path=spec.ssh_auth_mount_path or DEFAULT_SSH_AUTH_MOUNT_PATH,
        launcher_creation_policy=spec.launcher_creation_policy or DEFAULT_LAUNCHER_CREATION_POLICY.value,
        mpi_implementation=spec.mpi_implementation or DEFAULT_MPI_IMPLEMENTATION.value,
        clean_pod_policy=(
            DEFAULT_CLEAN_POD_POLICY.value
            if spec.run_policy.clean_pod_policy is None
            else spec.run_policy.clean_pod_policy
        ),
        run_policy=spec.run_policy,
        has_replica_specs=spec.mpi_replica_specs is not None,
        launcher_spec=_replica(spec, ReplicaType.LAUNCHER, 1),
        # Upstream defaults Worker replicas to 0, which validation then rejects: a Worker must say how many.
        worker_spec=_replica(spec, ReplicaType.WORKER, 0),
        failure_policy=spec.failure_policy,
        max_restarts=_max_restarts(spec.failure_policy),
    )


def _max_restarts(policy: FailurePolicy | None) -> int:
    if policy is None or policy.max_restarts is None:
        return DEFAULT_MAX_RESTARTS
    return policy.max_restarts


def _replica(spec: MPIJobSpec, kind: ReplicaType, replicas: int) -> Replica | None:
    replica = spec.replica(kind)
    if replica is None:
        return None
    return Replica(
        replicas=replicas if replica.replicas is None else replica.replicas,
        restart_policy=replica.restart_policy or DEFAULT_RESTART_POLICY[kind].value,
        template=replica.template,
    )
