"""Kueue, as the doctor reads it: the job's Workloads and what Kueue says in their conditions.

Kueue labels an MPIJob with ``kueue.x-k8s.io/queue-name`` to queue it, keeps it suspended until it admits
it, and writes why it waits (or why it evicted the job) only on the Workload it makes for the job, labelled
with the job's UID. The hook never reads Workloads (they are not its children); the doctor quotes them, so a
user reads Kueue's own words ("LocalQueue q doesn't exist", "Exceeded the PodsReady timeout ...").
"""

from __future__ import annotations

from typing import Any

from app.cli.terminal import printable

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
WORKLOADS = "workloads"
# Newest first: v1beta2 (what Kueue v0.17.0 stores), then v1beta1 (what older releases serve).
WORKLOAD_API_VERSIONS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
_MESSAGE = 300  # characters of a Kueue message quoted


def queue_of(job: dict[str, Any] | None) -> str:
    """The Kueue queue the job names ('' when none)."""
    return str((((job or {}).get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL) or "")


def _conditions(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    listed = (workload.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in listed if isinstance(c, dict)}


def _quoted(condition: dict[str, Any]) -> str:
    return printable(str(condition.get("message") or condition.get("reason") or ""), _MESSAGE).rstrip(" .")


def waiting_for(workloads: list[dict[str, Any]], queue: str) -> str:
    """What Kueue says the job waits for, in its own words, from the newest Workload's conditions (to follow
    "MPIJob NAME is")."""
    queue = printable(queue, 63)
    if not workloads:
        return (
            f"waiting for Kueue, which has made no Workload for it (queue {queue}): is Kueue running, with"
            " its kubeflow.org/mpijob integration enabled?"
        )
    newest = max(workloads, key=lambda w: str((w.get("metadata") or {}).get("creationTimestamp") or ""))
    conditions = _conditions(newest)
    evicted, reserved = conditions.get("Evicted", {}), conditions.get("QuotaReserved", {})
    if evicted.get("status") == "True":
        reason = printable(str(evicted.get("reason")), 80)
        return f"waiting for Kueue, which evicted it ({reason}): {_quoted(evicted)}"
    if reserved.get("status") == "False" and _quoted(reserved):
        return f"waiting for Kueue: {_quoted(reserved)}"
    return f"waiting for Kueue to admit it from queue {queue}"


def evidence(workloads: list[dict[str, Any]]) -> tuple[str, ...]:
    """One line per condition of each Workload, as ``kubectl describe workload`` would show them."""
    lines = []
    for workload in workloads:
        name = printable(str((workload.get("metadata") or {}).get("name")), 120)
        for kind, condition in _conditions(workload).items():
            lines.append(
                f"Workload {name}: {printable(kind, 60)}={printable(str(condition.get('status')), 10)}"
                f" {printable(str(condition.get('reason') or ''), 80)}: {_quoted(condition)}"
            )
    return tuple(lines)
