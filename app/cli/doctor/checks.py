"""The doctor's fixed list of checks, in the order they are tried, and the verdict on one snapshot.

The first check that finds a problem names it; the order goes from the job itself, through its Pods, to
what the launcher meets and how the job ended, so the named problem is the cause, not a consequence
(a job whose workers cannot be scheduled also fails later; a wrong ``-np`` also fails the launcher).
docs/troubleshooting.md lists the same checks in the same order (tests/docs/test_doctor_docs.py keeps it so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.api.types import KUBEFLOW_JOB_CONTROLLER, ConditionType
from app.cli.doctor import checks_job as job
from app.cli.doctor import checks_launcher as launcher
from app.cli.doctor import checks_pods as pods
from app.cli.doctor.facts import Facts, condition, pod_name
from app.cli.doctor.problems import Check, Problem
from app.cli.doctor.snapshot import Snapshot
from app.kube import names
from app.kube.pod_phase import PodPhase

CHECKS: tuple[Check, ...] = (
    job.job_not_found,
    job.invalid,
    job.not_synced,
    job.queued_by_kueue,
    job.suspended,
    job.gang_scheduling_unavailable,
    pods.image_pull,
    pods.podgroup_cannot_be_met,
    pods.unschedulable,
    pods.scheduler_not_running,
    pods.pod_cannot_start,
    pods.oom_killed,
    launcher.np_mismatch,
    launcher.gpu_slots_mismatch,
    launcher.gpus_at_pod_level,
    launcher.launcher_gpus_hidden,
    launcher.worker_command,
    launcher.ssh_path_for_root,
    launcher.ssh_path_for_non_root,
    launcher.ssh_refused,
    launcher.ssh_permission_denied,
    launcher.host_not_resolved,
    launcher.workers_unreachable,
    launcher.launcher_sidecar,
    launcher.job_failed,
    launcher.launcher_retrying,
    launcher.job_restarting,
)


@dataclass(frozen=True)
class Diagnosis:
    job: str
    # The job's STATE (its last condition's type), or "" when it has none.
    stage: str
    problem: Problem | None
    # Healthy: what the job is doing or waiting for now.
    waiting_for: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "healthy": self.problem is None,
            "stage": self.stage,
            "problem": self.problem.as_dict() if self.problem else None,
            "waitingFor": self.waiting_for,
        }


def diagnose(snap: Snapshot) -> Diagnosis:
    facts = Facts(snap)
    where = f"{snap.namespace}/{snap.name}"
    managed_by = ((facts.raw.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    for entry in CHECKS:
        if managed_by not in (None, KUBEFLOW_JOB_CONTROLLER) and entry not in (
            job.job_not_found,
            job.invalid,
        ):
            return Diagnosis(
                where,
                facts.stage,
                None,
                f"{managed_by} runs it (spec.runPolicy.managedBy): the hook leaves it alone",
            )
        problem = entry(facts)
        if problem is not None:
            return Diagnosis(where, facts.stage, problem)
    return Diagnosis(where, facts.stage, None, waiting_for(facts))


def waiting_for(facts: Facts) -> str:
    """What a healthy job is doing now, in the order its life goes."""
    if ConditionType.SUCCEEDED in facts.conditions:
        return f"nothing: it succeeded at {facts.status.get('completionTime') or '?'}"
    launcher = facts.launcher_pods[0] if facts.launcher_pods else None
    if launcher is not None and (launcher.get("status") or {}).get("phase") == PodPhase.RUNNING:
        return f"mpirun, running in the launcher Pod {pod_name(launcher)}"
    if launcher is not None and any(
        c.running and c.name == names.WAIT_FOR_WORKERS_CONTAINER for c in facts.containers(launcher)
    ):
        return f"the launcher's wait-for-workers: every worker to answer ssh ({pod_name(launcher)})"
    wanted = facts.job.worker_replicas if facts.job is not None else 0
    ready = sum(1 for p in facts.workers if (condition(p, "Ready") or {}).get("status") == "True")
    if (
        facts.snap.launcher is None
        and facts.job is not None
        and facts.job.launcher_creation_policy == "WaitForWorkersReady"
    ):
        return f"{ready} of {wanted} workers Ready: the launcher Job comes once all are (WaitForWorkersReady)"
    return f"the Pods to start: {ready} of {wanted} workers Ready, launcher {_phase(launcher)}"


def _phase(pod: dict[str, Any] | None) -> str:
    return str((pod.get("status") or {}).get("phase") or PodPhase.PENDING) if pod else "not created yet"
