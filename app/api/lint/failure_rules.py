"""The rules about the failure policy: failures it never sees, and rules it never reaches."""

from __future__ import annotations

from collections.abc import Iterator

from app.api.defaults import Job
from app.api.lint import reading
from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity
from app.api.types import ReplicaType


def failure_policy_unseen(job: Job) -> Iterator[Finding]:
    worker = job.worker_spec
    if job.has_failure_policy and worker is not None and worker.restart_policy == "OnFailure":
        yield Finding(
            Rule.FAILURE_POLICY_UNSEEN,
            Severity.WARNING,
            f"{reading.WORKER}.restartPolicy",
            "spec.failurePolicy is set but the workers' restartPolicy is OnFailure: the kubelet restarts a"
            " failed worker container in place and its Pod never fails, so the failure policy only sees"
            " the launcher give up",
            f"set {reading.WORKER}.restartPolicy: Never (the default)",
        )


def failure_rule_unreachable(job: Job) -> Iterator[Finding]:
    """A rule with no exit codes and no Pod conditions matches every failure of its replica types: a later
    rule for no other replica type is never reached (the first match wins)."""
    rules = job.failure_rules
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
