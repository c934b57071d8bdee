"""Upstream ``ValidateMPIJob``: every error with its field path and upstream's wording, in upstream's order.

It runs on the defaulted ``Job``, as upstream's controller does, so upstream's "Required" errors for
fields that defaulting always fills (slots, SSH mount path, clean Pod policy, replica counts) cannot
occur and are not here.

Formatting follows apimachinery's ``field.Error``: ``<path>: Required value: ...``,
``<path>: Invalid value: <v>: ...``, ``<path>: Unsupported value: "<v>": supported values: ...``.

Beyond upstream (the hook must survive input the CRD would have refused, and must never build a child
the apiserver will reject): integer ranges, pod template shapes (``template_shape``) and the size
limits of ``limits``, all checked before anything is built.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from app.api import child_names, field_path, hostfile_order_annotations, limits
from app.api.defaults import Job, Replica
from app.api.template_shape import INT64_MAX, INT64_MIN, template_problems
from app.api.types import (
    KUBEFLOW_JOB_CONTROLLER,
    MULTIKUEUE_CONTROLLER,
    CleanPodPolicy,
    ExitCodeOperator,
    FailureAction,
    FailurePolicyRule,
    MPIImplementation,
    ReplicaType,
    RestartPolicy,
    RunPolicy,
)

# Built once: enum member lookups per sync are measurable in a small job's sync time.
_IMPLEMENTATIONS = tuple(sorted(m.value for m in MPIImplementation))
_RESTART_POLICIES = (RestartPolicy.NEVER.value, RestartPolicy.ON_FAILURE.value)
_CLEAN_POD_POLICIES = tuple(sorted(p.value for p in CleanPodPolicy))
_FAILURE_ACTIONS = tuple(a.value for a in FailureAction)
_EXIT_CODE_OPERATORS = tuple(o.value for o in ExitCodeOperator)
_REPLICA_TYPES = tuple(r.value for r in ReplicaType)
# A Pod condition type: a qualified name, as Kubernetes spells them (``DisruptionTarget``, ``example.com/x``).
CONDITION_TYPE_PATTERN = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_CONDITION_TYPE = re.compile(CONDITION_TYPE_PATTERN)
EXIT_CODE_ZERO_IN = "must not list 0 for operator In: a failed container never exits 0"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation error, rendered like apimachinery's ``field.Error.Error()``."""

    field: str
    kind: str  # "Required", "Invalid", "NotSupported", "Forbidden", "TooLong" or "TooMany"
    detail: str
    value: Any = None
    supported: tuple[str, ...] = ()
    # Go's json.Marshal HTML-escapes values of named string types (enums), not plain strings.
    named_type: bool = False

    @classmethod
    def not_supported(cls, field: str, value: str, supported: tuple[str, ...]) -> FieldError:
        """``field.NotSupported`` of an enum: upstream's enums are named string types."""
        return cls(field, "NotSupported", "", value, supported, named_type=True)

    def __str__(self) -> str:
        if self.kind == "Required":
            return f"{self.field}: Required value: {self.detail}"
        if self.kind in ("Forbidden", "TooLong"):
            return f"{self.field}: {'Too long' if self.kind == 'TooLong' else 'Forbidden'}: {self.detail}"
        if self.kind == "TooMany":
            return f"{self.field}: Too many: {self.value}: {self.detail}"
        if self.kind == "NotSupported":
            options = ", ".join(json.dumps(s) for s in self.supported)
            value = _quote(self.value, self.named_type)
            return f"{self.field}: Unsupported value: {value}: supported values: {options}"
        return f"{self.field}: Invalid value: {_quote(self.value)}: {self.detail}"


def _quote(value: Any, html_escaped: bool = False) -> str:
    """apimachinery's rendering of a bad value: JSON strings with UTF-8 kept."""
    if value is None:
        value = ""
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return "<an integer beyond 64 bits>"  # str() of a 5,000-digit int raises, and says nothing useful
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


def validate(job: Job, *, cluster_domain: str = "", annotation_budget: bool = True) -> list[FieldError]:
    """Validate a defaulted MPIJob; an empty list means valid.

    ``cluster_domain`` and ``annotation_budget`` (Metacontroller's default dynamic-apply keeps each child's
    last applied configuration in a 256 KiB annotation) size the ConfigMap check of ``limits``.
    """
    errors = [*_validate_name(job), *_validate_annotations(job), *_validate_spec(job, "spec")]
    if not errors:
        errors = _validate_sizes(job, cluster_domain, annotation_budget)
    return errors


def _validate_sizes(job: Job, cluster_domain: str, annotation_budget: bool) -> list[FieldError]:
    """Sizes of what would be built; only for an otherwise valid job, whose numbers are all in range."""
    errors: list[FieldError] = []
    for kind, replica in ((ReplicaType.LAUNCHER, job.launcher_spec), (ReplicaType.WORKER, job.worker_spec)):
        if replica is not None and annotation_budget:
            size = limits.encoded_size(replica.template)
            if size > limits.TEMPLATE_BUDGET:
                detail = f"the pod template encodes to {size} bytes; {limits.TEMPLATE_BUDGET_REASON}"
                errors.append(FieldError(f"{field_path.replica_spec(kind)}.template", "TooLong", detail))
    size = limits.config_bytes(job, cluster_domain)
    budget = limits.CONFIG_BUDGET if annotation_budget else limits.CONFIG_BUDGET_SERVER_SIDE_APPLY
    if size > budget:
        detail = (
            f"the hostfile and discover_hosts.sh of {job.worker_replicas} workers take {size} bytes, more"
            f" than the {budget} a ConfigMap can hold here ({limits.CONFIG_BUDGET_REASON}); use fewer"
            " workers (or more slots per worker), or shorter job and namespace names"
        )
        path = f"{field_path.replica_spec(ReplicaType.WORKER)}.replicas"
        errors.append(FieldError(path, "Invalid", detail, job.worker_replicas))
    return errors


def _validate_annotations(job: Job) -> list[FieldError]:
    """Ours: the gang topology annotation names a node label key, else the PodGroup could never be made;
    the hostfile order's annotations say what ``app.api.hostfile_order_annotations`` reads."""
    annotations = job.metadata.annotations
    errors = [
        FieldError(f"metadata.annotations[{key}]", "Invalid", detail, value)
        for key, value, detail in hostfile_order_annotations.problems(annotations)
    ]
    key = child_names.GANG_TOPOLOGY_ANNOTATION
    value = annotations.get(key, "").strip()
    if not value or child_names.is_label_key(value):
        return errors
    detail = "must be a node label key such as 'topology.kubernetes.io/zone' (an optional DNS subdomain and"
    detail += " '/', then at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends)"
    return [FieldError(f"metadata.annotations[{key}]", "Invalid", detail, value), *errors]


def _validate_name(job: Job) -> list[FieldError]:
    # A count beyond MAX_WORKERS is reported on the replicas field; its digits must not cost here.
    index = child_names.last_worker_index(min(job.worker_replicas, limits.MAX_WORKERS))
    hostname = child_names.worker_name(job.name, index)
    problems = child_names.dns1035_label_errors(hostname)
    if not problems:
        return []
    detail = f"will not able to create pod and service with invalid DNS label {json.dumps(hostname)}: " + (
        ", ".join(problems)
    )
    return [FieldError("metadata.name", "Invalid", detail, job.name)]


def _validate_spec(job: Job, path: str) -> list[FieldError]:
    errors = _validate_replica_specs(job)
    errors += _non_negative(job.slots_per_worker, f"{path}.slotsPerWorker")
    errors += _at_most(job.slots_per_worker, limits.INT32_MAX, f"{path}.slotsPerWorker")
    errors += _validate_run_policy(job, f"{path}.runPolicy")
    errors += _enum(job.mpi_implementation, _IMPLEMENTATIONS, f"{path}.mpiImplementation")
    errors += _validate_failure_policy(job, f"{path}.failurePolicy")
    return errors


def _validate_failure_policy(job: Job, path: str) -> list[FieldError]:
    """Ours: the bounds of ``spec.failurePolicy``, as the CRD states them."""
    policy = job.failure_policy
    if policy is None:
        return []
    errors = _non_negative(job.max_restarts, f"{path}.maxRestarts")
    errors += _at_most(job.max_restarts, limits.MAX_RESTARTS, f"{path}.maxRestarts")
    rules = policy.rules or []
    errors += _too_many(len(rules), limits.MAX_FAILURE_RULES, f"{path}.rules")
    for index, rule in enumerate(rules[: limits.MAX_FAILURE_RULES]):
        errors += _validate_rule(rule, f"{path}.rules[{index}]")
    return errors


def _validate_rule(rule: FailurePolicyRule, path: str) -> list[FieldError]:
    if rule.action is None:
        errors = [
            FieldError(f"{path}.action", "Required", "must say what to do: " + ", ".join(_FAILURE_ACTIONS))
        ]
    else:
        errors = _enum(rule.action, _FAILURE_ACTIONS, f"{path}.action")
    codes = rule.on_exit_codes
    if codes is not None:
        errors += _validate_exit_codes(codes.operator, codes.values or [], f"{path}.onExitCodes")
    conditions = rule.on_pod_conditions or []
    errors += _too_many(len(conditions), limits.MAX_RULE_POD_CONDITIONS, f"{path}.onPodConditions")
    for index, kind in enumerate(conditions[: limits.MAX_RULE_POD_CONDITIONS]):
        where = f"{path}.onPodConditions[{index}]"
        if len(kind) > limits.MAX_CONDITION_TYPE_LENGTH:
            errors.append(
                FieldError(where, "TooLong", f"may not be more than {limits.MAX_CONDITION_TYPE_LENGTH} bytes")
            )
        elif not _CONDITION_TYPE.match(kind):
            errors.append(
                FieldError(where, "Invalid", "must be a Pod condition type, e.g. DisruptionTarget", kind)
            )
    replica_types = rule.replica_types or []
    for index, kind in enumerate(replica_types[: len(_REPLICA_TYPES) + 1]):
        errors += _enum(kind, _REPLICA_TYPES, f"{path}.replicaTypes[{index}]")
    if len(set(replica_types)) != len(replica_types):
        errors.append(
            FieldError(f"{path}.replicaTypes", "Invalid", "must not repeat a replica type", "<list>")
        )
    return errors


def _validate_exit_codes(operator: str | None, values: list[int], path: str) -> list[FieldError]:
    if operator is None:
        errors = [FieldError(f"{path}.operator", "Required", "must be In or NotIn")]
    else:
        errors = _enum(operator, _EXIT_CODE_OPERATORS, f"{path}.operator")
    if not values:
        errors.append(FieldError(f"{path}.values", "Required", "must list at least one exit code"))
    errors += _too_many(len(values), limits.MAX_RULE_EXIT_CODES, f"{path}.values")
    for index, code in enumerate(values[: limits.MAX_RULE_EXIT_CODES]):
        where = f"{path}.values[{index}]"
        if not -limits.INT32_MAX - 1 <= code <= limits.INT32_MAX:
            errors.append(FieldError(where, "Invalid", "must be a 32-bit exit code", code))

    if operator == ExitCodeOperator.IN and 0 in values:
        errors.append(FieldError(f"{path}.values", "Invalid", EXIT_CODE_ZERO_IN, 0))
    if len(set(values)) != len(values):
        errors.append(FieldError(f"{path}.values", "Invalid", "must not repeat an exit code", "<list>"))
    return errors


def _too_many(count: int, most: int, path: str) -> list[FieldError]:
    if count > most:
        return [FieldError(path, "TooMany", f"must have at most {most} items", count)]
    return []


def _validate_replica_specs(job: Job) -> list[FieldError]:
    if not job.has_replica_specs:
        return [FieldError(f"spec.{field_path.REPLICA_SPECS}", "Required", "must have replica specs")]
    errors: list[FieldError] = []
    launcher_path = field_path.replica_spec(ReplicaType.LAUNCHER)
    if job.launcher_spec is None:
        errors.append(FieldError(launcher_path, "Required", f"must have {ReplicaType.LAUNCHER} replica spec"))
    else:
        errors += _validate_replica_spec(job.launcher_spec, launcher_path)
        if job.launcher_spec.replicas != 1:
            errors.append(
                FieldError(f"{launcher_path}.replicas", "Invalid", "must be 1", job.launcher_spec.replicas)
            )
    worker_path = field_path.replica_spec(ReplicaType.WORKER)
    if job.worker_spec is not None:
        errors += _validate_replica_spec(job.worker_spec, worker_path)
        if job.worker_spec.replicas <= 0:
            errors.append(
                FieldError(
                    f"{worker_path}.replicas",
                    "Invalid",
                    "must be greater than or equal to 1",
                    job.worker_spec.replicas,
                )
            )
        elif job.worker_spec.replicas > limits.MAX_WORKERS:
            message = limits.MAX_WORKERS_MESSAGE
            errors.append(FieldError(f"{worker_path}.replicas", "Invalid", message, job.worker_spec.replicas))
    return errors


def _validate_replica_spec(spec: Replica, path: str) -> list[FieldError]:
    errors = _enum(spec.restart_policy, _RESTART_POLICIES, f"{path}.restartPolicy")
    problems = template_problems(spec.template, f"{path}.template")
    errors += [FieldError(field, "Forbidden", detail) for field, detail in problems]
    if problems:
        return errors
    pod = spec.template.get("spec")
    containers = pod.get("containers") if isinstance(pod, dict) else None
    if not containers:
        errors.append(
            FieldError(f"{path}.template.spec.containers", "Required", "must define at least one container")
        )
    return errors


def _validate_run_policy(job: Job, path: str) -> list[FieldError]:
    errors = _enum(job.clean_pod_policy, _CLEAN_POD_POLICIES, f"{path}.cleanPodPolicy")
    policy = job.run_policy
    for name, value, most in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished, limits.INT32_MAX),
        ("activeDeadlineSeconds", policy.active_deadline_seconds, INT64_MAX),
        ("backoffLimit", policy.backoff_limit, limits.INT32_MAX),
    ):
        if value is not None:
            errors += _non_negative(value, f"{path}.{name}") + _at_most(value, most, f"{path}.{name}")
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
            errors += _at_most(value, limits.INT32_MAX, f"{path}.{name}")
    return errors


def _enum(value: str, allowed: tuple[str, ...], path: str) -> list[FieldError]:
    if value in allowed:
        return []
    return [FieldError.not_supported(path, value, allowed)]


def _at_most(value: int, most: int, path: str) -> list[FieldError]:
    """The CRD's int32/int64 formats, which a request that bypassed the apiserver need not respect."""
    if value > most:
        return [FieldError(path, "Invalid", f"must be no more than {most}", value)]
    return []


def _non_negative(value: int, path: str) -> list[FieldError]:
    if value < 0:
        return [FieldError(path, "Invalid", "must be greater than or equal to 0", value)]
    return []
