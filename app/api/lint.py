"""Lint rules for MPIJobs: the silent mistakes, and everything validation or the CRD would reject.

One pure module shared by ``mpijob lint`` (before apply) and the sync hook (a warning condition after
apply). ``lint(job, raw)`` takes the parsed model and, optionally, the manifest as written, for rules about
fields the CRD prunes (``slotsPerWorker`` inside a replica spec). Each finding names its rule, severity,
field path (dotted, as ``kubectl`` prints it), what is wrong and how to fix it. A rule can be silenced per
job with the annotation ``mpijob-lint/ignore: "<rule>,<rule>"``. Only ``app.api`` is imported here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from app.api import lint_commands as cmd
from app.api import lint_crd as crd
from app.api import names
from app.api.defaults import (
    DEFAULT_SLOTS_PER_WORKER,
    DEFAULT_SSH_AUTH_MOUNT_PATH,
    Job,
    with_defaults,
)
from app.api.lint_types import Finding, Severity, plural
from app.api.types import API_VERSION, KIND, MPIImplementation, MPIJob, ReplicaType

__all__ = ["IGNORE_ANNOTATION", "RULES", "SEVERITIES", "Finding", "Rule", "Severity", "lint", "lint_manifest"]

IGNORE_ANNOTATION = "mpijob-lint/ignore"
OLD_API_VERSIONS = ("kubeflow.org/v1alpha1", "kubeflow.org/v1alpha2", "kubeflow.org/v1")


class Rule(StrEnum):
    """Rule ids: stable names users put in ``mpijob-lint/ignore`` and CI greps for."""

    INVALID = "invalid"
    CRD_REJECTED = "crd-rejected"
    UNKNOWN_FIELD = "unknown-field"
    NAME_TOO_LONG = "name-too-long"
    OLD_API_VERSION = "old-api-version"
    SLOTS_IN_REPLICA_SPEC = "slots-in-replica-spec"
    NP_MISMATCH = "np-mismatch"
    GPU_SLOTS_MISMATCH = "gpu-slots-mismatch"
    GPUS_AT_POD_LEVEL = "gpus-at-pod-level"
    LAUNCHER_GPUS_HIDDEN = "launcher-gpus-hidden"
    GPUS_HELD_AFTER_FINISH = "gpus-held-after-finish"
    ORTE_ONLY_SETTINGS = "orte-only-settings"
    LAUNCHER_COMMAND = "launcher-command"
    WORKER_COMMAND = "worker-command"
    HOSTNETWORK_PORT_CLASH = "hostnetwork-port-clash"
    SSH_PATH_FOR_NON_ROOT = "ssh-path-for-non-root"
    SSH_PATH_FOR_ROOT = "ssh-path-for-root"
    FAILURE_POLICY_UNSEEN = "failure-policy-unseen"
    FAILURE_RULE_UNREACHABLE = "failure-rule-unreachable"


RULES: dict[str, str] = {
    Rule.INVALID: "the hook's validation (upstream's ValidateMPIJob) rejects the job: nothing is created",
    Rule.CRD_REJECTED: "the CRD's schema or CEL rules reject the job at kubectl apply",
    Rule.UNKNOWN_FIELD: "a field the MPIJob API does not have: rejected by kubectl apply, pruned otherwise",
    Rule.NAME_TOO_LONG: (
        f"the last worker's hostname <name>{names.WORKER_INFIX}<N-1> exceeds {names.DNS1035_LABEL_MAX}"
        " characters"
    ),
    Rule.OLD_API_VERSION: "kubeflow.org/v1alpha1, v1alpha2 or v1: not served by this CRD",
    Rule.SLOTS_IN_REPLICA_SPEC: "slotsPerWorker written inside a replica spec, where it is pruned",
    Rule.NP_MISMATCH: "mpirun -np differs from the hostfile's slots (slotsPerWorker x workers)",
    Rule.GPU_SLOTS_MISMATCH: "GPUs per worker (pod-level ones counted) differ from slotsPerWorker",
    Rule.GPUS_AT_POD_LEVEL: (
        "GPUs in a pod template's spec.resources: pod-level resources take only cpu, memory and hugepages"
    ),
    Rule.LAUNCHER_GPUS_HIDDEN: "the launcher requests GPUs it cannot see (runLauncherAsWorker is off)",
    Rule.GPUS_HELD_AFTER_FINISH: "cleanPodPolicy unset: finished jobs keep their GPU workers",
    Rule.ORTE_ONLY_SETTINGS: "OMPI_MCA_orte_* settings without PRRTE equivalents: Open MPI 5 ignores them",
    Rule.LAUNCHER_COMMAND: "the launcher runs neither mpirun, mpiexec nor horovodrun",
    Rule.WORKER_COMMAND: "a worker command that does not start sshd",
    Rule.HOSTNETWORK_PORT_CLASH: "hostNetwork pods that may share a node and clash on sshd's port",
    Rule.SSH_PATH_FOR_NON_ROOT: (
        f"the SSH key goes to {DEFAULT_SSH_AUTH_MOUNT_PATH} but the containers run as another user"
    ),
    Rule.SSH_PATH_FOR_ROOT: (
        f"the SSH key goes to a path other than {DEFAULT_SSH_AUTH_MOUNT_PATH} but the containers run as root"
    ),
    Rule.FAILURE_POLICY_UNSEEN: (
        "a failure policy with workers whose restartPolicy is OnFailure: their containers restart in place,"
        " so the policy never sees a worker fail"
    ),
    Rule.FAILURE_RULE_UNREACHABLE: (
        "a failure policy rule after one that already matches every failure it could"
    ),
}

_ERROR_RULES = frozenset({
    Rule.INVALID, Rule.CRD_REJECTED, Rule.UNKNOWN_FIELD, Rule.NAME_TOO_LONG, Rule.OLD_API_VERSION,
    Rule.SLOTS_IN_REPLICA_SPEC, Rule.GPUS_AT_POD_LEVEL,
})  # fmt: skip
# The severity each rule reports (launcher-command: info instead when the launcher sets no command at all).
SEVERITIES: dict[str, Severity] = {
    rule: Severity.ERROR if rule in _ERROR_RULES else Severity.WARNING for rule in Rule
}

LAUNCHER = f"spec.mpiReplicaSpecs.{ReplicaType.LAUNCHER.value}"
WORKER = f"spec.mpiReplicaSpecs.{ReplicaType.WORKER.value}"
_GPU_RESOURCE = re.compile(r"(^|/)gpu$|^gpu\.intel\.com/|^habana\.ai/gaudi$")


def lint_manifest(raw: Mapping[str, Any]) -> list[Finding]:
    """Lint a manifest as written: API version first, then the parsed job (or why it does not parse)."""
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    if kind == KIND and api_version in OLD_API_VERSIONS:
        return [_old_api_version(str(api_version))]
    if api_version != API_VERSION:
        message = f'no matches for kind "{KIND}" in version "{str(api_version)[:64]}"'
        return [Finding(Rule.CRD_REJECTED, Severity.ERROR, "apiVersion", message, f"use {API_VERSION}")]
    try:
        job = MPIJob.model_validate(dict(raw))
    except ValidationError as err:
        return [
            Finding(
                Rule.INVALID,
                Severity.ERROR,
                crd.field_path(e["loc"]),
                f"Invalid value: {e['msg']}",
                "give the field a value of the type the MPIJob API expects",
            )
            for e in err.errors()
        ]
    return lint(job, raw)


def lint(job: MPIJob, raw: Mapping[str, Any] | None = None, *, validated: Job | None = None) -> list[Finding]:
    """Every finding for ``job``, in rule order; ``raw`` adds the rules about fields the CRD prunes.
    ``validated``: ``job`` defaulted, which the caller's validation passed already (the hook), so neither
    defaulting nor validation is run again."""
    if job.api_version in OLD_API_VERSIONS:
        return [_old_api_version(job.api_version)]
    defaulted = validated if validated is not None else with_defaults(job)
    findings = [*crd.rejections(job, defaulted, raw, validated=validated is not None), *_rules_on_raw(raw)]
    findings += [f for check in _CHECKS for f in check(defaulted)]
    ignored = {r.strip() for r in job.metadata.annotations.get(IGNORE_ANNOTATION, "").split(",")}
    return [f for f in findings if f.rule not in ignored or f.severity is Severity.ERROR]


def _old_api_version(api_version: str) -> Finding:
    return Finding(
        Rule.OLD_API_VERSION,
        Severity.ERROR,
        "apiVersion",
        f'{api_version} is not served: kubectl apply fails with no matches for kind "MPIJob" in version'
        f' "{api_version}"',
        f"convert it: mpijob convert FILE > new.yaml (apiVersion {API_VERSION})",
    )


def _rules_on_raw(raw: Mapping[str, Any] | None) -> Iterator[Finding]:
    specs = _get(raw, "spec", "mpiReplicaSpecs")
    if not isinstance(specs, Mapping):
        return
    for name, spec in specs.items():
        if isinstance(spec, Mapping) and "slotsPerWorker" in spec:
            yield Finding(
                Rule.SLOTS_IN_REPLICA_SPEC,
                Severity.ERROR,
                f"spec.mpiReplicaSpecs.{name}.slotsPerWorker",
                "slotsPerWorker belongs to spec, not to a replica spec: kubectl apply rejects it as an"
                " unknown field, other clients drop it and the job runs with slotsPerWorker"
                f" {DEFAULT_SLOTS_PER_WORKER}",
                f"move it up: spec.slotsPerWorker: {spec['slotsPerWorker']}",
            )


def _get(node: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


# --- the silent mistakes -----------------------------------------------------------------------------


# The checks read the defaulted job (``with_defaults``): what the hook would run, not what was written.


def _containers(job: Job, kind: ReplicaType) -> list[dict[str, Any]]:
    replica = job.replica(kind)
    containers = _get(replica.template if replica else None, "spec", "containers")
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def _pod_spec(job: Job, kind: ReplicaType) -> Mapping[str, Any]:
    replica = job.replica(kind)
    pod = _get(replica.template if replica else None, "spec")
    return pod if isinstance(pod, Mapping) else {}


def _np_mismatch(job: Job) -> Iterator[Finding]:
    slots, workers = job.slots_per_worker, job.worker_replicas
    total = slots * workers + (slots if job.run_launcher_as_worker else 0)
    for index, container in enumerate(_containers(job, ReplicaType.LAUNCHER)):
        launch = cmd.find_launch(container)
        if launch is None or launch.processes is None or launch.processes == total:
            continue
        how = f"slotsPerWorker {slots} x {plural(workers, 'worker')}"
        if job.run_launcher_as_worker:
            how += f" + {slots} on the launcher (runLauncherAsWorker)"
        if launch.processes > total:
            effect = (
                "ranks are oversubscribed onto the slots"
                if launch.oversubscribe
                else "Open MPI refuses to start (not enough slots); other MPIs oversubscribe"
            )
        else:
            idle = total - launch.processes
            effect = f"{plural(idle, 'slot')} {'stays' if idle == 1 else 'stay'} idle"
        yield Finding(
            Rule.NP_MISMATCH,
            Severity.WARNING,
            f"{LAUNCHER}.template.spec.containers[{index}].{launch.field}",
            f"{launch.program} {launch.flag} {launch.processes} starts"
            f" {plural(launch.processes, 'process', 'processes')} but the hostfile has"
            f" {plural(total, 'slot')} ({how}): {effect}",
            f"use {launch.flag} {total}, or change slotsPerWorker or Worker replicas"
            f" so that the hostfile has {plural(launch.processes, 'slot')}",
        )


@dataclass(frozen=True, slots=True)
class _GPUs:
    """The GPUs a replica's pod template asks for: in total, and how many of them at pod level."""

    total: int
    at_pod_level: int
    pod_level_path: str  # where the pod-level ones are written, e.g. spec.mpiReplicaSpecs.Worker...limits

    def __bool__(self) -> bool:
        return self.total > 0

    @property
    def counted(self) -> str:
        """``4 GPUs``, saying when pod-level ones are among them."""
        text = plural(self.total, "GPU")
        if self.at_pod_level:
            text += f" (counting the {self.at_pod_level} at pod level)"
        return text


def _gpu_amount(resources: Any) -> tuple[int, str]:
    """GPUs in a ``resources`` object (limits, else requests), and which of the two held them."""
    if not isinstance(resources, Mapping):
        return 0, ""
    which = "limits" if resources.get("limits") else "requests"
    amounts = resources.get(which) or {}
    total = 0
    for name, value in amounts.items() if isinstance(amounts, Mapping) else ():
        if _GPU_RESOURCE.search(str(name)):
            total += _whole(value)
    return total, which


def _gpus(job: Job, kind: ReplicaType) -> _GPUs:
    """The pod's GPUs as the user asked: pod-level amounts take precedence over the containers' sum, as
    Kubernetes does for the resources it supports at pod level."""
    in_containers = sum(_gpu_amount(c.get("resources"))[0] for c in _containers(job, kind))
    at_pod_level, which = _gpu_amount(_pod_spec(job, kind).get("resources"))
    path = f"spec.mpiReplicaSpecs.{kind.value}.template.spec.resources.{which}"
    return _GPUs(at_pod_level or in_containers, at_pod_level, path)


def _whole(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _gpu_slots_mismatch(job: Job) -> Iterator[Finding]:
    slots = job.slots_per_worker
    kinds = [ReplicaType.WORKER] + ([ReplicaType.LAUNCHER] if job.run_launcher_as_worker else [])
    for kind in kinds:
        gpus = _gpus(job, kind)
        if gpus and gpus.total != slots:
            yield Finding(
                Rule.GPU_SLOTS_MISMATCH,
                Severity.WARNING,
                "spec.slotsPerWorker",
                f"each {kind.value.lower()} requests {gpus.counted} but has {plural(slots, 'slot')}: "
                + ("GPUs stay idle" if gpus.total > slots else "ranks share GPUs"),
                f"set spec.slotsPerWorker: {gpus.total} (one rank per GPU) and mpirun -np to {gpus.total} x"
                " the number of workers",
            )


def _gpus_at_pod_level(job: Job) -> Iterator[Finding]:
    for kind in ReplicaType:
        gpus = _gpus(job, kind)
        if gpus.at_pod_level:
            yield Finding(
                Rule.GPUS_AT_POD_LEVEL,
                Severity.ERROR,
                gpus.pod_level_path,
                f"the {kind.value.lower()} asks for {plural(gpus.at_pod_level, 'GPU')} in its pod-level"
                " resources (template.spec.resources), which Kubernetes supports for cpu, memory and"
                " hugepages only: the API server rejects the Pods (Kubernetes 1.34 and later: Unsupported"
                " value), or drops the field where pod-level resources are off, so the pods get no GPU",
                "move the GPU limits into the resources of the container that uses them:"
                f" spec.mpiReplicaSpecs.{kind.value}.template.spec.containers[0].resources.limits",
            )


def _launcher_gpus_hidden(job: Job) -> Iterator[Finding]:
    gpus = _gpus(job, ReplicaType.LAUNCHER)
    if gpus and not job.run_launcher_as_worker:
        yield Finding(
            Rule.LAUNCHER_GPUS_HIDDEN,
            Severity.WARNING,
            f"{LAUNCHER}.template.spec.containers",
            f"the launcher requests {gpus.counted}, but without runLauncherAsWorker it runs no ranks and"
            " its GPUs are hidden (NVIDIA_VISIBLE_DEVICES is emptied): they stay idle",
            "remove the GPU limits from the launcher, or set spec.runLauncherAsWorker: true",
        )


def _gpus_held_after_finish(job: Job) -> Iterator[Finding]:
    # Unset as written (``run_policy`` is not defaulted): the default None is the mistake to point at.
    gpus = _gpus(job, ReplicaType.WORKER)
    if job.run_policy.clean_pod_policy is None and gpus:
        yield Finding(
            Rule.GPUS_HELD_AFTER_FINISH,
            Severity.WARNING,
            "spec.runPolicy.cleanPodPolicy",
            "cleanPodPolicy is unset, so it is None: when the job finishes its workers keep running sshd"
            f" and keep their {gpus.counted} each until the MPIJob is deleted",
            "set spec.runPolicy.cleanPodPolicy: Running (or All)",
        )


def _orte_only_settings(job: Job) -> Iterator[Finding]:
    if job.mpi_implementation != MPIImplementation.OPENMPI:
        return
    orte: list[tuple[str, str]] = []
    prrte = False
    for kind in ReplicaType:
        for index, container in enumerate(_containers(job, kind)):
            base = f"spec.mpiReplicaSpecs.{kind.value}.template.spec.containers[{index}]"
            for name, where in cmd.mca_settings(container):
                prrte = prrte or name.startswith(("PRTE_MCA_", "prte")) or where == "prtemca"
                if name.startswith(("OMPI_MCA_orte_", "orte_")):
                    orte.append((name, f"{base}.{where}" if where != "prtemca" else base))
    if orte and not prrte:
        names = ", ".join(sorted({n for n, _ in orte}))
        yield Finding(
            Rule.ORTE_ONLY_SETTINGS,
            Severity.WARNING,
            orte[0][1],
            f"{names} only reach Open MPI 4 and older: Open MPI 5 replaced ORTE with PRRTE and silently"
            " ignores them",
            "if the image runs Open MPI 5, set the PRRTE equivalent too (PRTE_MCA_<name> in env, or"
            " mpirun --prtemca <name> <value>)",
        )


def _launcher_command(job: Job) -> Iterator[Finding]:
    containers = _containers(job, ReplicaType.LAUNCHER)
    if not containers or any(cmd.find_launch(c) is not None for c in containers):
        return
    first = containers[0]
    if not first.get("command") and not first.get("args"):
        message = (
            "the launcher sets no command, so the image's entrypoint must run mpirun: lint cannot see it"
        )
        severity = Severity.INFO
    else:
        words = " ".join([*cmd.strings(first.get("command")), *cmd.strings(first.get("args"))])
        message = (
            f"the launcher runs {words[:80]!r}, which is neither mpirun, mpiexec, horovodrun nor a"
            " shell running one: the workers' ranks are never started"
        )
        severity = Severity.WARNING
    yield Finding(
        Rule.LAUNCHER_COMMAND,
        severity,
        f"{LAUNCHER}.template.spec.containers[0].command",
        message,
        "start the program with mpirun (or mpiexec, horovodrun), e.g. command: [mpirun, -np, '2', ./app]",
    )


def _worker_command(job: Job) -> Iterator[Finding]:
    containers = _containers(job, ReplicaType.WORKER)
    with_command = [(i, c) for i, c in enumerate(containers) if c.get("command") or c.get("args")]
    if not with_command or len(with_command) < len(containers):
        return  # a container on the image's entrypoint may well be the sshd one
    if any(cmd.mentions_sshd(c) for _, c in with_command):
        return
    index, container = with_command[0]
    field = "command" if container.get("command") else "args"
    yield Finding(
        Rule.WORKER_COMMAND,
        Severity.WARNING,
        f"{WORKER}.template.spec.containers[{index}].{field}",
        "no worker container starts sshd, but the launcher reaches workers over SSH: mpirun fails with"
        " 'ssh: connect to host ... Connection refused' unless the command starts sshd itself",
        "remove the command (the image runs sshd) or run e.g. /usr/sbin/sshd -De; if your script starts"
        f" sshd, say so with the annotation {IGNORE_ANNOTATION}: {Rule.WORKER_COMMAND.value}",
    )


def _hostnetwork_port_clash(job: Job) -> Iterator[Finding]:
    worker = _pod_spec(job, ReplicaType.WORKER)
    if not worker.get("hostNetwork"):
        return
    launcher_too = bool(
        job.run_launcher_as_worker and _pod_spec(job, ReplicaType.LAUNCHER).get("hostNetwork")
    )
    pods = job.worker_replicas + (1 if launcher_too else 0)
    if pods < 2 or _one_per_node(worker):
        return
    yield Finding(
        Rule.HOSTNETWORK_PORT_CLASH,
        Severity.WARNING,
        f"{WORKER}.template.spec.hostNetwork",
        f"{plural(pods, 'pod')} use the host's network, and nothing keeps two of them off the same node: the"
        " second sshd (and any other port) fails to bind there",
        "add a required podAntiAffinity on topologyKey kubernetes.io/hostname for the job's pods, or a"
        " topologySpreadConstraint (maxSkew 1, whenUnsatisfiable DoNotSchedule, topologyKey"
        " kubernetes.io/hostname)",
    )


def _one_per_node(pod: Mapping[str, Any]) -> bool:
    hostname = "kubernetes.io/hostname"
    required = _get(pod, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
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
    for context in (container.get("securityContext"), _pod_spec(job, kind).get("securityContext")):
        user = context.get("runAsUser") if isinstance(context, Mapping) else None
        if isinstance(user, int) and not isinstance(user, bool):
            return user
    return None


def _ssh_path_for_non_root(job: Job) -> Iterator[Finding]:
    if job.ssh_auth_mount_path != DEFAULT_SSH_AUTH_MOUNT_PATH:
        return
    for kind in ReplicaType:
        for container in _containers(job, kind):
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
    for context in (container.get("securityContext"), _pod_spec(job, kind).get("securityContext")):
        if isinstance(context, Mapping) and context.get("runAsNonRoot") is True:
            return None
    return (
        "no runAsUser in its container or pod securityContext: the image's user, root in mpioperator's images"
    )


def _ssh_path_for_root(job: Job) -> Iterator[Finding]:
    """The converse of ssh-path-for-non-root: a user's ~/.ssh, but ssh (launcher) or sshd (workers) run as
    root and look in /root/.ssh. Only the first container of each: it runs mpirun, or sshd."""
    path = job.ssh_auth_mount_path
    if path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        return
    for kind in (ReplicaType.LAUNCHER, ReplicaType.WORKER):
        containers = _containers(job, kind)
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


def _failure_policy_unseen(job: Job) -> Iterator[Finding]:
    if job.failure_policy is not None and job.worker is not None and job.worker.restart_policy == "OnFailure":
        yield Finding(
            Rule.FAILURE_POLICY_UNSEEN,
            Severity.WARNING,
            f"{WORKER}.restartPolicy",
            "spec.failurePolicy is set but the workers' restartPolicy is OnFailure: the kubelet restarts a"
            " failed worker container in place and its Pod never fails, so the failure policy only sees"
            " the launcher give up",
            f"set {WORKER}.restartPolicy: Never (the default)",
        )


def _failure_rule_unreachable(job: Job) -> Iterator[Finding]:
    """A rule with no exit codes and no Pod conditions matches every failure of its replica types: a later
    rule for no other replica type is never reached (the first match wins)."""
    rules = (job.failure_policy.rules if job.failure_policy is not None else None) or []
    every = {t.value for t in ReplicaType}
    covered: set[str] = set()
    for index, rule in enumerate(rules):
        kinds = set(rule.replica_types or every)
        if kinds <= covered:
            yield Finding(
                Rule.FAILURE_RULE_UNREACHABLE,
                Severity.WARNING,
                f"spec.failurePolicy.rules[{index}]",
                f"rule {index} is never reached: an earlier rule without onExitCodes or onPodConditions"
                f" already matches every failure of {', '.join(sorted(kinds))}"
                " (the first matching rule decides)",
                "move the more specific rule first, or remove it",
            )
        elif rule.on_exit_codes is None and not rule.on_pod_conditions:
            covered |= kinds


_CHECKS: tuple[Callable[[Job], Iterator[Finding]], ...] = (
    _np_mismatch,
    _gpu_slots_mismatch,
    _gpus_at_pod_level,
    _launcher_gpus_hidden,
    _gpus_held_after_finish,
    _orte_only_settings,
    _launcher_command,
    _worker_command,
    _hostnetwork_port_clash,
    _ssh_path_for_non_root,
    _ssh_path_for_root,
    _failure_policy_unseen,
    _failure_rule_unreachable,
)
