"""Checks of the job's Pods: can they be scheduled, pulled, started, and did the kernel kill one."""

from __future__ import annotations

import re
from typing import Any

from app.api.defaults import gang_size
from app.api.types import ReplicaType
from app.cli.doctor.facts import Container, Facts, condition, parse_time, pod_name, role
from app.cli.doctor.problems import Problem, check, one_line
from app.core.observed import GangWait
from app.core.policies import failure as failures
from app.kube.gang import POD_UNSCHEDULABLE, topology_key
from app.kube.names import GANG_TOPOLOGY_ANNOTATION
from app.kube.pod_phase import PodPhase
from app.kube.request import ObservedPod

# A Pod this long without a scheduler's verdict: no scheduler is looking at it.
SCHEDULE_GRACE_SECONDS = 20
# A volume the kubelet has not mounted this long after the Pod was scheduled is stuck; before, a FailedMount
# is often the kubelet's own cache catching up ("failed to sync secret cache"), which it retries.
MOUNT_GRACE_SECONDS = 30
DEFAULT_SCHEDULER = "default-scheduler"
_PULL = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
_CANNOT_START = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})
_STUCK_EVENTS = frozenset({"FailedMount", "FailedAttachVolume", "FailedCreatePodSandBox"})
_INSUFFICIENT = re.compile(r"Insufficient (\S+?)[.,]?(?:\s|$)")


def _by_name(facts: Facts) -> list[dict[str, Any]]:
    """Workers by index, then the launcher's Pods."""
    return sorted(facts.workers, key=lambda p: (len(pod_name(p)), pod_name(p))) + facts.launcher_pods


def _container_spec(pod: dict[str, Any], name: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return next((c for c in containers if c.get("name") == name), {})


def _last_warning(
    facts: Facts, pod: str, reasons: frozenset[str] | None = None, *, kind: str = "Pod", uid: str = ""
) -> tuple[str, ...]:
    """The newest Warning about the Pod ``pod`` (or the ``kind`` object, ``uid`` when given)."""
    events = [e for e in facts.events(pod, uid=uid) if reasons is None or e.get("reason") in reasons]
    if not events:
        return ()
    event = events[-1]
    count = f" (x{event['count']})" if (event.get("count") or 1) > 1 else ""
    return (f"Event {event.get('reason')}{count} on {kind} {pod}: {one_line(event.get('message'))}",)


@check(
    "image-pull", "a container's image cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName)"
)
def image_pull(facts: Facts) -> Problem | None:
    for pod in _by_name(facts):
        for container in facts.containers(pod):
            reason = container.waiting.get("reason")
            if reason not in _PULL:
                continue
            image = _container_spec(pod, container.name).get("image") or container.status.get("image")
            return Problem(
                "image-pull",
                f"{role(pod)} {pod_name(pod)} cannot pull image {image} ({reason})",
                (
                    f"Pod {pod_name(pod)}, container {container.name}: waiting, {reason}:"
                    f" {one_line(container.waiting.get('message'))}",
                    *_last_warning(facts, pod_name(pod), frozenset({"Failed"})),
                ),
                "correct the image name or tag in the pod template (does it exist in the registry?); a"
                " private registry needs spec.imagePullSecrets in the template",
            )
    return None


@check(
    "unschedulable",
    "the scheduler finds no node for a Pod: insufficient cpu, memory or GPUs, a node selector or affinity no"
    " node matches, an untolerated taint, an unbound volume",
)
def unschedulable(facts: Facts) -> Problem | None:
    for pod in _by_name(facts):
        scheduled = condition(pod, "PodScheduled")
        if scheduled is None or scheduled.get("status") != "False":
            continue
        message = str(scheduled.get("message") or "")
        return Problem(
            "unschedulable",
            f"{role(pod)} {pod_name(pod)} cannot be scheduled: {one_line(message, 160)}",
            (
                f"Pod {pod_name(pod)}: PodScheduled=False ({scheduled.get('reason')}) since"
                f" {scheduled.get('lastTransitionTime')}: {one_line(message)}",
                *_last_warning(facts, pod_name(pod), frozenset({"FailedScheduling"})),
            ),
            _scheduling_fix(pod, str(scheduled.get("reason")), message),
        )
    return None


def _scheduling_fix(pod: dict[str, Any], reason: str, message: str) -> str:
    if reason == "SchedulingGated":
        gates = ", ".join(g.get("name", "") for g in (pod.get("spec") or {}).get("schedulingGates") or [])
        return (
            f"the Pod waits for its scheduling gates ({gates}) to be removed by whoever set them (e.g. Kueue)"
        )
    short = sorted(set(_INSUFFICIENT.findall(message)))
    if short:
        asks = "; ".join(f"{r}: {_requested(pod, r)}" for r in short)
        return (
            f"no node has enough {', '.join(short)} for one {role(pod)} (each asks {asks}): lower the"
            " requests in its pod template, or add nodes that have that much free"
        )
    if "affinity/selector" in message:
        return "no node matches the pod template's nodeSelector or affinity: kubectl get nodes --show-labels"
    if "taint" in message:
        return "the nodes have taints the Pod does not tolerate: add tolerations to the pod template"
    if "PersistentVolumeClaim" in message:
        return "a volume's PersistentVolumeClaim is unbound or missing: kubectl get pvc"
    return "kubectl describe pod shows the scheduler's reasons for each node"


def _requested(pod: dict[str, Any], resource: str) -> str:
    """What the Pod's containers ask for of ``resource``, requests (else limits) as the scheduler counts."""
    amounts = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        value = (resources.get("requests") or {}).get(resource) or (resources.get("limits") or {}).get(
            resource
        )
        if value:
            amounts.append(str(value))
    return " + ".join(amounts) or "?"


def _gang_minimum(spec: dict[str, Any]) -> tuple[Any, str]:
    """A PodGroup's gang size and its field: ``minMember``, or the Workload API's ``minCount``."""
    if "minMember" in spec:
        return spec["minMember"], "minMember"
    policy = spec.get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, dict) else None
    return (gang.get("minCount"), "schedulingPolicy.gang.minCount") if isinstance(gang, dict) else (None, "")


@check(
    "podgroup-cannot-be-met",
    "the job's PodGroup asks for more Pods than the job has, or its scheduler holds the gang (condition"
    " GangScheduled=False): checked before a Pod's own scheduling, which the held gang explains",
)
def podgroup_cannot_be_met(facts: Facts) -> Problem | None:
    pods = gang_size(None, facts.job.worker_replicas) if facts.job is not None else len(facts.pods)
    for group in facts.snap.podgroups:
        kind = str(group.get("apiVersion", "PodGroup"))
        minimum, field = _gang_minimum(group.get("spec") or {})
        if isinstance(minimum, int) and minimum > pods:
            return Problem(
                "podgroup-cannot-be-met",
                f"PodGroup {facts.name} ({kind}) needs {minimum} Pods together but the job has {pods}:"
                " the gang never starts",
                (f"PodGroup {facts.name}: spec.{field} {minimum}; the job: {pods} Pods (launcher, workers)",),
                "lower spec.runPolicy.schedulingPolicy.minAvailable to at most the job's Pods, or unset it",
            )
        waiting = facts.observed.gang_wait(kind)  # the hook's own reading (GangScheduled=False)
        if waiting is not None:
            return _gang_held(facts, group, waiting, minimum if isinstance(minimum, int) else None)
    return None


def _gang_held(facts: Facts, group: dict[str, Any], waiting: GangWait, minimum: int | None) -> Problem:
    kind = str(group.get("apiVersion", "PodGroup"))
    uid = str((group.get("metadata") or {}).get("uid", ""))
    if waiting.unplaced:  # scheduler-plugins: a phase only; the Pod's line below says why
        held = f"phase {waiting.phase}, {waiting.reason}: {waiting.unplaced} worker(s) not placed"
    else:
        phase = f"phase {waiting.phase}, " if waiting.phase and waiting.message else ""
        held = f"{phase}{waiting.reason}: {one_line(waiting.message)}"
    said = waiting.message or held
    unplaced = next((p for p in _by_name(facts) if _refused(p)), None)
    evidence = [f"PodGroup {facts.name} ({kind}): {held}"]
    if unplaced is not None:
        scheduled = condition(unplaced, "PodScheduled") or {}
        evidence.append(
            f"Pod {pod_name(unplaced)}: PodScheduled=False ({scheduled.get('reason')}):"
            f" {one_line(scheduled.get('message'))}"
        )
    return Problem(
        "podgroup-cannot-be-met",
        f"the scheduler holds the gang of PodGroup {facts.name} ({waiting.reason}): {one_line(said, 160)}",
        (*evidence, *_last_warning(facts, facts.name, kind="PodGroup", uid=uid)),
        _gang_fix(facts, waiting, minimum),
    )


def _refused(pod: dict[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled") or {}
    return scheduled.get("status") == "False" and scheduled.get("reason") == POD_UNSCHEDULABLE


def _gang_fix(facts: Facts, waiting: GangWait, minimum: int | None) -> str:
    """Where the gang's Pods cannot all fit at once: one topology domain too small, or the cluster."""
    metadata = facts.raw.get("metadata") or {}
    key = topology_key(metadata.get("annotations") or {})
    if key and _NO_PLACEMENT in waiting.message.lower():
        return (
            f"no one value of the node label {key} (the annotation {GANG_TOPOLOGY_ANNOTATION}) has room for"
            f" the whole gang: check that the nodes carry it (kubectl get nodes -L {key}) and that one"
            " domain has the capacity, or fix or remove the annotation"
        )
    gang = f"all {minimum} Pods" if minimum is not None else "all its Pods"
    queue = (
        f" (in the queue's capability too: kubectl get queues.scheduling.volcano.sh {waiting.queue} -o yaml)"
        if waiting.queue
        else ""
    )
    return (
        f"the gang starts only when {gang} fit at once{queue}: free capacity (or wait for the jobs that hold"
        " it), lower the Pods' requests or the workers, or lower spec.runPolicy.schedulingPolicy.minAvailable"
    )


# The Workload API's message when a topology constraint leaves no domain for the whole gang.
_NO_PLACEMENT = "no feasible placement"


@check(
    "scheduler-not-running",
    "Pods no scheduler looks at: their schedulerName (or the gang scheduler) is not running",
)
def scheduler_not_running(facts: Facts) -> Problem | None:
    waiting = [
        p for p in _by_name(facts)
        if (p.get("status") or {}).get("phase") == PodPhase.PENDING
        and not (p.get("spec") or {}).get("nodeName")
        and condition(p, "PodScheduled") is None and facts.age(p) >= SCHEDULE_GRACE_SECONDS
    ]  # fmt: skip
    if not waiting:
        return None
    pod = waiting[0]
    scheduler = (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER
    evidence = [
        f"Pod {pod_name(p)}: schedulerName {(p.get('spec') or {}).get('schedulerName') or DEFAULT_SCHEDULER},"
        f" Pending for {facts.age(p):.0f}s, no PodScheduled condition and no scheduling Event"
        for p in waiting[:3]
    ]
    evidence += [
        f"PodGroup {facts.name} ({g.get('apiVersion')}): no status"
        for g in facts.snap.podgroups
        if not g.get("status")
    ]
    return Problem(
        "scheduler-not-running",
        f"no scheduler has looked at {plural_pods(len(waiting))} for {facts.age(pod):.0f}s: is {scheduler}"
        " running?",
        tuple(evidence),
        f"start {scheduler} (kubectl get pods -A | grep -i {scheduler.split('-')[0]}), or remove"
        " schedulerName from the pod templates (and MPI_OPERATOR_GANG_SCHEDULING, if gang scheduling set it)"
        if scheduler != DEFAULT_SCHEDULER
        else "kube-scheduler is not running or not keeping up: kubectl -n kube-system get pods",
    )


def plural_pods(count: int) -> str:
    return "1 Pod" if count == 1 else f"{count} Pods"


@check(
    "pod-cannot-start",
    "a container cannot be created or started (config error, missing volume, sandbox), or a worker"
    " crash-loops",
)
def pod_cannot_start(facts: Facts) -> Problem | None:
    for pod in _by_name(facts):
        for container in facts.containers(pod):
            reason = container.waiting.get("reason", "")
            if reason in _CANNOT_START or (reason == "CrashLoopBackOff" and role(pod) == "worker"):
                return _cannot_start(facts, pod, container, reason)
        if _stuck_creating(facts, pod):
            return Problem(
                "pod-cannot-start",
                f"{role(pod)} {pod_name(pod)} is scheduled but its containers do not start",
                _last_warning(facts, pod_name(pod), _STUCK_EVENTS),
                "the Event names what is missing (a Secret, ConfigMap or volume); kubectl describe pod",
            )
    return None


def _cannot_start(facts: Facts, pod: dict[str, Any], container: Container, reason: str) -> Problem:
    terminated = ((container.status.get("lastState") or {}).get("terminated")) or {}
    evidence = [
        f"Pod {pod_name(pod)}, container {container.name}: waiting, {reason}:"
        f" {one_line(container.waiting.get('message'))}"
    ]
    if terminated:
        evidence.append(
            f"last run: exit code {terminated.get('exitCode')} ({terminated.get('reason')}):"
            f" {one_line(terminated.get('message') or '')}"
        )
    return Problem(
        "pod-cannot-start",
        f"{role(pod)} {pod_name(pod)}: container {container.name} cannot start ({reason})",
        (*evidence, *_last_warning(facts, pod_name(pod))),
        "kubectl describe pod and kubectl logs --previous say why; a worker must keep sshd running"
        if reason == "CrashLoopBackOff"
        else "the message names what is missing or wrong in the pod template (a Secret or ConfigMap key,"
        " the command)",
    )


def _stuck_creating(facts: Facts, pod: dict[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled")
    pending = (pod.get("status") or {}).get("phase") == PodPhase.PENDING
    since = parse_time((scheduled or {}).get("lastTransitionTime"))
    return bool(
        pending
        and scheduled
        and scheduled.get("status") == "True"
        and (since is None or (facts.now - since).total_seconds() >= MOUNT_GRACE_SECONDS)
        and _last_warning(facts, pod_name(pod), _STUCK_EVENTS)
    )


@check("oom-killed", "a container went over its memory limit and the kernel killed it (OOMKilled)")
def oom_killed(facts: Facts) -> Problem | None:
    pods: list[tuple[ReplicaType, ObservedPod]] = [
        *((ReplicaType.WORKER, facts.observed.workers[i]) for i in sorted(facts.observed.workers)),
        *((ReplicaType.LAUNCHER, p) for p in facts.observed.launcher_pods or []),
    ]
    for replica, observed in pods:
        failure = failures.pod_failure(replica, observed)  # the hook's own classification
        ended = failure.exit
        if ended is None or failure.cause != failures.Cause.OOM_KILLED:
            continue
        limit = _limit(facts, ended.pod, ended.container)
        return Problem(
            "oom-killed",
            f"{failure.describe()}: it used more memory than its limit ({limit})",
            (
                f"Pod {ended.pod}, container {ended.container}: terminated, exit code {ended.code},"
                f" reason {ended.reason}",
            ),
            f"raise resources.limits.memory of container {ended.container} in the {replica.value} template"
            f" (now {limit}), or make the program use less",
        )
    return None


def _limit(facts: Facts, pod: str, container: str) -> str:
    found = next((p for p in facts.pods if pod_name(p) == pod), {})
    resources = _container_spec(found, container).get("resources") or {}
    return str((resources.get("limits") or {}).get("memory") or "no memory limit")
