"""In-memory defaulting, as upstream ``SetDefaults_MPIJob``: applied on every sync, never persisted.

Returns a new model; the parsed parent is left untouched so the caller can still tell what the user wrote.
"""

from __future__ import annotations

from app.api.types import (
    CleanPodPolicy,
    LauncherCreationPolicy,
    MPIImplementation,
    MPIJob,
    ReplicaType,
    RestartPolicy,
)

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"


def with_defaults(job: MPIJob) -> MPIJob:
    job = job.model_copy(deep=True)
    spec = job.spec
    if spec.slots_per_worker is None:
        spec.slots_per_worker = 1
    if not spec.ssh_auth_mount_path:
        spec.ssh_auth_mount_path = DEFAULT_SSH_AUTH_MOUNT_PATH
    if not spec.launcher_creation_policy:
        spec.launcher_creation_policy = LauncherCreationPolicy.AT_STARTUP.value
    if not spec.mpi_implementation:
        spec.mpi_implementation = MPIImplementation.OPENMPI.value
    # Upstream's doc comment says "Running"; its code (and so ours) defaults to None.
    if spec.run_policy.clean_pod_policy is None:
        spec.run_policy.clean_pod_policy = CleanPodPolicy.NONE.value
    launcher = spec.replica(ReplicaType.LAUNCHER)
    if launcher is not None:
        if launcher.replicas is None:
            launcher.replicas = 1
        if not launcher.restart_policy:
            launcher.restart_policy = RestartPolicy.ON_FAILURE.value
    worker = spec.replica(ReplicaType.WORKER)
    if worker is not None:
        # Upstream defaults to 0, which validation then rejects: a Worker must say how many.
        if worker.replicas is None:
            worker.replicas = 0
        if not worker.restart_policy:
            worker.restart_policy = RestartPolicy.NEVER.value
    return job
