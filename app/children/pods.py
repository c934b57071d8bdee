"""Decorations shared by the launcher's pod template and the worker Pods.

Each helper returns new dicts and never mutates the MPIJob's template: the parsed parent may be
reused (and, for workers, one decorated spec is shared by every Pod of the response).
"""

from __future__ import annotations

from typing import Any

from app.api.defaults import DEFAULT_SSH_AUTH_MOUNT_PATH
from app.kube import names
from app.kube.quantity import canonical_pod_spec

_SECRET_MODE_0600 = 0o600
_SECRET_MODE_0440 = 0o440
# The uid and gid ``useradd`` gives the first user (upstream's base images: mpiuser).
_DEFAULT_FS_GROUP = 1000


def template_metadata(template: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Labels (without Metacontroller's ``controller-uid``) and annotations of a pod template."""
    metadata = template.get("metadata") or {}
    labels = {k: str(v) for k, v in (metadata.get("labels") or {}).items() if k != names.CONTROLLER_UID_LABEL}
    annotations = {k: str(v) for k, v in (metadata.get("annotations") or {}).items()}
    return labels, annotations


def base_spec(template: dict[str, Any]) -> dict[str, Any]:
    """The template's pod spec with canonical quantities (a shallow copy; nested values are shared)."""
    return canonical_pod_spec(template.get("spec") or {})


def ssh_volume(job: str, mount_path: str, secret_name: str = "") -> dict[str, Any]:
    """The key pair and authorized_keys. The private key is never world-readable (upstream leaves it
    0644 off /root/.ssh): root reads it as owner, others through the pod's fsGroup (``with_ssh_fs_group``).
    ``secret_name``: another Secret of the same keys than the job's own (a converted job's, on Trainer).
    """
    secret: dict[str, Any] = {"secretName": secret_name or names.ssh_secret_name(job)}
    private: dict[str, Any] = {"key": names.SSH_PRIVATE_KEY, "path": "id_rsa"}
    if mount_path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        # ssh refuses a key its owner (root) shares with anyone.
        secret["defaultMode"] = _SECRET_MODE_0600
    else:
        private["mode"] = _SECRET_MODE_0440
    secret["items"] = [
        private,
        {"key": names.SSH_PUBLIC_KEY, "path": "id_rsa.pub"},
        {"key": names.SSH_PUBLIC_KEY, "path": "authorized_keys"},
    ]
    return {"name": names.SSH_AUTH_VOLUME, "secret": secret}


def with_ssh_fs_group(spec: dict[str, Any], mount_path: str) -> dict[str, Any]:
    """Give a pod whose key is off /root/.ssh an ``fsGroup`` if it has none, so a non-root user can read it.

    kubelet makes Secret files root-owned; with an fsGroup they get that group (plus g+r) and every
    container runs with it as a supplementary group. ssh checks a key's mode only when it owns the file.
    The group is the first container's runAsGroup or runAsUser (pod-level next), else 1000.
    """
    context = dict(spec.get("securityContext") or {})
    if mount_path == DEFAULT_SSH_AUTH_MOUNT_PATH or context.get("fsGroup") is not None:
        return spec
    containers = spec.get("containers") or []
    first = (containers[0].get("securityContext") or {}) if containers else {}
    candidates = (
        first.get("runAsGroup"),
        context.get("runAsGroup"),
        first.get("runAsUser"),
        context.get("runAsUser"),
    )
    context["fsGroup"] = next(
        (v for v in candidates if isinstance(v, int) and not isinstance(v, bool) and v > 0), _DEFAULT_FS_GROUP
    )
    return {**spec, "securityContext": context}


def with_volumes(spec: dict[str, Any], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {**spec, "volumes": [*(spec.get("volumes") or []), *volumes]}


def decorate_first_container(
    spec: dict[str, Any],
    env: list[dict[str, str]],
    mounts: list[dict[str, str]],
    default_command: list[str] | None = None,
) -> dict[str, Any]:
    """Append env and mounts to container[0] (upstream touches only the first container)."""
    containers = list(spec.get("containers") or [])
    if not containers:
        return spec
    first = dict(containers[0])
    if default_command and not first.get("command") and not first.get("args"):
        first["command"] = list(default_command)
    first["env"] = [*(first.get("env") or []), *env]
    first["volumeMounts"] = [*(first.get("volumeMounts") or []), *mounts]
    containers[0] = first
    return {**spec, "containers": containers}


def with_restart_attempt(
    labels: dict[str, str], spec: dict[str, Any], attempt: int
) -> tuple[dict[str, str], dict[str, Any]]:
    """Ours, with a failure policy: the attempt's label, and ``MPIJOB_RESTART_ATTEMPT`` in every container
    (init containers too), so a training script can resume from its checkpoint."""
    env = {"name": names.RESTART_ATTEMPT_ENV, "value": str(attempt)}
    return {**labels, names.RESTART_ATTEMPT_LABEL: str(attempt)}, with_env_everywhere(spec, env)


def with_env_everywhere(spec: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """``env`` in every container and init container, replacing one of the same name."""
    out = dict(spec)
    for kind in ("initContainers", "containers"):
        if spec.get(kind):
            out[kind] = [
                {**c, "env": [*(e for e in c.get("env") or [] if e.get("name") != env["name"]), env]}
                for c in spec[kind]
            ]
    return out


def with_logs_as_termination_message(spec: dict[str, Any]) -> dict[str, Any]:
    """Each container that chose no ``terminationMessagePolicy`` gets ``FallbackToLogsOnError``: when it
    fails, the kubelet keeps its log's last lines (at most 80 lines, 2 KiB) in its status, where the hook
    can quote them in the job's Failed condition (``core/reasons.py``)."""
    containers = [
        c if c.get("terminationMessagePolicy") else {**c, "terminationMessagePolicy": FALLBACK_TO_LOGS}
        for c in spec.get("containers") or []
    ]
    return {**spec, "containers": containers} if containers else spec


FALLBACK_TO_LOGS = "FallbackToLogsOnError"


def dns_policy_for_host_network(spec: dict[str, Any]) -> dict[str, Any]:
    if spec.get("hostNetwork"):
        return {**spec, "dnsPolicy": "ClusterFirstWithHostNet"}
    return spec


def restart_policy(replica_policy: str) -> str:
    """The (defaulted) replica ``restartPolicy`` wins over the template's; ``ExitCode`` means ``Never``."""
    return "Never" if replica_policy == "ExitCode" else replica_policy
