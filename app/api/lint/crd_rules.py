"""The lint rules for what admission would reject: the CRD's schema and CEL rules, then the hook's validation.

Messages are the ones users would otherwise meet: the CRD's own rule messages (a test compares them with
``crds/``) and upstream's validation wording. Where both reject the same field, the CRD's message wins:
``kubectl apply`` shows it first.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from app.api import child_names, field_path
from app.api.defaults import Job
from app.api.lint.findings import Finding, Severity
from app.api.types import (
    LauncherCreationPolicy,
    MPIImplementation,
    MPIJob,
    MPIJobSpec,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
    RunPolicy,
    SchedulingPolicy,
)
from app.api.validation import FieldError, validate

# The apiserver's Quantity syntax (k8s.io/apimachinery resource.Quantity), as controller-gen CRDs carry it:
# the CRD's minResources pattern (tools/gen_crd.py) and lint's check of it.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)

_FIXES = {
    "replicas": "Launcher replicas must be 1; Worker replicas a number >= 1",
    "restartPolicy": "use OnFailure or Never",
    "containers": "give the pod template at least one container",
    "cleanPodPolicy": "use None, Running or All",
    "mpiImplementation": "use OpenMPI, Intel or MPICH",
    "launcherCreationPolicy": "use AtStartup or WaitForWorkersReady",
    "managedBy": "use kubeflow.org/mpi-operator or kueue.x-k8s.io/multikueue, or leave it out",
    "sshAuthMountPath": "leave it out (default /root/.ssh) or give a path",
    "name": "choose a shorter name of lower-case letters, digits and '-', starting with a letter",
}


# Validation's one check of the topology annotation (``validation._validate_annotations``), with its fix.
_TOPOLOGY = f"metadata.annotations[{child_names.GANG_TOPOLOGY_ANNOTATION}]"
_TOPOLOGY_FIX = (
    "name the node label the gang's nodes share (e.g. topology.kubernetes.io/zone), or remove the annotation"
)


def _fix(path: str) -> str:
    if path == _TOPOLOGY:
        return _TOPOLOGY_FIX
    last = path.rsplit(".", 1)[-1].split("[", 1)[0]
    return _FIXES.get(last, "correct the field as the message says")


def _finding(rule: str, path: str, message: str) -> Finding:
    return Finding(rule, Severity.ERROR, path, message, _fix(path))


def rejections(
    job: MPIJob, defaulted: Job, raw: Mapping[str, Any] | None, *, validated: bool = False
) -> list[Finding]:
    """Errors from the CRD (name rules, schema-only checks, unknown fields), then from validation
    (skipped when ``validated``: the hook lints only jobs its own validation, with its settings, passed).
    The schema sees ``job`` as parsed; validation and the name rules see ``defaulted`` (``with_defaults``)."""
    crd = [*_name_rules(defaulted), *_schema_only(job), *_unknown_fields(raw)]
    if validated:
        return crd
    taken = {f.path for f in crd}
    return crd + [f for f in _validation(defaulted) if f.path not in taken]


def _name_rules(job: Job) -> Iterator[Finding]:
    name = job.name
    if not name:
        return
    if any("must be no more" not in problem for problem in child_names.dns1035_label_errors(name)):
        yield _finding("crd-rejected", "metadata.name", child_names.NAME_NOT_DNS1035)
    last_worker = child_names.worker_name(name, child_names.last_worker_index(job.worker_replicas))
    if len(last_worker) > child_names.DNS1035_LABEL_MAX:
        yield _finding("name-too-long", "metadata.name", child_names.NAME_TOO_LONG)


def _unsupported(path: str, value: str, allowed: list[str]) -> Finding:
    text = str(FieldError.not_supported(path, value, tuple(allowed)))
    return _finding("crd-rejected", path, text[len(path) + 2 :])


def _schema_only(job: MPIJob) -> Iterator[Finding]:
    """What the schema rejects and validation lets through (it defaults empty strings first)."""
    spec = job.spec
    policies = [p.value for p in LauncherCreationPolicy]
    if spec.launcher_creation_policy is not None and spec.launcher_creation_policy not in policies:
        yield _unsupported("spec.launcherCreationPolicy", spec.launcher_creation_policy, policies)
    if spec.mpi_implementation == "":
        yield _unsupported("spec.mpiImplementation", "", [m.value for m in MPIImplementation])
    for kind in ReplicaType:
        replica = spec.replica(kind)
        if replica is not None and replica.restart_policy == "":
            allowed = [RestartPolicy.ON_FAILURE.value, RestartPolicy.NEVER.value]
            yield _unsupported(f"{field_path.replica_spec(kind)}.restartPolicy", "", allowed)
    if spec.ssh_auth_mount_path == "":
        path = "spec.sshAuthMountPath"
        yield _finding(
            "crd-rejected",
            path,
            'Invalid value: "": spec.sshAuthMountPath in body should be at least 1 chars long',
        )
    worker = spec.replica(ReplicaType.WORKER)
    if worker is not None and worker.replicas is None:
        path = f"{field_path.replica_spec(ReplicaType.WORKER)}.replicas"
        yield _finding("crd-rejected", path, "Required value: must define number of replicas")
    scheduling = spec.run_policy.scheduling_policy
    for name, quantity in ((scheduling.min_resources if scheduling else None) or {}).items():
        if not _QUANTITY.match(str(quantity)):
            path = f"spec.runPolicy.schedulingPolicy.minResources.{name}"
            yield _finding("crd-rejected", path, f"Invalid value: {str(quantity)[:64]!r}: not a quantity")
    for name, value in (
        ("minAvailable", scheduling.min_available if scheduling else None),
        ("scheduleTimeoutSeconds", scheduling.schedule_timeout_seconds if scheduling else None),
    ):
        if value is not None and value < 0:
            path = f"spec.runPolicy.schedulingPolicy.{name}"
            yield _finding(
                "crd-rejected",
                path,
                f"Invalid value: {value}: {path} in body should be greater than or equal to 0",
            )


def _validation(job: Job) -> Iterator[Finding]:
    for error in validate(job):
        yield _finding("invalid", error.field, str(error)[len(error.field) + 2 :])


_KNOWN: dict[str, type[BaseModel]] = {
    "spec": MPIJobSpec,
    "spec.runPolicy": RunPolicy,
    "spec.runPolicy.schedulingPolicy": SchedulingPolicy,
}
_MOVED = {
    "spec.cleanPodPolicy": "it moved in v2beta1: spec.runPolicy.cleanPodPolicy",
    "spec.backoffLimit": "it moved in v2beta1: spec.runPolicy.backoffLimit",
    "spec.activeDeadlineSeconds": "it moved in v2beta1: spec.runPolicy.activeDeadlineSeconds",
    "spec.mainContainer": "v2beta1 has no mainContainer: the launcher's first container runs mpirun",
}


def _fields(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


# Each object whose keys are checked (the keys walked to it), with the keys it may have.
_REPLICA_SPECS = ("spec", field_path.REPLICA_SPECS)
_KNOWN_KEYS: tuple[tuple[tuple[str, ...], frozenset[str]], ...] = (
    ((), frozenset({"apiVersion", "kind", "metadata", "spec", "status"})),
    *((tuple(path.split(".")), frozenset(_fields(model))) for path, model in _KNOWN.items()),
    (_REPLICA_SPECS, frozenset(t.value for t in ReplicaType)),
    *(
        # slotsPerWorker: slots-in-replica-spec says it better.
        (("spec", "mpiReplicaSpecs", t.value), frozenset({*_fields(ReplicaSpec), "slotsPerWorker"}))
        for t in ReplicaType
    ),
)


def _unknown_fields(raw: Mapping[str, Any] | None) -> Iterator[Finding]:
    if raw is None:
        return
    for keys, known in _KNOWN_KEYS:
        node = _at(raw, keys)
        for key in node if isinstance(node, Mapping) else ():
            if key not in known:
                yield _unknown_field((*keys, str(key)), known, raw)


def _unknown_field(where: tuple[str, ...], known: frozenset[str], raw: Mapping[str, Any]) -> Finding:
    """kubectl's own words (its map keys after a dot), then what was meant: the near miss, or the keys."""
    path, dotted = field_path.join(where), ".".join(where)
    meant = _near_miss(where[-1], known)
    rejected = "kubectl apply rejects it, other clients silently drop it"
    if where[:-1] == _REPLICA_SPECS:
        message = f'unknown field "{dotted}": not a replica type (an MPIJob has only Launcher and Worker)'
        message += f": {rejected}"
        if _at(raw, (*_REPLICA_SPECS, ReplicaType.WORKER.value)) is None:
            message += ", leaving the job without workers"
        fix = f"did you mean {meant}? rename it {meant}" if meant else "rename it, or remove it"
        fix += " (an MPIJob's replica types are Launcher and Worker, case as shown)"
    else:
        message = f'unknown field "{dotted}": {rejected}'
        guess = f"did you mean {meant}? " if meant else ""
        fix = f"{guess}remove it, or check its spelling and level (known: {', '.join(sorted(known))})"
        fix = _MOVED.get(path, fix)
    return Finding("unknown-field", Severity.ERROR, path, message, fix)


def _near_miss(key: str, known: frozenset[str]) -> str | None:
    """The known key ``key`` was meant to be: the same but for case, else the closest by spelling."""
    by_case = {k.lower(): k for k in known}
    if key.lower() in by_case:
        return by_case[key.lower()]
    close = difflib.get_close_matches(key.lower(), list(by_case), n=1, cutoff=0.75)
    return by_case[close[0]] if close else None


def unknown_replica_types(raw: Mapping[str, Any] | None) -> list[str]:
    """The keys of ``spec.mpiReplicaSpecs`` that name no replica type (``worker``): what the CRD drops."""
    specs = _at(raw, _REPLICA_SPECS) if raw is not None else None
    names = {t.value for t in ReplicaType}
    return [str(k) for k in specs if k not in names] if isinstance(specs, Mapping) else []


def _at(raw: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    node: Any = raw
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node
