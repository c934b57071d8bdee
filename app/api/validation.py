"""Upstream ``ValidateMPIJob``: every error with its field path and upstream's wording, in upstream's order.

It runs on the defaulted ``Job``, as upstream's controller does, so upstream's "Required" errors for
fields that defaulting always fills (slots, SSH mount path, clean Pod policy, replica counts) cannot
occur and are not here.

Formatting follows apimachinery's ``field.Error``: ``<path>: Required value: ...``,
``<path>: Invalid value: <v>: ...``, ``<path>: Unsupported value: "<v>": supported values: ...``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from app.api.defaults import Job, Replica
from app.api.types import (
    KUBEFLOW_JOB_CONTROLLER,
    MULTIKUEUE_CONTROLLER,
    CleanPodPolicy,
    MPIImplementation,
    ReplicaType,
    RestartPolicy,
    RunPolicy,
)

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MAX = 63
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation error, rendered like apimachinery's ``field.Error.Error()``."""

    field: str
    kind: str  # "Required", "Invalid" or "NotSupported"
    detail: str
    value: Any = None
    supported: tuple[str, ...] = ()
    # Go's json.Marshal HTML-escapes values of named string types (enums), not plain strings.
    named_type: bool = False

    def __str__(self) -> str:
        if self.kind == "Required":
            return f"{self.field}: Required value: {self.detail}"
        if self.kind == "NotSupported":
            options = ", ".join(json.dumps(s) for s in self.supported)
            value = _quote(self.value, self.named_type)
            return f"{self.field}: Unsupported value: {value}: supported values: {options}"
        return f"{self.field}: Invalid value: {_quote(self.value)}: {self.detail}"


def _quote(value: Any, html_escaped: bool = False) -> str:
    """apimachinery's rendering of a bad value: JSON strings with UTF-8 kept."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        return str(value)
    text = json.dumps(value, ensure_ascii=False)
    if not html_escaped:
        return text
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def aggregate(errors: list[FieldError]) -> str:
    """``errors.ToAggregate().Error()``: one message alone, several as ``[a, b]`` without duplicates."""
    messages = list(dict.fromkeys(str(e) for e in errors))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


def validate(job: Job) -> list[FieldError]:
    """Validate a defaulted MPIJob; an empty list means valid."""
    return [*_validate_name(job), *_validate_spec(job, "spec")]


def dns1035_errors(value: str) -> list[str]:
    errors = []
    if len(value) > _DNS1035_MAX:
        errors.append(f"must be no more than {_DNS1035_MAX} characters")
    if not _DNS1035.fullmatch(value):
        errors.append(_DNS1035_MESSAGE)
    return errors


def _validate_name(job: Job) -> list[FieldError]:
    replicas = max(job.worker_replicas, 1)
    hostname = f"{job.name}-worker-{replicas - 1}"
    problems = dns1035_errors(hostname)
    if not problems:
        return []
    detail = f"will not able to create pod and service with invalid DNS label {json.dumps(hostname)}: " + (
        ", ".join(problems)
    )
    return [FieldError("metadata.name", "Invalid", detail, job.name)]


def _validate_spec(job: Job, path: str) -> list[FieldError]:
    errors = _validate_replica_specs(job, f"{path}.mpiReplicaSpecs")
    errors += _non_negative(job.slots_per_worker, f"{path}.slotsPerWorker")
    errors += _validate_run_policy(job, f"{path}.runPolicy")
    implementations = sorted(m.value for m in MPIImplementation)
    if job.mpi_implementation not in implementations:
        errors.append(
            FieldError(
                f"{path}.mpiImplementation",
                "NotSupported",
                "",
                job.mpi_implementation,
                tuple(implementations),
                named_type=True,
            )
        )
    return errors


def _validate_replica_specs(job: Job, path: str) -> list[FieldError]:
    if not job.has_replica_specs:
        return [FieldError(path, "Required", "must have replica specs")]
    errors: list[FieldError] = []
    launcher_path = f"{path}[{ReplicaType.LAUNCHER}]"
    if job.launcher is None:
        errors.append(FieldError(launcher_path, "Required", f"must have {ReplicaType.LAUNCHER} replica spec"))
    else:
        errors += _validate_replica_spec(job.launcher, launcher_path)
        if job.launcher.replicas != 1:
            errors.append(
                FieldError(f"{launcher_path}.replicas", "Invalid", "must be 1", job.launcher.replicas)
            )
    worker_path = f"{path}[{ReplicaType.WORKER}]"
    if job.worker is not None:
        errors += _validate_replica_spec(job.worker, worker_path)
        if job.worker.replicas <= 0:
            errors.append(
                FieldError(
                    f"{worker_path}.replicas",
                    "Invalid",
                    "must be greater than or equal to 1",
                    job.worker.replicas,
                )
            )
    return errors


def _validate_replica_spec(spec: Replica, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    allowed = (RestartPolicy.NEVER.value, RestartPolicy.ON_FAILURE.value)
    if spec.restart_policy not in allowed:
        errors.append(
            FieldError(
                f"{path}.restartPolicy",
                "NotSupported",
                "",
                spec.restart_policy,
                allowed,
                named_type=True,
            )
        )
    pod = spec.template.get("spec")
    # A pod spec of the wrong shape (only possible outside the CRD, e.g. `mpijob lint`) has no containers.
    containers = pod.get("containers") if isinstance(pod, dict) else None
    if not containers:
        errors.append(
            FieldError(f"{path}.template.spec.containers", "Required", "must define at least one container")
        )
    return errors


def _validate_run_policy(job: Job, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    allowed = tuple(sorted(p.value for p in CleanPodPolicy))
    if job.clean_pod_policy not in allowed:
        errors.append(
            FieldError(
                f"{path}.cleanPodPolicy",
                "NotSupported",
                "",
                job.clean_pod_policy,
                allowed,
                named_type=True,
            )
        )
    policy = job.run_policy
    for name, value in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", policy.active_deadline_seconds),
        ("backoffLimit", policy.backoff_limit),
    ):
        if value is not None:
            errors += _non_negative(value, f"{path}.{name}")
    errors += _validate_scheduling_policy(policy, f"{path}.schedulingPolicy")
    managers = (KUBEFLOW_JOB_CONTROLLER, MULTIKUEUE_CONTROLLER)
    if policy.managed_by is not None and policy.managed_by not in managers:
        errors.append(FieldError(f"{path}.managedBy", "NotSupported", "", policy.managed_by, managers))
    return errors


def _validate_scheduling_policy(policy: RunPolicy, path: str) -> list[FieldError]:
    """Ours: upstream panics building the PodGroup of a negative minAvailable; the CRD rejects both too."""
    scheduling = policy.scheduling_policy
    if scheduling is None:
        return []
    errors: list[FieldError] = []
    for name, value in (
        ("minAvailable", scheduling.min_available),
        ("scheduleTimeoutSeconds", scheduling.schedule_timeout_seconds),
    ):
        if value is not None:
            errors += _non_negative(value, f"{path}.{name}")
    return errors


def _non_negative(value: int, path: str) -> list[FieldError]:
    if value < 0:
        return [FieldError(path, "Invalid", "must be greater than or equal to 0", value)]
    return []
