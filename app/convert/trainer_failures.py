"""``spec.failurePolicy`` (ours) as JobSet's failurePolicy plus each Job's podFailurePolicy.

The hook's policy decides on a failed Pod: the first rule whose replica type, exit code and Pod conditions
match says fail, restart counted, or restart uncounted; no match is a counted restart; a counted restart
beyond ``maxRestarts`` fails the job; a restart deletes every Pod of the attempt and waits until they are
gone. JobSet decides on a failed *Job*, by its failure reason and message, which is where the Pods' criteria
come back in:

* each replicated Job gets ``backoffLimit: 0`` (workers) so that its first failed Pod fails it;
* each rule with criteria becomes a podFailurePolicy ``FailJob`` rule on the Jobs of its replica types, and
  a JobSet rule that recognises that Job rule by its index in the failure message (Kubernetes writes
  ``... matching FailJob rule at index <k>``) and takes the rule's action;
* a rule without criteria matches any failure of its Jobs, and ends the list for them;
* ``maxRestarts`` is JobSet's, JobSet's default action is a counted restart, and ``BlockingRecreate``
  waits until the old Jobs are gone before the new ones start, as the hook does.

What cannot be said this way is left out, each with a note: Kubernetes applies a podFailurePolicy only to
Pods with ``restartPolicy: Never``, and one of its rules matches exit codes or Pod conditions, not both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.api.defaults import Job, Replica
from app.api.types import FailureAction, FailurePolicyRule, ReplicaType, RestartPolicy
from app.children import pods
from app.convert import trainer

_ACTIONS = {
    FailureAction.FAIL_JOB: "FailJobSet",
    FailureAction.RESTART_JOB: "RestartJobSet",
    FailureAction.RESTART_JOB_AND_IGNORE_MAX_RESTARTS: "RestartJobSetAndIgnoreMaxRestarts",
}
JOBS = ((trainer.LAUNCHER_JOB, ReplicaType.LAUNCHER), (trainer.NODE_JOB, ReplicaType.WORKER))


@dataclass
class FailureMapping:
    """JobSet's ``spec.failurePolicy`` (None: the job has no policy) and each Job's podFailurePolicy rules."""

    jobset: dict[str, Any] | None = None
    pod_rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def map_failure_policy(job: Job) -> FailureMapping:
    if not job.has_failure_policy:
        return FailureMapping()
    mapping = FailureMapping(pod_rules={name: [] for name, _ in JOBS})
    rules: list[dict[str, Any]] = []
    for name, kind in JOBS:
        replica = job.replica(kind)
        for index, rule in enumerate(job.failure_rules):
            if rule.replica_types and kind.value not in rule.replica_types:
                continue
            entry = _jobset_rule(index, rule, name, replica, mapping)
            if entry is not None:
                rules.append(entry)
                if "onJobFailureReasons" not in entry:
                    break  # it matches every failure of this Job: later rules never see one
    mapping.jobset = {"maxRestarts": job.max_restarts, "restartStrategy": "BlockingRecreate"}
    if rules:
        mapping.jobset["rules"] = rules
    return mapping


def _jobset_rule(
    index: int, rule: FailurePolicyRule, job_name: str, replica: Replica | None, mapping: FailureMapping
) -> dict[str, Any] | None:
    where = f"spec.failurePolicy.rules[{index}]"
    entry: dict[str, Any] = {
        "name": f"rule{index}_{job_name}",
        "action": _ACTIONS[FailureAction(rule.action or FailureAction.RESTART_JOB)],
        "targetReplicatedJobs": [job_name],
    }
    criteria = pod_criteria(rule)
    if criteria is None:
        return entry
    if len(criteria) > 1:
        mapping.notes.append(
            f"{where}: not carried: a Kubernetes podFailurePolicy rule matches onExitCodes or"
            " onPodConditions, not both; split it into two rules"
        )
        return None
    policy = pods.restart_policy(replica.restart_policy) if replica is not None else ""
    if policy != RestartPolicy.NEVER:
        mapping.notes.append(
            f"{where}: not carried for the {job_name} Job: Kubernetes applies a podFailurePolicy only to Pods"
            f" with restartPolicy Never ({job_name}'s is {policy}); set it to Never to keep the rule"
        )
        return None
    job_rules = mapping.pod_rules[job_name]
    job_rules.append({"action": "FailJob", **criteria})
    pattern = trainer.POD_FAILURE_MESSAGE_PATTERN.format(index=len(job_rules) - 1)
    entry["onJobFailureReasons"] = [trainer.POD_FAILURE_POLICY_REASON]
    entry["onJobFailureMessagePatterns"] = [pattern]
    return entry


def pod_criteria(rule: FailurePolicyRule) -> dict[str, Any] | None:
    """The rule's criteria as podFailurePolicy fields; None when it has none (it matches every failure)."""
    criteria: dict[str, Any] = {}
    codes = rule.on_exit_codes
    if codes is not None:
        # Kubernetes wants the values ordered; validation already refused repeats and 0 with In.
        criteria["onExitCodes"] = {"operator": codes.operator, "values": sorted(codes.values or [])}
    if rule.on_pod_conditions:
        criteria["onPodConditions"] = [{"type": kind, "status": "True"} for kind in rule.on_pod_conditions]
    return criteria or None
