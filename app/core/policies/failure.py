"""The failure policy (ours): which failure of the current attempt counts, and whether it restarts the job.

An attempt is the launcher Job and the worker Pods labelled with one ``restartAttempt``. A restart moves
the job to the next attempt: the deciding sync writes the status that names it; once that status is
stored, every child of the old attempt is left out of the response (Metacontroller deletes it), and the
new one is created only once nothing of the old one is left, under the same names, so two attempts never
run side by side and the hostfile stays valid. The status is the record: the failure that decides is
always one of the *current* attempt, so a repeated sync (or one that sees a stale status) decides the same
thing again, and a Pod of an old attempt can never cause a second restart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from app.api.defaults import Job
from app.api.types import ExitCodeOperator, FailureAction, FailurePolicyRule, ReplicaType
from app.core.observed import Exit, LauncherJobOutcome, Observed, failed_exit, newest_failed_pod
from app.core.reasons import POD_EVICTED, REASON_DEADLINE_EXCEEDED, REASON_FAIL_JOB_RULE, REASON_MAX_RESTARTS
from app.kube import names
from app.kube.gang import DISRUPTION_TARGET
from app.kube.pod_phase import PodPhase
from app.kube.request import ObservedPod


class Cause(StrEnum):
    """Why a Pod failed, in a few words a dashboard can group by (the Restarting reason and metric)."""

    OOM_KILLED = "OOMKilled"
    EVICTED = POD_EVICTED
    DISRUPTED = "Disrupted"
    DEADLINE_EXCEEDED = REASON_DEADLINE_EXCEEDED
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class PodFailure:
    """A failed Pod of the current attempt: enough to match a rule and to tell the user."""

    replica: ReplicaType
    pod: str
    # How its container ended, if one ended with a non-zero code.
    exit: Exit | None
    # The Pod's condition types that are True (DisruptionTarget, ...).
    conditions: frozenset[str]
    # The kubelet's Pod-level reason (Evicted, DeadlineExceeded, ...).
    pod_reason: str = ""

    @property
    def cause(self) -> Cause:
        if self.exit is not None and self.exit.reason == Cause.OOM_KILLED:
            return Cause.OOM_KILLED
        if self.pod_reason == POD_EVICTED:
            return Cause.EVICTED
        if DISRUPTION_TARGET in self.conditions:
            return Cause.DISRUPTED
        if self.pod_reason == REASON_DEADLINE_EXCEEDED:
            return Cause.DEADLINE_EXCEEDED
        return Cause.ERROR

    @property
    def reason(self) -> str:
        """``WorkerOOMKilled``, ``LauncherError``, ...: the Restarting condition's reason."""
        return f"{self.replica.value}{self.cause.value}"

    def describe(self) -> str:
        """``worker pi-worker-1: container worker exited with code 137 (OOMKilled)``."""
        what = f"{self.replica.value.lower()} {self.pod}"
        if self.exit is not None:
            reason = f" ({self.exit.reason})" if self.exit.reason else ""
            return f"{what}: container {self.exit.container} exited with code {self.exit.code}{reason}"
        if self.pod_reason:
            return f"{what}: {self.pod_reason}"
        if DISRUPTION_TARGET in self.conditions:
            return f"{what}: {DISRUPTION_TARGET}"
        return f"{what} failed"


class Action(StrEnum):
    FAIL = "fail"
    RESTART = "restart"


@dataclass(frozen=True, slots=True)
class Ruling:
    """What the policy does with a failure."""

    action: Action
    # A restart counted against maxRestarts.
    counted: bool
    # Why, for the condition's message: which rule matched, or that the limit is reached.
    why: str
    # The Failed condition's reason when the job fails.
    reason: str = ""


@dataclass(frozen=True)
class Restarts:
    """The failure policy's decision for one sync. Without a policy: every child counts, nothing else."""

    # The children that count: the current attempt's.
    current: Observed
    # Children of an older attempt still exist: they are being deleted, and the next attempt waits.
    in_flight: bool = False
    # The attempt of the children this response returns (their label, ``MPIJOB_RESTART_ATTEMPT``).
    attempt: int | None = None
    # What the status records after this sync: (restartAttempt, restartCount).
    recorded: tuple[int, int] | None = None
    # The failure that decides in this sync, and what the policy does with it.
    failure: PodFailure | None = None
    ruling: Ruling | None = None

    @property
    def restarting(self) -> bool:
        """This sync restarts the job: the status it writes starts the next attempt."""
        return self.ruling is not None and self.ruling.action == Action.RESTART

    @property
    def fails(self) -> bool:
        return self.ruling is not None and self.ruling.action == Action.FAIL


def decide(job: Job, observed: Observed, *, finished_before: bool, suspended: bool) -> Restarts:
    """``finished_before``: the stored status says so (the record stays, every child counts). No failure
    decides while the job is ``suspended``."""
    if not job.has_failure_policy:
        return Restarts(observed)
    attempt, count = job.status.restarts
    if finished_before:
        return Restarts(observed, attempt=attempt, recorded=(attempt, count))
    current, in_flight = current_attempt(observed, attempt)
    failure, ruling = _deciding_failure(job, current, waiting=suspended or in_flight)
    restarting = ruling is not None and ruling.action == Action.RESTART
    recorded = (
        (attempt + 1, count + ruling.counted) if ruling is not None and restarting else (attempt, count)
    )
    return Restarts(current, in_flight, attempt, recorded, failure, ruling)


def _deciding_failure(
    job: Job, current: Observed, *, waiting: bool
) -> tuple[PodFailure | None, Ruling | None]:
    """The failure of the current attempt that decides, and the ruling on it. None while ``waiting`` (an
    old attempt still being deleted, or suspended) or once the launcher ended the job: one that succeeded
    has succeeded, whatever its workers did since; one past activeDeadlineSeconds has failed (the deadline
    is the job's, not an attempt's)."""
    launcher = current.launcher_job_state
    if waiting or (launcher is not None and launcher.ends_job):
        return None, None
    failure = first_failure(current, job.worker_replicas)
    return failure, (rule_on(job, failure, job.status.restarts[1]) if failure is not None else None)


def rule_on(job: Job, failure: PodFailure, restarts: int) -> Ruling:
    """The first rule that matches decides; no match is a counted restart, as RestartJob."""
    action, which = FailureAction.RESTART_JOB, "no rule matched"
    for index, rule in enumerate(job.failure_rules):
        if matches(rule, failure):
            action, which = (
                FailureAction(rule.action or FailureAction.RESTART_JOB),
                f"rule {index} ({rule.action}) matched",
            )
            break
    if action == FailureAction.FAIL_JOB:
        return Ruling(Action.FAIL, False, which, REASON_FAIL_JOB_RULE)
    if action == FailureAction.RESTART_JOB_AND_IGNORE_MAX_RESTARTS:
        return Ruling(Action.RESTART, False, f"{which}; not counted")
    if restarts >= job.max_restarts:
        why = f"{which}, and {restarts} of maxRestarts {job.max_restarts} restarts are used"
        return Ruling(Action.FAIL, False, why, REASON_MAX_RESTARTS)
    return Ruling(Action.RESTART, True, f"{which}; restart {restarts + 1} of {job.max_restarts}")


def matches(rule: FailurePolicyRule, failure: PodFailure) -> bool:
    """Every criterion the rule gives holds (a rule with none matches every failure of its replicas)."""
    if rule.replica_types and failure.replica.value not in rule.replica_types:
        return False
    codes = rule.on_exit_codes
    if codes is not None:
        code = failure.exit.code if failure.exit is not None else None
        inside = code in (codes.values or [])
        if code is None or inside != (codes.operator == ExitCodeOperator.IN):
            return False
    wanted = rule.on_pod_conditions
    return not wanted or any(kind in failure.conditions for kind in wanted)


# --- attempts ----------------------------------------------------------------------------------------


def attempt_of(labels: dict[str, str]) -> int:
    """A child's attempt; one without the label (created before the policy was set) is attempt 0."""
    value = labels.get(names.RESTART_ATTEMPT_LABEL, "0")
    return int(value) if value.isascii() and value.isdigit() else -1


def current_attempt(observed: Observed, attempt: int) -> tuple[Observed, bool]:
    """The observed children of ``attempt``, and whether any of another attempt still exists."""
    workers = {i: pod for i, pod in observed.workers.items() if attempt_of(pod.metadata.labels) == attempt}
    stale = len(workers) < len(observed.workers)
    launcher_job = observed.launcher_job
    if launcher_job is not None and attempt_of(launcher_job.metadata.labels) != attempt:
        stale, launcher_job = True, None
    launcher_pods = observed.launcher_pods
    if launcher_pods is not None:
        # An old launcher Job is deleted in the background: its Pod may still run mpirun for a while.
        current = [pod for pod in launcher_pods if attempt_of(pod.metadata.labels) == attempt]
        stale = stale or len(current) < len(launcher_pods)
        launcher_pods = current
    return replace(observed, launcher_job=launcher_job, workers=workers, launcher_pods=launcher_pods), stale


# --- failures ----------------------------------------------------------------------------------------


def first_failure(observed: Observed, workers: int) -> PodFailure | None:
    """The failure that decides: the first failed or disrupted worker of the ``workers`` wanted (a launcher
    usually fails because a worker did; a surplus worker being scaled away is no failure), else, once the
    launcher Job has failed (its Failed condition: a launcher Pod it still retries is no failure of the
    job), its newest failed Pod. The doctor asks this too, so both name the same failure."""
    for index in sorted(i for i in observed.workers if i < workers):
        pod = observed.workers[index]
        if pod.phase == PodPhase.FAILED or DISRUPTION_TARGET in _true_conditions(pod):
            return pod_failure(ReplicaType.WORKER, pod)
    launcher = observed.launcher_job_state
    if launcher is None or launcher.outcome != LauncherJobOutcome.FAILED:
        return None
    newest = newest_failed_pod(observed.launcher_pods or [])
    if newest is not None:
        return pod_failure(ReplicaType.LAUNCHER, newest)
    name = observed.launcher_job.metadata.name if observed.launcher_job is not None else ""
    return PodFailure(ReplicaType.LAUNCHER, name, None, frozenset())


def pod_failure(replica: ReplicaType, pod: ObservedPod) -> PodFailure:
    """How ``pod`` failed, as the policy matches and describes it."""
    reason = (pod.status.reason if pod.status else None) or ""
    return PodFailure(replica, pod.metadata.name, failed_exit(pod), _true_conditions(pod), reason)


def _true_conditions(pod: ObservedPod) -> frozenset[str]:
    conditions = (pod.status.conditions if pod.status else None) or ()
    return frozenset(c.type for c in conditions if c.status == "True")
