"""Checks of what the launcher meets: the process count and GPUs (``mpijob lint``'s rules, one place), ssh to
the workers (the launcher's and its ``wait-for-workers`` container's logs), a sidecar that keeps it running,
and how the job failed or restarted (the hook's own conditions and failure classification)."""

from __future__ import annotations

import re

from app.api.lint import RULES, Rule
from app.api.types import ConditionType, ReplicaType
from app.cli.doctor.facts import Facts, parse_time, pod_name
from app.cli.doctor.problems import Check, Problem, check, one_line
from app.core import reasons
from app.core.observed import LauncherJobOutcome
from app.core.policies import failure as failures
from app.kube import names
from app.kube.pod_phase import PodPhase

# A wait-for-workers still retrying this long is evidence; before that, workers are still starting.
WAIT_GRACE_SECONDS = 30
_WAIT_DONE = re.compile(r"wait-for-workers: \d+ hosts answer ssh")
_WAIT_GAVE_UP = re.compile(
    r"wait-for-workers: .*(did not answer within|not resolved within|no answer within)"
)


def lint_check(rule: Rule, log: str | None = None) -> Check:
    """A check that is ``mpijob lint``'s rule ``rule`` on the job as stored: its message, path and fix;
    evidence: the first failed Pod, if any, and the log lines matching ``log`` (the rule's effect)."""

    def run(facts: Facts) -> Problem | None:
        finding = facts.findings.get(rule)
        if finding is None:
            return None
        evidence = [f"mpijob lint [{rule.value}] at {finding.path}"]
        if rule is Rule.NP_MISMATCH and facts.snap.config:
            hostfile = (facts.snap.config.get("data") or {}).get(names.HOSTFILE_KEY, "")
            evidence.append(f"ConfigMap {names.config_name(facts.name)} hostfile: {one_line(hostfile)}")
        failure = facts.first_failure()
        if failure is not None:
            evidence.append(f"first failure: {failure.describe()}")
        if log is not None:
            lines = [f"{where}: {one_line(line)}" for where, line in facts.log_lines if re.search(log, line)]
            evidence += lines[:3]
        return Problem(rule.value, finding.message, tuple(evidence), finding.fix)

    return Check(rule.value, RULES[rule], run)


np_mismatch = lint_check(Rule.NP_MISMATCH, r"not enough slots|slots available|oversubscri")
gpu_slots_mismatch = lint_check(Rule.GPU_SLOTS_MISMATCH)
gpus_at_pod_level = lint_check(Rule.GPUS_AT_POD_LEVEL)
launcher_gpus_hidden = lint_check(Rule.LAUNCHER_GPUS_HIDDEN)
worker_command = lint_check(Rule.WORKER_COMMAND, r"Connection refused")
# A key where sshd, as root, does not expect it: refused, or (as the mpioperator images' sshd_config makes the
# key sshd's host key) too open for root's sshd, which then exits.
_KEY_REFUSED = r"Permission denied|run as root|allow-run-as-root|bad permissions|no hostkeys"
ssh_path_for_root = lint_check(Rule.SSH_PATH_FOR_ROOT, _KEY_REFUSED)
ssh_path_for_non_root = lint_check(Rule.SSH_PATH_FOR_NON_ROOT, _KEY_REFUSED)


def _evidence(facts: Facts, pattern: str) -> list[str]:
    """Lines of the launcher's logs matching ``pattern`` that show the present, not a start-up that
    recovered: mpirun's log always; wait-for-workers' only if it did not end with every host answering,
    and, while it still retries, once it has retried for WAIT_GRACE_SECONDS."""
    wait_counts = _wait_counts(facts)
    found = []
    for where, line in facts.launcher_log_lines:
        if where.endswith(f"/{names.WAIT_FOR_WORKERS_CONTAINER}") and not wait_counts:
            continue
        if re.search(pattern, line):
            found.append(f"{where}: {one_line(line)}")
    return found


def _wait_counts(facts: Facts) -> bool:
    text = "\n".join(
        t for w, t in facts.snap.logs.items() if w.endswith(f"/{names.WAIT_FOR_WORKERS_CONTAINER}")
    )
    if _WAIT_DONE.search(text):
        return False
    if _WAIT_GAVE_UP.search(text):
        return True
    launcher = facts.launcher_pods[0] if facts.launcher_pods else None
    for container in facts.containers(launcher) if launcher else []:
        if container.name == names.WAIT_FOR_WORKERS_CONTAINER and container.running:
            started = parse_time(container.status["state"]["running"].get("startedAt"))
            return started is not None and (facts.now - started).total_seconds() >= WAIT_GRACE_SECONDS
    return False


def _ssh_check(id: str, finds: str, pattern: str, summary: str, fix: str) -> Check:
    def run(facts: Facts) -> Problem | None:
        evidence = _evidence(facts, pattern)
        if not evidence:
            return None
        return Problem(id, summary.format(job=facts.name), tuple(evidence[-3:]), fix)

    return check(id, finds)(run)


ssh_refused = _ssh_check(
    "ssh-refused",
    "the launcher's ssh is refused (Connection refused): nothing listens on the workers' ssh port",
    r"Connection refused",
    "the workers of {job} refuse the launcher's ssh connections: nothing listens on the port ssh uses",
    "sshd must listen on the port the launcher's ssh client uses: the image's default sshd on 22, or for"
    " non-root images port 2222 on both sides (user guide: Non-root images)",
)
ssh_permission_denied = _ssh_check(
    "ssh-permission-denied",
    "the workers refuse the launcher's key (Permission denied (publickey))",
    r"Permission denied \(publickey",
    "the workers of {job} refuse the launcher's SSH key (Permission denied (publickey))",
    "spec.sshAuthMountPath must be the ~/.ssh of the user both ssh and sshd run as (/root/.ssh for root,"
    " e.g. /home/mpiuser/.ssh for mpiuser), and sshd must read authorized_keys there",
)
host_not_resolved = _ssh_check(
    "host-not-resolved",
    "a worker's name does not resolve (Could not resolve hostname): not Ready, no Service, wrong domain",
    r"Could not resolve hostname|not resolved within",
    "the launcher of {job} cannot resolve a worker's name",
    "a worker's DNS name exists once it is Ready and the Service exists: look at that worker (kubectl get"
    " pods -o wide), kubectl get service; a cluster domain the hook was given"
    " (MPI_OPERATOR_CLUSTER_DOMAIN) must be the cluster's, or empty",
)
workers_unreachable = _ssh_check(
    "workers-unreachable",
    "the launcher reaches no worker otherwise (No route to host, timed out, a wait that gave up)",
    r"No route to host|timed out|did not answer within|no answer within",
    "the launcher of {job} cannot reach its workers",
    "a name that still points at a deleted Pod (a job re-created under the same name) clears in seconds; a"
    " NetworkPolicy must let the launcher reach the workers' ssh port; see the evidence for which host",
)


@check(
    "launcher-sidecar",
    "the launcher's main container ended but a regular sidecar container keeps its Pod (so the Job) running",
)
def launcher_sidecar(facts: Facts) -> Problem | None:
    pod = facts.launcher_pods[0] if facts.launcher_pods else None
    if pod is None or (pod.get("status") or {}).get("phase") != PodPhase.RUNNING:
        return None
    regular = [c for c in facts.containers(pod) if not c.init]
    main, others = (regular[0], regular[1:]) if regular else (None, [])
    running = [c.name for c in others if c.running]
    if main is None or not main.terminated or not running:
        return None
    return Problem(
        "launcher-sidecar",
        f"launcher {pod_name(pod)}: {main.name} ended (code {main.terminated.get('exitCode')}) but"
        f" {', '.join(running)} still {'runs' if len(running) == 1 else 'run'}: the launcher Job cannot end",
        (f"Pod {pod_name(pod)}: container {main.name} terminated, {', '.join(running)} running",),
        "make it a native sidecar: move it to initContainers with restartPolicy: Always (Kubernetes 1.29+);"
        ' with Istio, the annotation sidecar.istio.io/nativeSidecar: "true" on the pod template',
    )


_FIXES: dict[str, str] = {
    failures.Cause.EVICTED: "the node evicted it (pressure or drain): a failurePolicy rule"
    " RestartJobAndIgnoreMaxRestarts with onPodConditions [DisruptionTarget] restarts the job instead",
    failures.Cause.DISRUPTED: "it was preempted or drained (DisruptionTarget): the same failurePolicy rule"
    " restarts the job instead",
    failures.Cause.DEADLINE_EXCEEDED: "it ran past runPolicy.activeDeadlineSeconds: raise it",
}
_POLICY_FIXES = {
    reasons.REASON_FAIL_JOB_RULE: "a FailJob rule of spec.failurePolicy matched this failure, as written",
    reasons.REASON_MAX_RESTARTS: "every restart spec.failurePolicy.maxRestarts allows was used: the same"
    " failure is likely to repeat until its cause is fixed",
}


def _failure_fix(facts: Facts, failure: failures.PodFailure | None, reason: str) -> str:
    """What to do: the cause's own fix, else where the failed Pod says why; and what the policy did."""
    if failure is not None and failure.cause in _FIXES:
        fix = _FIXES[failure.cause]
    elif failure is not None and failure.replica is ReplicaType.WORKER:
        fix = f"kubectl logs {failure.pod} says why its container exited"
    else:
        launcher = names.launcher_name(facts.name)
        fix = f"the launcher's last words (kubectl logs job/{launcher}) say why mpirun ended"
    policy = _POLICY_FIXES.get(reason)
    return f"{fix}; {policy}" if policy else fix


@check(
    "job-failed",
    "the job Failed: the hook's reason and message, the failed Pod, its exit code, the launcher's last words",
)
def job_failed(facts: Facts) -> Problem | None:
    failed = facts.conditions.get(ConditionType.FAILED)
    if failed is None:
        return None
    return _failure_problem(
        facts, "job-failed", f"MPIJob {facts.name} failed ({failed.get('reason')})", failed
    )


@check(
    "launcher-retrying",
    "the launcher failed and the launcher Job retries it (each counts against backoffLimit)",
)
def launcher_retrying(facts: Facts) -> Problem | None:
    """The launcher Job runs on (the hook's ``LauncherJobOutcome.RUNNING``: neither Complete nor Failed)
    after some of its Pods failed."""
    launcher = facts.observed.launcher_job_state
    if launcher is None or launcher.outcome != LauncherJobOutcome.RUNNING or not launcher.failed_pods:
        return None
    if ConditionType.SUCCEEDED in facts.conditions:
        return None
    times = "once" if launcher.failed_pods == 1 else f"{launcher.failed_pods} times"
    summary = f"the launcher of {facts.name} failed {times} and is retried"
    return _failure_problem(facts, "launcher-retrying", summary, None, facts.newest_launcher_failure())


@check(
    "job-restarting", "the failure policy is restarting the job (condition Restarting): which Pod failed, how"
)
def job_restarting(facts: Facts) -> Problem | None:
    restarting = facts.conditions.get(ConditionType.RESTARTING)
    if restarting is None:
        return None
    return _failure_problem(
        facts, "job-restarting", f"MPIJob {facts.name} is restarting ({restarting.get('reason')})", restarting
    )


def _failure_problem(
    facts: Facts,
    id: str,
    summary: str,
    condition: dict[str, str] | None,
    failure: failures.PodFailure | None = None,
) -> Problem:
    """``failure``: the Pod failure to name, else the one the hook's failure policy acts on."""
    evidence = []
    if condition is not None:
        evidence.append(
            f"condition {condition.get('type')}=True ({condition.get('reason')}):"
            f" {one_line(condition.get('message'))}"
        )
    failure = failure or facts.first_failure()
    if failure is not None:
        evidence.append(f"first failure: {failure.describe()}")
    evidence += [
        f"{w}: {one_line(line)}"
        for w, line in facts.launcher_log_lines
        if not w.endswith(names.WAIT_FOR_WORKERS_CONTAINER)
    ][-3:]
    policy = _policy_effect(facts)
    if policy:
        evidence.append(policy)
    fix = _failure_fix(facts, failure, str((condition or {}).get("reason") or ""))
    return Problem(id, summary + (f": {failure.describe()}" if failure else ""), tuple(evidence), fix)


def _policy_effect(facts: Facts) -> str:
    job = facts.job
    if job is None or not job.has_failure_policy:
        return ""
    count = facts.status.get("restartCount") or 0
    return f"failure policy: {count} of maxRestarts {job.max_restarts} restarts used, attempt {facts.attempt}"
