"""The launcher ``batch/v1`` Job ``<job>-launcher``: runs ``mpirun`` with the hostfile and SSH keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api.defaults import Job, Replica
from app.api.hostfile_order_annotations import asks_topology_order
from app.api.types import MPIImplementation
from app.children import pods
from app.children.launcher_wait import with_wait_for_workers
from app.children.podgroup import Membership, decorate
from app.kube import names

_SSH_CONNECT_ARGS = "-o ConnectionAttempts=10"
_MODE_0444 = 0o444
_MODE_0555 = 0o555


def launcher_env(job: Job) -> list[dict[str, str]]:
    """Env appended to the launcher's first container, in upstream's order."""
    slots = str(job.slots_per_worker)
    env = [{"name": "K_MPI_JOB_ROLE", "value": names.LAUNCHER}]
    implementation = job.mpi_implementation
    if implementation == MPIImplementation.OPENMPI:
        env += _open_mpi_env(job, slots)
    elif implementation == MPIImplementation.INTEL:
        env += [
            {"name": "I_MPI_HYDRA_HOST_FILE", "value": names.HOSTFILE_PATH},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": _SSH_CONNECT_ARGS},
            {"name": "I_MPI_PERHOST", "value": slots},
        ]
    elif implementation == MPIImplementation.MPICH:
        env += [
            {"name": "HYDRA_HOST_FILE", "value": names.HOSTFILE_PATH},
            {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": _SSH_CONNECT_ARGS},
        ]
    if not job.run_launcher_as_worker:
        # Keep GPUs invisible to a launcher that only runs mpirun (no ``value``: the apiserver drops "").
        env += [{"name": "NVIDIA_VISIBLE_DEVICES"}, {"name": "NVIDIA_DRIVER_CAPABILITIES"}]
    return env


def _open_mpi_env(job: Job, slots: str) -> list[dict[str, str]]:
    """Open MPI 4's ORTE names, then Open MPI 5's: it launches through PRRTE, which reads none of them."""
    env = [
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_default_hostfile", "value": names.HOSTFILE_PATH},
        {"name": "OMPI_MCA_plm_rsh_args", "value": _SSH_CONNECT_ARGS},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": slots},
        {"name": "PRTE_MCA_prte_keep_fqdn_hostnames", "value": "true"},
        {"name": "PRTE_MCA_prte_default_hostfile", "value": names.HOSTFILE_PATH},
        {"name": "PRTE_MCA_plm_ssh_args", "value": _SSH_CONNECT_ARGS},
        {"name": "PRTE_MCA_prte_set_default_slots", "value": slots},
    ]
    if job.run_launcher_as_worker:
        # PRRTE resolves no host names by default, so it would not know the launcher's own FQDN in the
        # hostfile as itself and ssh into it; Open MPI 4 did resolve.
        env.append({"name": "PRTE_MCA_prte_do_not_resolve", "value": "false"})
    return env


def hostfile_order_env(job: Job) -> list[dict[str, str]]:
    """Ours: an ordered Open MPI hostfile (a line per slot) is followed only by the sequential mapper.
    Defaults both versions read and the other ignores, so ``mpirun`` needs no flag; a mapping the user
    passes still wins. Only with the hook's hostfile: Trainer's ``host slots=N`` would break under it."""
    if job.mpi_implementation != MPIImplementation.OPENMPI or not asks_topology_order(
        job.metadata.annotations
    ):
        return []
    return [
        {"name": "OMPI_MCA_rmaps_base_mapping_policy", "value": "seq"},
        {"name": "PRTE_MCA_rmaps_default_mapping_policy", "value": "seq"},
    ]


def config_volume(job: str) -> dict[str, Any]:
    return {
        "name": names.CONFIG_VOLUME,
        "configMap": {
            "name": names.config_name(job),
            "items": [
                {"key": names.HOSTFILE_KEY, "path": names.HOSTFILE_KEY, "mode": _MODE_0444},
                {"key": names.DISCOVER_HOSTS_KEY, "path": names.DISCOVER_HOSTS_KEY, "mode": _MODE_0555},
            ],
        },
    }


def build_launcher_template(job: Job, replica: Replica) -> dict[str, Any]:
    name = job.name
    labels, annotations = pods.template_metadata(replica.template)
    labels.update(names.pod_labels(name, names.LAUNCHER))
    if job.run_launcher_as_worker:
        labels[names.REPLICA_INDEX_LABEL] = "0"
    mount_path = job.ssh_auth_mount_path
    spec = pods.base_spec(replica.template)
    spec = {**spec, "hostname": names.launcher_name(name), "subdomain": name}
    spec = pods.dns_policy_for_host_network(spec)
    spec = pods.decorate_first_container(
        spec,
        env=launcher_env(job) + hostfile_order_env(job),
        mounts=[
            {"name": names.SSH_AUTH_VOLUME, "mountPath": mount_path},
            {"name": names.CONFIG_VOLUME, "mountPath": names.CONFIG_MOUNT_PATH},
        ],
    )
    spec = pods.with_logs_as_termination_message(spec)
    spec["restartPolicy"] = pods.restart_policy(replica.restart_policy)
    spec = pods.with_volumes(spec, [pods.ssh_volume(name, mount_path), config_volume(name)])
    spec = pods.with_ssh_fs_group(spec, mount_path)
    spec = with_wait_for_workers(spec, job)
    return _template(labels, annotations, spec)


def _template(labels: dict[str, str], annotations: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": spec}


def build_launcher_job(
    job: Job, replica: Replica, attempt: int | None = None, membership: Membership | None = None
) -> dict[str, Any]:
    """The launcher Job. ``suspend`` is never emitted: a suspended MPIJob has no launcher (see the plan).
    ``attempt`` and ``membership``: as the plan decided (``for_plan``)."""
    policy = job.run_policy
    spec: dict[str, Any] = {}
    if policy.ttl_seconds_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = policy.ttl_seconds_after_finished
    if policy.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = policy.active_deadline_seconds
    if policy.backoff_limit is not None:
        spec["backoffLimit"] = policy.backoff_limit
    spec["podReplacementPolicy"] = "Failed"
    spec["template"] = build_launcher_template(job, replica)
    launcher = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.launcher_name(job.name),
            "namespace": job.namespace,
            "labels": names.owned_labels(job.name),
        },
        "spec": spec,
    }
    return for_plan(launcher, attempt, membership)


def for_plan(
    launcher: Mapping[str, Any], attempt: int | None, membership: Membership | None
) -> dict[str, Any]:
    """The launcher Job as the plan decided: labelled with the failure policy's ``attempt`` (its Pod's
    containers told in ``MPIJOB_RESTART_ATTEMPT``), its Pod joined to a PodGroup. A new dict; nested
    values are shared with ``launcher``, built once per parent (``templates``)."""
    if attempt is None and membership is None:
        return dict(launcher)
    template = launcher["spec"]["template"]
    labels = dict(template["metadata"]["labels"])
    annotations = dict(template["metadata"].get("annotations") or {})
    spec = template["spec"]
    job_labels = dict(launcher["metadata"]["labels"])
    if attempt is not None:
        labels, spec = pods.with_restart_attempt(labels, spec, attempt)
        job_labels[names.RESTART_ATTEMPT_LABEL] = str(attempt)
    if membership is not None:
        labels, annotations, spec = decorate(membership, labels, annotations, spec)
    return {
        **launcher,
        "metadata": {**launcher["metadata"], "labels": job_labels},
        "spec": {**launcher["spec"], "template": _template(labels, annotations, spec)},
    }
