"""Checks of the MPIJob itself: it exists, the hook has answered for it, it is valid, it may start."""

from __future__ import annotations

from app.api.types import API_VERSION, ConditionType
from app.cli.doctor import queueing, workload_api
from app.cli.doctor.facts import Facts
from app.cli.doctor.problems import Problem, check, one_line
from app.core.policies import suspension
from app.core.reasons import REASON_INVALID, REASON_TOPOLOGY_REFUSED
from app.kube.names import GANG_TOPOLOGY_ANNOTATION

# No condition this long after creation: the hook has not answered for the job.
SYNC_GRACE_SECONDS = 30
_RESUME = '{"spec":{"runPolicy":{"suspend":false}}}'


@check("job-not-found", "the MPIJob does not exist, or the cluster serves no MPIJobs (CRD not installed)")
def job_not_found(facts: Facts) -> Problem | None:
    snap = facts.snap
    if snap.job is not None:
        return None
    if not snap.served:
        return Problem(
            "job-not-found",
            f"the cluster serves no MPIJobs: {API_VERSION} is not an API it knows (the CRD is not installed)",
            (f"GET /apis/{API_VERSION}: 404 Not Found",),
            "install the operator (README: quick start), then apply the job again",
        )
    return Problem(
        "job-not-found",
        f"there is no MPIJob {snap.name} in namespace {snap.namespace}",
        (f"GET mpijobs.kubeflow.org {snap.namespace}/{snap.name}: 404 Not Found",),
        "kubectl get mpijobs -A finds it in another namespace (then -n NAMESPACE); or apply it",
    )


@check("invalid", "the hook's validation rejected the job (condition Invalid): nothing is created")
def invalid(facts: Facts) -> Problem | None:
    condition = facts.conditions.get(ConditionType.INVALID)
    if condition is None:
        return None
    return Problem(
        "invalid",
        f"MPIJob {facts.name} is invalid, so nothing is created: {one_line(condition.get('message'), 160)}",
        (
            f"condition Invalid=True ({condition.get('reason', REASON_INVALID)}):"
            f" {one_line(condition.get('message'))}",
        ),
        "correct the fields the message names (mpijob lint FILE shows each with its fix) and apply again",
    )


@check("not-synced", "no condition at all 30 s after creation: Metacontroller or the hook never answered")
def not_synced(facts: Facts) -> Problem | None:
    if facts.status.get("conditions") or facts.age(facts.raw) < SYNC_GRACE_SECONDS:
        return None
    snap = facts.snap
    children = [kind for kind, obj in (("Service", snap.service), ("ConfigMap", snap.config)) if obj]
    summary = f"MPIJob {facts.name} has no status {facts.age(facts.raw):.0f}s after it was created: "
    evidence: tuple[str, ...] = (
        f"MPIJob {facts.name}: no conditions, created {facts.raw['metadata'].get('creationTimestamp')}",
        f"children: {', '.join(children) if children else 'none (no Service, ConfigMap or Pods)'}",
    )
    unserved = workload_api.declared_unserved(snap.workload_apis, snap.controller_children)
    if unserved is not None and snap.workload_apis is not None:
        cause, fix = workload_api.stopped(snap.workload_apis, *unserved)
        served = workload_api.evidence(snap.workload_apis)
        return Problem("not-synced", summary + cause, (*evidence, *served), fix)
    if snap.controller_unreadable:
        evidence += (f"CompositeController {workload_api.CONTROLLER}: {snap.controller_unreadable}",)
    return Problem(
        "not-synced",
        summary + "the hook has not answered for it",
        evidence,
        "check that Metacontroller and the hook run and that the CompositeController exists:"
        f" kubectl get compositecontroller {workload_api.CONTROLLER}; kubectl -n metacontroller logs"
        " statefulset/metacontroller --tail=50; kubectl -n mpi-operator logs deployment/mpi-operator-hook"
        " --tail=50",
    )


@check("queued-by-kueue", "suspended with a Kueue queue: Kueue admits it, and its Workload says why it waits")
def queued_by_kueue(facts: Facts) -> Problem | None:
    queue = queueing.queue_of(facts.raw)
    if not queue or not _suspended(facts):
        return None
    workloads = facts.snap.workloads
    return Problem(
        "queued-by-kueue",
        f"MPIJob {facts.name} is {queueing.waiting_for(workloads, queue)}",
        (
            f"spec.runPolicy.suspend: true; label {queueing.QUEUE_LABEL}: {queue}",
            *queueing.evidence(workloads),
            *_suspended_evidence(facts),
        ),
        f"kubectl -n {facts.snap.namespace} describe workloads.kueue.x-k8s.io says what Kueue decided;"
        f" kubectl -n {facts.snap.namespace} get localqueue {queue}; kubectl get clusterqueues (quota,"
        " flavors)",
    )


@check("suspended", "spec.runPolicy.suspend is true (no Kueue queue): nothing runs until it is resumed")
def suspended(facts: Facts) -> Problem | None:
    if not _suspended(facts):
        return None
    return Problem(
        "suspended",
        f"MPIJob {facts.name} is suspended: it has no launcher and no workers until it is resumed",
        ("spec.runPolicy.suspend: true", *_suspended_evidence(facts)),
        f"kubectl patch mpijob {facts.name} --type merge -p '{_RESUME}'",
    )


def _suspended(facts: Facts) -> bool:
    """The hook's own ``suspension`` decision on the defaulted job."""
    return facts.job is not None and suspension.decide(facts.job).suspended


def _suspended_evidence(facts: Facts) -> tuple[str, ...]:
    condition = facts.conditions.get(ConditionType.SUSPENDED)
    return (f"condition Suspended=True since {condition.get('lastTransitionTime')}",) if condition else ()


@check(
    "gang-scheduling-unavailable",
    "gang scheduling is set but its PodGroup kind is not declared (condition GangSchedulingUnavailable)",
)
def gang_scheduling_unavailable(facts: Facts) -> Problem | None:
    condition = facts.conditions.get(ConditionType.GANG_SCHEDULING_UNAVAILABLE)
    if condition is None:
        return None
    if condition.get("reason") == REASON_TOPOLOGY_REFUSED:
        return Problem(
            "gang-scheduling-unavailable",
            f"MPIJob {facts.name} runs without its topology key: {one_line(condition.get('message'), 200)}",
            (f"condition GangSchedulingUnavailable=True ({REASON_TOPOLOGY_REFUSED})",),
            f"remove the annotation {GANG_TOPOLOGY_ANNOTATION}, or install the hook with"
            f" {workload_api.workload_overlays()}, Kubernetes' Workload API",
        )
    evidence: tuple[str, ...] = (
        f"condition GangSchedulingUnavailable=True ({condition.get('reason')}):"
        f" {one_line(condition.get('message'))}",
    )
    fix = (
        f"apply the gang scheduler's overlay ({workload_api.any_overlay()}), which declares the PodGroup"
        f" child, {workload_api.UNSET}"
    )
    apis = facts.snap.workload_apis
    if apis is not None and workload_api.about_the_workload_api(condition):
        evidence, fix = (*evidence, *workload_api.evidence(apis)), workload_api.undeclared_fix(apis)
    return Problem(
        "gang-scheduling-unavailable",
        f"MPIJob {facts.name} gets no PodGroup: {one_line(condition.get('message'), 200)}",
        evidence,
        fix,
    )
