"""The rules about how the launcher reaches its workers: sshd ports on a shared host network, and an SSH
key mounted where the containers' user does not look."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from app.api.defaults import DEFAULT_SSH_AUTH_MOUNT_PATH, Job
from app.api.lint import reading
from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity, plural
from app.api.types import MPIImplementation, ReplicaType


def hostnetwork_port_clash(job: Job) -> Iterator[Finding]:
    worker = reading.pod_spec(job, ReplicaType.WORKER)
    if not worker.get("hostNetwork"):
        return
    launcher_too = bool(
        job.run_launcher_as_worker and reading.pod_spec(job, ReplicaType.LAUNCHER).get("hostNetwork")
    )
    pods = job.worker_replicas + (1 if launcher_too else 0)
    if pods < 2 or _one_per_node(worker):
        return
    yield Finding(
        Rule.HOSTNETWORK_PORT_CLASH,
        Severity.WARNING,
        f"{reading.WORKER}.template.spec.hostNetwork",
        f"{plural(pods, 'pod')} use the host's network, and nothing keeps two of them off the same node: the"
        " second sshd (and any other port) fails to bind there",
        "add a required podAntiAffinity on topologyKey kubernetes.io/hostname for the job's pods, or a"
        " topologySpreadConstraint (maxSkew 1, whenUnsatisfiable DoNotSchedule, topologyKey"
        " kubernetes.io/hostname)",
    )


def _one_per_node(pod: Mapping[str, Any]) -> bool:
    hostname = "kubernetes.io/hostname"
    required = reading.get(
        pod, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if isinstance(required, list) and any(
        isinstance(t, Mapping) and t.get("topologyKey") == hostname for t in required
    ):
        return True
    spread = pod.get("topologySpreadConstraints")
    return isinstance(spread, list) and any(
        isinstance(c, Mapping)
        and c.get("topologyKey") == hostname
        and c.get("maxSkew") == 1
        and c.get("whenUnsatisfiable") == "DoNotSchedule"
        for c in spread
    )


def _run_as_user(job: Job, kind: ReplicaType, container: Mapping[str, Any]) -> int | None:
    """The container's user id as written (container, else pod securityContext); None when unset."""
    for context in (container.get("securityContext"), reading.pod_spec(job, kind).get("securityContext")):
        user = context.get("runAsUser") if isinstance(context, Mapping) else None
        if isinstance(user, int) and not isinstance(user, bool):
            return user
    return None


def ssh_path_for_non_root(job: Job) -> Iterator[Finding]:
    if job.ssh_auth_mount_path != DEFAULT_SSH_AUTH_MOUNT_PATH:
        return
    for kind in ReplicaType:
        for container in reading.containers(job, kind):
            user = _run_as_user(job, kind, container)
            if user is None or user == 0:
                continue
            yield Finding(
                Rule.SSH_PATH_FOR_NON_ROOT,
                Severity.WARNING,
                "spec.sshAuthMountPath",
                f"the SSH key is mounted at {DEFAULT_SSH_AUTH_MOUNT_PATH} (the default), but the"
                f" {kind.value.lower()} runs as user {user}, whose ssh looks in its own ~/.ssh:"
                " 'Permission denied (publickey)'",
                "set spec.sshAuthMountPath to that user's ~/.ssh, e.g. /home/mpiuser/.ssh",
            )
            return


def _as_root(job: Job, kind: ReplicaType, container: Mapping[str, Any]) -> str | None:
    """Why the container runs as root, or None when it does not (or lint cannot tell: runAsNonRoot)."""
    user = _run_as_user(job, kind, container)
    if user == 0:
        return "runAsUser: 0"
    if user is not None:
        return None
    for context in (container.get("securityContext"), reading.pod_spec(job, kind).get("securityContext")):
        if isinstance(context, Mapping) and context.get("runAsNonRoot") is True:
            return None
    return (
        "no runAsUser in its container or pod securityContext: the image's user, root in mpioperator's images"
    )


def ssh_path_for_root(job: Job) -> Iterator[Finding]:
    """The converse of ssh-path-for-non-root: a user's ~/.ssh, but ssh (launcher) or sshd (workers) run as
    root and look in /root/.ssh. Only the first container of each: it runs mpirun, or sshd."""
    path = job.ssh_auth_mount_path
    if path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        return
    for kind in (ReplicaType.LAUNCHER, ReplicaType.WORKER):
        containers = reading.containers(job, kind)
        why = _as_root(job, kind, containers[0]) if containers else None
        if why is None:
            continue
        refuses = (
            "; and Open MPI's mpirun refuses to run as root"
            if job.mpi_implementation == MPIImplementation.OPENMPI and kind is ReplicaType.LAUNCHER
            else ""
        )
        yield Finding(
            Rule.SSH_PATH_FOR_ROOT,
            Severity.WARNING,
            "spec.sshAuthMountPath",
            f"the SSH key is mounted at {path}, but the {kind.value.lower()} runs as root ({why}):"
            f" root's ssh and sshd use {DEFAULT_SSH_AUTH_MOUNT_PATH}, so the workers refuse the launcher"
            f" ('Permission denied (publickey)'){refuses}",
            f"run the containers as the user whose ~/.ssh {path} is (securityContext.runAsUser: 1000 for"
            " mpioperator's images, with a non-root sshd as in examples/pi/pi.yaml), or leave"
            f" sshAuthMountPath out ({DEFAULT_SSH_AUTH_MOUNT_PATH}) for images that run as root",
        )
        return
