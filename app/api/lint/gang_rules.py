"""The rules about gang scheduling: a gang larger than the job never starts."""

from __future__ import annotations

from collections.abc import Iterator

from app.api.defaults import Job, gang_size
from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity

MIN_AVAILABLE = "spec.runPolicy.schedulingPolicy.minAvailable"


def min_available_above_pods(job: Job) -> Iterator[Finding]:
    """minAvailable is the PodGroup's minMember as given (upstream's ``calculateMinAvailable``): a gang
    scheduler then waits for more Pods than the job ever makes."""
    policy = job.run_policy.scheduling_policy
    wanted = policy.min_available if policy is not None else None
    pods = gang_size(None, job.worker_replicas)
    if wanted is not None and wanted > pods:
        yield Finding(
            Rule.MIN_AVAILABLE_ABOVE_PODS,
            Severity.WARNING,
            MIN_AVAILABLE,
            f"minAvailable {wanted} is more than the job's {pods} Pods (the launcher and"
            f" {job.worker_replicas} workers; runLauncherAsWorker adds none): under gang scheduling the"
            " PodGroup waits for Pods that never come and no Pod starts",
            f"set minAvailable to at most {pods}, or leave it out (the gang is then every Pod)",
        )
