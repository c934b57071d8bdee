"""The TrainingRuntime that runs one MPIJob unchanged on Kubeflow Trainer: the job's own pod templates.

A JobSet template with the replicated jobs ``launcher`` (marked as the trainer step) and ``node``, each the
MPIJob's Launcher or Worker template decorated as the hook decorates it (``app.children``), minus what
Trainer itself adds (the SSH key and hostfile mounts and the four ``OMPI_MCA_*`` variables, with the same
values). Where Trainer would do something else, the template says what the hook does:

* the MPI container (each template's first) is renamed ``node``: Trainer gives the SSH key, the hostfile
  and the OpenMPI env to containers of that name only;
* a key at ``/root/.ssh`` is mounted from Trainer's Secret with mode 0600 by the template itself, because
  Trainer's own mount (mode 0640) is refused by ssh for root; Trainer's mount goes to a path nobody reads;
* a worker that dies fails the job, as it ends the MPIJob's ``mpirun``, instead of being replaced
  (``backoffLimit: 0`` on the node Job; with ``restartPolicy: OnFailure`` the kubelet restarts it in place
  without limit, as for the MPIJob's bare Pod);
* the JobSet succeeds when the launcher does, and then deletes the nodes still running;
* a launcher created at start-up waits, as the hook's, until every node answers ssh (``wait-for-workers``,
  app.children.launcher_wait) before ``mpirun``. Without it Trainer's launcher meets nodes still starting
  and fails until they answer: on the real node examples/pi restarted twice (a ``backoffLimit`` of 1 fails
  the job) and began ``mpirun`` 13 s later than under the hook. Trainer mounts its hostfile and key into the
  ``node`` container only; the wait mounts the same volumes, by the names Trainer gives them.
"""

from __future__ import annotations

import copy
from typing import Any

from app.api.defaults import DEFAULT_SSH_AUTH_MOUNT_PATH, Job, Replica
from app.api.limits import INT32_MAX
from app.api.types import LauncherCreationPolicy, RestartPolicy
from app.children import pods
from app.children.launcher_job import launcher_env
from app.children.launcher_wait import with_wait_for_workers
from app.children.podgroup import VOLCANO_QUEUE_ANNOTATION, gang_job, volcano_queue
from app.children.workers import DEFAULT_WORKER_COMMAND
from app.convert import trainer
from app.convert.conversion import ConvertError
from app.convert.trainer_failures import FailureMapping
from app.kube import names
from app.kube.gang import GangScheduler

# Where Trainer mounts its copy of the key when the job's key is at /root/.ssh (see the module docstring).
UNUSED_TRAINER_KEY_PATH = "/etc/trainer/mpi-ssh"
_DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"


def trainer_ssh_mount_path(job: Job) -> str:
    """mlPolicy.mpi.sshAuthMountPath: the job's own, unless the template mounts the key itself."""
    path = job.ssh_auth_mount_path
    return UNUSED_TRAINER_KEY_PATH if path == DEFAULT_SSH_AUTH_MOUNT_PATH else path


def derived_runtime(job: Job, gang: GangScheduler | None, failures: FailureMapping) -> dict[str, Any]:
    waits = job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
    launcher = _replicated_job(trainer.LAUNCHER_JOB, _launcher_job(job, gang, failures), trainer_step=True)
    node = _replicated_job(trainer.NODE_JOB, _node_job(job, gang, failures))
    if waits:  # JobSet lets a replicated job depend only on one listed before it
        launcher["dependsOn"] = [{"name": trainer.NODE_JOB, "status": "Ready"}]
    jobset: dict[str, Any] = {
        # As Trainer's own MPI runtimes: the launcher resolves every node (and itself) before they are Ready.
        "network": {"publishNotReadyAddresses": True},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": [trainer.LAUNCHER_JOB]},
        "replicatedJobs": [node, launcher] if waits else [launcher, node],
    }
    if failures.jobset is not None:
        jobset["failurePolicy"] = failures.jobset
    if job.run_policy.ttl_seconds_after_finished is not None:
        jobset["ttlSecondsAfterFinished"] = job.run_policy.ttl_seconds_after_finished
    spec: dict[str, Any] = {"mlPolicy": _ml_policy(job)}
    template: dict[str, Any] = {"spec": jobset}
    if gang is not None:
        spec["podGroupPolicy"] = _pod_group_policy(job, gang)
        queue = volcano_queue(gang_job(job)) if gang.volcano else ""
        if queue:  # Trainer's Volcano plugin reads the queue from the JobSet template's annotations
            template["metadata"] = {"annotations": {VOLCANO_QUEUE_ANNOTATION: queue}}
    spec["template"] = template
    metadata = {k: v for k, v in (("name", job.name), ("namespace", job.namespace)) if v}
    return {"apiVersion": trainer.API_VERSION, "kind": trainer.TRAINING_RUNTIME, "metadata": metadata,
            "spec": spec}  # fmt: skip


def _ml_policy(job: Job) -> dict[str, Any]:
    mpi = {
        "numProcPerNode": job.slots_per_worker,
        "mpiImplementation": job.mpi_implementation,
        "sshAuthMountPath": trainer_ssh_mount_path(job),
        "runLauncherAsNode": job.run_launcher_as_worker,
    }
    return {"numNodes": trainer.RUNTIME_NUM_NODES, "mpi": mpi}


def _pod_group_policy(job: Job, gang: GangScheduler) -> dict[str, Any]:
    if gang.volcano:
        return {"volcano": {}}
    policy = job.run_policy.scheduling_policy
    timeout = policy.schedule_timeout_seconds if policy is not None else None
    return {"coscheduling": {} if timeout is None else {"scheduleTimeoutSeconds": timeout}}


def _replicated_job(name: str, job_spec: dict[str, Any], trainer_step: bool = False) -> dict[str, Any]:
    # replicas 1: the TrainingRuntime webhook requires it of the trainer step; one Job per replicated job.
    template: dict[str, Any] = {"spec": job_spec}
    if trainer_step:
        template = {"metadata": {"labels": {trainer.ANCESTOR_LABEL: trainer.ANCESTOR_TRAINER}}, **template}
    return {"name": name, "replicas": 1, "template": template}


def _launcher_job(job: Job, gang: GangScheduler | None, failures: FailureMapping) -> dict[str, Any]:
    assert job.launcher_spec is not None  # validated
    env = [e for e in launcher_env(job) if e["name"] not in trainer.RESERVED_ENV]
    spec: dict[str, Any] = {}
    if job.run_policy.backoff_limit is not None:
        spec["backoffLimit"] = job.run_policy.backoff_limit
    # As the hook's launcher Job: a new launcher Pod only once the old one is gone, never two mpiruns.
    spec["podReplacementPolicy"] = "Failed"
    _add_pod_failure_policy(spec, failures, trainer.LAUNCHER_JOB)
    template = pod_template(job, job.launcher_spec, env, None, gang)
    if job.launcher_creation_policy != LauncherCreationPolicy.WAIT_FOR_WORKERS_READY:
        template = {**template, "spec": _with_wait_for_workers(template["spec"], job)}
    spec["template"] = template
    return spec


def _with_wait_for_workers(spec: dict[str, Any], job: Job) -> dict[str, Any]:
    """The hook's wait (see the module docstring), reading the hostfile and SSH key from the volumes Trainer
    adds to the Pod (at /root/.ssh: the template's own key); not ordered, Trainer's hostfile is in index
    order. By volume name, not by the TrainJob's objects: the runtime runs any TrainJob that names it."""
    self_host = trainer.launcher_host(job.name) if job.run_launcher_as_worker else "-"
    waits = with_wait_for_workers(spec, job, self_host=self_host, ordered=False)
    if len(waits.get("initContainers") or []) == len(spec.get("initContainers") or []):
        return spec  # not added: turned off by the job's annotation (0), or a container of that name
    *init, wait = waits["initContainers"]
    mounts = [{"name": trainer.HOSTFILE_VOLUME, "mountPath": names.CONFIG_MOUNT_PATH}]
    if job.ssh_auth_mount_path != DEFAULT_SSH_AUTH_MOUNT_PATH:
        mounts.append({"name": trainer.SSH_AUTH_VOLUME, "mountPath": job.ssh_auth_mount_path})
    # A copy: the wait shares the launcher's values, which YAML would write as anchors and aliases.
    wait = copy.deepcopy({**wait, "volumeMounts": [*(wait.get("volumeMounts") or []), *mounts]})
    return {**waits, "initContainers": [*init, wait]}


def _node_job(job: Job, gang: GangScheduler | None, failures: FailureMapping) -> dict[str, Any]:
    assert job.worker_spec is not None  # validated
    env = [{"name": "K_MPI_JOB_ROLE", "value": names.WORKER}]
    in_place = pods.restart_policy(job.worker_spec.restart_policy) == RestartPolicy.ON_FAILURE
    spec: dict[str, Any] = {"backoffLimit": INT32_MAX if in_place else 0}
    _add_pod_failure_policy(spec, failures, trainer.NODE_JOB)
    spec["template"] = pod_template(job, job.worker_spec, env, DEFAULT_WORKER_COMMAND, gang)
    return spec


def _add_pod_failure_policy(spec: dict[str, Any], failures: FailureMapping, job_name: str) -> None:
    rules = failures.pod_rules.get(job_name)
    if rules:
        spec["podFailurePolicy"] = {"rules": rules}


def pod_template(
    job: Job,
    replica: Replica,
    env: list[dict[str, Any]],
    default_command: list[str] | None,
    gang: GangScheduler | None,
) -> dict[str, Any]:
    """One replica's pod template as Trainer should run it (see the module docstring)."""
    template = base_pod_template(job, replica, default_command)
    spec = pods.decorate_first_container(template["spec"], env=env, mounts=_key_mounts(job))
    if job.ssh_auth_mount_path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        secret = trainer.ssh_secret_name(job.name)
        spec = pods.with_volumes(spec, [pods.ssh_volume(job.name, job.ssh_auth_mount_path, secret)])
    if job.has_failure_policy:
        spec = with_restart_attempt_env(spec)
    if gang is not None:
        spec["schedulerName"] = gang.scheduler_name
    return {**template, "spec": _without_empty_lists(spec)}


def base_pod_template(job: Job, replica: Replica, default_command: list[str] | None) -> dict[str, Any]:
    """The replica's template with what every Trainer runtime must have to run it as the hook does: the MPI
    container named ``node`` (and sshd by default on workers), the replica's restartPolicy, and an fsGroup
    through which a non-root user reads the key."""
    labels, annotations = pods.template_metadata(replica.template)
    spec, annotations = with_node_container(pods.base_spec(copy.deepcopy(replica.template)), annotations)
    spec["restartPolicy"] = pods.restart_policy(replica.restart_policy)
    spec = pods.decorate_first_container(spec, env=[], mounts=[], default_command=default_command)
    spec = _without_empty_lists(pods.with_ssh_fs_group(spec, job.ssh_auth_mount_path))
    metadata = {k: v for k, v in (("labels", labels), ("annotations", annotations)) if v}
    return {"metadata": metadata, "spec": spec} if metadata else {"spec": spec}


def _key_mounts(job: Job) -> list[dict[str, str]]:
    if job.ssh_auth_mount_path != DEFAULT_SSH_AUTH_MOUNT_PATH:
        return []  # Trainer mounts its Secret there
    return [{"name": names.SSH_AUTH_VOLUME, "mountPath": job.ssh_auth_mount_path}]


def with_node_container(
    spec: dict[str, Any], annotations: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The first container renamed ``node``, and every reference to its old name with it."""
    containers = list(spec.get("containers") or [])
    old = str(containers[0].get("name", ""))
    if old == trainer.MPI_CONTAINER:
        return spec, annotations
    others = [c.get("name") for c in [*containers[1:], *(spec.get("initContainers") or [])]]
    if trainer.MPI_CONTAINER in others:
        raise ConvertError(
            f"a container other than the first is named {trainer.MPI_CONTAINER!r}: Trainer gives the SSH key,"
            " hostfile and MPI env to the container of that name only; rename it"
        )
    containers[0] = {**containers[0], "name": trainer.MPI_CONTAINER}
    renamed = _renamed_references({**spec, "containers": containers}, old)
    if annotations.get(_DEFAULT_CONTAINER_ANNOTATION) == old:
        annotations = {**annotations, _DEFAULT_CONTAINER_ANNOTATION: trainer.MPI_CONTAINER}
    return renamed, annotations


def _renamed_references(value: Any, old: str) -> Any:
    """``resourceFieldRef.containerName`` (env and downward API volumes) follows the rename."""
    if isinstance(value, list):
        return [_renamed_references(v, old) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _renamed_references(v, old) for k, v in value.items()}
    if "resource" in out and out.get("containerName") == old:
        out["containerName"] = trainer.MPI_CONTAINER
    return out


def with_restart_attempt_env(spec: dict[str, Any]) -> dict[str, Any]:
    """``MPIJOB_RESTART_ATTEMPT`` in every container, read from the restart count JobSet labels Pods with."""
    field_path = f"metadata.labels['{trainer.JOBSET_RESTART_ATTEMPT_LABEL}']"
    env = {"name": names.RESTART_ATTEMPT_ENV, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}
    return pods.with_env_everywhere(spec, env)


def _without_empty_lists(spec: dict[str, Any]) -> dict[str, Any]:
    containers = [
        {k: v for k, v in c.items() if not (k in ("env", "volumeMounts") and v == [])}
        for c in spec.get("containers") or []
    ]
    return {**spec, "containers": containers}
