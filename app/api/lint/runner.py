"""Run the lint rules: on a manifest as written (``mpijob lint``), or on a parsed job (the hook's Warning)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from app.api import field_path
from app.api.defaults import DEFAULT_SLOTS_PER_WORKER, Job, with_defaults
from app.api.lint import (
    command_rules,
    crd_rules,
    failure_rules,
    gang_rules,
    gpu_rules,
    metadata_rules,
    order_rules,
    reading,
    ssh_rules,
)
from app.api.lint.catalog import IGNORE_ANNOTATION, Rule
from app.api.lint.findings import Finding, Severity
from app.api.types import API_VERSION, KIND, OLD_API_VERSIONS, MPIJob


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
                field_path.join(e["loc"]),
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
    findings = [
        *crd_rules.rejections(job, defaulted, raw, validated=validated is not None),
        *metadata_rules.rejections(job),
        *_rules_on_raw(raw),
    ]
    findings += [f for check in _checks(defaulted, raw) for f in check(defaulted)]
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
    specs = reading.get(raw, "spec", "mpiReplicaSpecs")
    if not isinstance(specs, Mapping):
        return
    for name, spec in specs.items():
        if isinstance(spec, Mapping) and "slotsPerWorker" in spec:
            yield Finding(
                Rule.SLOTS_IN_REPLICA_SPEC,
                Severity.ERROR,
                f"{field_path.replica_spec(name)}.slotsPerWorker",
                "slotsPerWorker belongs to spec, not to a replica spec: kubectl apply rejects it as an"
                " unknown field, other clients drop it and the job runs with slotsPerWorker"
                f" {DEFAULT_SLOTS_PER_WORKER}",
                f"move it up: spec.slotsPerWorker: {spec['slotsPerWorker']}",
            )


# The checks read the defaulted job (``with_defaults``): what the hook would run, not what was written.
_CHECKS: tuple[Callable[[Job], Iterator[Finding]], ...] = (
    command_rules.np_mismatch,
    gpu_rules.gpu_slots_mismatch,
    gpu_rules.gpus_at_pod_level,
    gpu_rules.launcher_gpus_hidden,
    gpu_rules.gpus_held_after_finish,
    command_rules.orte_only_settings,
    command_rules.launcher_command,
    command_rules.worker_command,
    ssh_rules.hostnetwork_port_clash,
    ssh_rules.ssh_path_for_non_root,
    ssh_rules.ssh_path_for_root,
    failure_rules.failure_policy_unseen,
    failure_rules.failure_rule_unreachable,
    gang_rules.min_available_above_pods,
    order_rules.hostfile_order_not_followed,
)
# The rules that count workers: on a job whose Worker is only misspelled (``worker:``) they would advise on
# no workers at all (``use -n 0``); the unknown replica type is the one finding that helps then.
_COUNTING_WORKERS = frozenset({command_rules.np_mismatch, gang_rules.min_available_above_pods})


def _checks(job: Job, raw: Mapping[str, Any] | None) -> tuple[Callable[[Job], Iterator[Finding]], ...]:
    if job.worker_spec is None and crd_rules.unknown_replica_types(raw):
        return tuple(check for check in _CHECKS if check not in _COUNTING_WORKERS)
    return _CHECKS
