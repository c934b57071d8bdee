"""``mpijob doctor``'s checks on recorded objects: what the real node showed for each provoked cause
(tests/fixtures/doctor/<check>.json, written by tests/node/test_node_doctor.py with ``--save``), and, for
every other check, the recorded running job with the one change that check is about. Each case asserts the
check named first and nothing else; every check of the list has a case.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.cli.doctor.checks import CHECKS, diagnose
from app.cli.doctor.snapshot import Snapshot
from tests.support import paths

FIXTURES = paths.FIXTURES / "doctor"
RECORDED = {path.stem: path for path in sorted(FIXTURES.glob("*.json"))}
HEALTHY = ("running", "healthy")


def recorded(name: str) -> Snapshot:
    return Snapshot.from_json(json.loads(RECORDED[name].read_text()))


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_recorded_cause_is_named_and_nothing_else(name: str) -> None:
    diagnosis = diagnose(recorded(name))
    expected = None if name in HEALTHY else name
    assert (diagnosis.problem.check if diagnosis.problem else None) == expected, diagnosis


# --- the other checks: the recorded running job, changed where the check looks -----------------------------


def _running() -> Snapshot:
    return copy.deepcopy(recorded("running"))


def _worker(snap: Snapshot, index: int = 0) -> dict[str, Any]:
    return next(p for p in snap.pods if p["metadata"]["name"] == f"pi-worker-{index}")


def _launcher_pod(snap: Snapshot) -> dict[str, Any]:
    role = "training.kubeflow.org/job-role"
    return next(p for p in snap.pods if p["metadata"]["labels"][role] == "launcher")


def _condition(snap: Snapshot, kind: str, reason: str, message: str) -> None:
    assert snap.job is not None
    condition = {"type": kind, "status": "True", "reason": reason, "message": message}
    snap.job["status"]["conditions"].append(condition)


def _spec(snap: Snapshot, role: str) -> dict[str, Any]:
    assert snap.job is not None
    spec: dict[str, Any] = snap.job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]
    return spec


def _log(snap: Snapshot, line: str, container: str = "mpi-launcher") -> None:
    snap.logs[f"{_launcher_pod(snap)['metadata']['name']}/{container}"] = line + "\n"


def _run_policy(snap: Snapshot, **fields: Any) -> None:
    assert snap.job is not None
    snap.job["spec"]["runPolicy"].update(fields)


def _not_found(snap: Snapshot) -> None:
    snap.job = None


def _not_served(snap: Snapshot) -> None:
    snap.job, snap.served = None, False


def _never_synced(snap: Snapshot) -> None:
    assert snap.job is not None
    snap.job.pop("status")
    snap.job["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"


def _suspend(snap: Snapshot, queue: str = "") -> None:
    assert snap.job is not None
    snap.job["spec"]["runPolicy"]["suspend"] = True
    if queue:
        snap.job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = queue


WORKLOAD_API = "scheduling.k8s.io/v1beta1"


def _podgroup(snap: Snapshot, **fields: Any) -> None:
    """The job's PodGroup (Volcano's unless ``apiVersion`` says otherwise), named like the job."""
    volcano = "scheduling.volcano.sh/v1beta1"
    group = {"apiVersion": volcano, "kind": "PodGroup", "metadata": {"name": snap.name}}
    snap.podgroups.append({**group, **fields})


def _waiting(snap: Snapshot, reason: str) -> None:
    status = _worker(snap)["status"]["containerStatuses"][0]
    status["state"] = {"waiting": {"reason": reason, "message": 'secret "creds" not found'}}


def _gpus(snap: Snapshot, role: str, where: str = "container") -> None:
    spec = _spec(snap, role)
    if where == "pod":
        spec["resources"] = {"limits": {"nvidia.com/gpu": 2}}
    else:
        spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 2


def _root_path_for_non_root(snap: Snapshot) -> None:
    assert snap.job is not None
    snap.job["spec"].pop("sshAuthMountPath")


def _sidecar_left_running(snap: Snapshot) -> None:
    pod = _launcher_pod(snap)
    main = pod["status"]["containerStatuses"][0]
    main["state"] = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    pod["status"]["containerStatuses"].append({"name": "istio-proxy", "state": {"running": {}}})


def _launcher_failed(snap: Snapshot) -> None:
    assert snap.launcher is not None
    snap.launcher["status"]["failed"] = 1
    pod = copy.deepcopy(_launcher_pod(snap))
    pod["metadata"]["name"] = "pi-launcher-old"
    pod["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    ended = {"terminated": {"exitCode": 1, "reason": "Error", "message": "mpirun: a rank exited"}}
    pod["status"] = {"phase": "Failed", "containerStatuses": [{"name": "mpi-launcher", "state": ended}]}
    snap.pods.append(pod)


def _failed(snap: Snapshot) -> None:
    """The launcher Job gave up (its Failed condition), and the hook wrote the MPIJob's Failed from it."""
    _launcher_failed(snap)
    assert snap.launcher is not None
    message = "Job has reached the specified backoff limit"
    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": message}
    snap.launcher["status"]["conditions"] = [failed]
    _condition(snap, "Failed", "BackoffLimitExceeded", message)


EDITS: dict[str, tuple[str | None, Callable[[Snapshot], None]]] = {
    "a missing job": ("job-not-found", _not_found),
    "no MPIJob API": ("job-not-found", _not_served),
    "an Invalid condition": ("invalid", lambda s: _condition(s, "Invalid", "ValidationError", "bad: x")),
    "no status after a minute": ("not-synced", _never_synced),
    "suspended with a Kueue queue": ("queued-by-kueue", lambda s: _suspend(s, "team-a")),
    "suspended": ("suspended", _suspend),
    "no PodGroup child declared": (
        "gang-scheduling-unavailable",
        lambda s: _condition(s, "GangSchedulingUnavailable", "PodGroupChildNotDeclared", "apply the overlay"),
    ),
    "minMember above the job's Pods": (
        "podgroup-cannot-be-met",
        lambda s: _podgroup(s, spec={"minMember": 9}),
    ),
    "a gang that does not fit": (
        "podgroup-cannot-be-met",
        lambda s: _podgroup(
            s,
            spec={"minMember": 3},
            status={
                "phase": "Pending",
                "conditions": [
                    {"type": "Unschedulable", "status": "True", "message": "3/3 tasks in gang unschedulable"}
                ],
            },
        ),
    ),
    "a topology key without the Workload API": (
        "gang-scheduling-unavailable",
        lambda s: _condition(s, "GangSchedulingUnavailable", "TopologyNeedsWorkloadAPI", "only kubernetes"),
    ),
    "Workload API: minCount above the job's Pods": (
        "podgroup-cannot-be-met",
        lambda s: _podgroup(s, apiVersion=WORKLOAD_API, spec={"schedulingPolicy": {"gang": {"minCount": 9}}}),
    ),
    "Workload API: a gang that does not fit": (
        "podgroup-cannot-be-met",
        lambda s: _podgroup(
            s,
            apiVersion=WORKLOAD_API,
            spec={"schedulingPolicy": {"gang": {"minCount": 3}}},
            status={
                "conditions": [
                    {
                        "type": "PodGroupInitiallyScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/1 nodes are available: 1 Insufficient cpu.",
                    }
                ]
            },
        ),
    ),
    "a missing Secret key": ("pod-cannot-start", lambda s: _waiting(s, "CreateContainerConfigError")),
    "a crash-looping worker": ("pod-cannot-start", lambda s: _waiting(s, "CrashLoopBackOff")),
    "2 GPUs on 1 slot": ("gpu-slots-mismatch", lambda s: _gpus(s, "Worker")),
    "GPUs at pod level": ("gpus-at-pod-level", lambda s: _gpus(s, "Launcher", "pod")),
    "GPUs on the launcher": ("launcher-gpus-hidden", lambda s: _gpus(s, "Launcher")),
    "/root/.ssh for mpiuser": ("ssh-path-for-non-root", _root_path_for_non_root),
    "Connection refused": (
        "ssh-refused",
        lambda s: _log(s, "ssh: connect to host pi-worker-0.pi.x.svc port 22: Connection refused"),
    ),
    "Permission denied": (
        "ssh-permission-denied",
        lambda s: _log(s, "mpiuser@pi-worker-1: Permission denied (publickey)."),
    ),
    "a name that does not resolve": (
        "host-not-resolved",
        lambda s: _log(s, "ssh: Could not resolve hostname pi-worker-1.pi.x.svc: Name or service not known"),
    ),
    "No route to host": (
        "workers-unreachable",
        lambda s: _log(s, "ssh: connect to host pi-worker-0.pi.x.svc port 2222: No route to host"),
    ),
    "a regular sidecar": ("launcher-sidecar", _sidecar_left_running),
    "Failed": ("job-failed", _failed),
    "a launcher retried": ("launcher-retrying", _launcher_failed),
    "Restarting": (
        "job-restarting",
        lambda s: _condition(s, "Restarting", "WorkerError", "worker pi-worker-0"),
    ),
    "managed by MultiKueue": (None, lambda s: _run_policy(s, managedBy="kueue.x-k8s.io/multikueue")),
    "a wait that ended with every host answering": (
        None,
        lambda s: _log(
            s,
            "wait-for-workers: pi-worker-0: ssh: Could not resolve hostname x, retrying\n"
            "wait-for-workers: 2 hosts answer ssh (3s)",
            "wait-for-workers",
        ),
    ),
}


@pytest.mark.parametrize(("expected", "edit"), EDITS.values(), ids=EDITS.keys())
def test_a_check_names_its_problem_and_nothing_else(
    expected: str | None, edit: Callable[[Snapshot], None]
) -> None:
    snap = _running()
    assert diagnose(snap).problem is None
    edit(snap)
    diagnosis = diagnose(snap)
    assert (diagnosis.problem.check if diagnosis.problem else None) == expected, diagnosis
    if diagnosis.problem is not None:
        assert diagnosis.problem.summary and diagnosis.problem.fix and diagnosis.problem.evidence


def _unscheduled(snap: Snapshot, message: str, asks: dict[str, str], reason: str = "Unschedulable") -> None:
    """Worker 0 as the scheduler leaves it (Pending, PodScheduled=False), its template asking for ``asks``."""
    for spec in (_spec(snap, "Worker"), _worker(snap)["spec"]):
        resources = spec["containers"][0]["resources"]
        resources["requests"] = {**resources.get("requests", {}), **asks}
        resources["limits"] = {**resources.get("limits", {}), **asks}
    scheduled = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
    scheduled["lastTransitionTime"] = snap.now
    _worker(snap)["status"] = {"phase": "Pending", "conditions": [scheduled]}


PREEMPTION = "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
NO_VICTIMS = "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
TOO_SMALL = "lower the requests in its pod template, or add nodes that have that much free"
# kube-scheduler's messages for each way a Pod does not fit, and the fix the doctor gives for each.
UNSCHEDULABLE: dict[str, tuple[str, dict[str, str], str]] = {
    "Insufficient memory": (
        f"0/1 nodes are available: 1 Insufficient memory. {NO_VICTIMS}",
        {"memory": "512Gi"},
        f"no node has enough memory for one worker (each asks memory: 512Gi): {TOO_SMALL}",
    ),
    "Insufficient nvidia.com/gpu": (
        f"0/1 nodes are available: 1 Insufficient nvidia.com/gpu. {NO_VICTIMS}",
        {"nvidia.com/gpu": "1"},
        f"no node has enough nvidia.com/gpu for one worker (each asks nvidia.com/gpu: 1): {TOO_SMALL}",
    ),
    "Insufficient cpu and memory": (
        "0/3 nodes are available: 1 Insufficient cpu, 3 Insufficient memory. preemption: 0/3 nodes are"
        " available: 3 No preemption victims found for incoming pod.",
        {"cpu": "96", "memory": "512Gi"},
        f"no node has enough cpu, memory for one worker (each asks cpu: 96; memory: 512Gi): {TOO_SMALL}",
    ),
    # The control plane's taint is on every cluster: the resource is what to fix.
    "Insufficient memory beside a tainted control plane": (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: },"
        f" 2 Insufficient memory. {NO_VICTIMS}",
        {"memory": "512Gi"},
        f"no node has enough memory for one worker (each asks memory: 512Gi): {TOO_SMALL}",
    ),
    "a node selector no node matches": (
        f"0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. {PREEMPTION}",
        {},
        "no node matches the pod template's nodeSelector or affinity: kubectl get nodes --show-labels",
    ),
    "an untolerated taint": (
        f"0/1 nodes are available: 1 node(s) had untolerated taint {{dedicated: gpu}}. {PREEMPTION}",
        {},
        "the nodes have taints the Pod does not tolerate: add tolerations to the pod template",
    ),
    "an unbound claim": (
        f"0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. {PREEMPTION}",
        {},
        "a volume's PersistentVolumeClaim is unbound or missing: kubectl get pvc",
    ),
    "anything else": (
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
        f" {PREEMPTION}",
        {},
        "kubectl describe pod shows the scheduler's reasons for each node",
    ),
}


@pytest.mark.parametrize(("message", "asks", "fix"), UNSCHEDULABLE.values(), ids=UNSCHEDULABLE.keys())
def test_each_way_a_pod_does_not_fit_gets_its_own_fix(message: str, asks: dict[str, str], fix: str) -> None:
    snap = _running()
    _unscheduled(snap, message, asks)
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "unschedulable", problem
    assert problem.summary.startswith("worker pi-worker-0 cannot be scheduled: 0/")
    assert (
        problem.evidence[0]
        == f"Pod pi-worker-0: PodScheduled=False (Unschedulable) since {snap.now}: {message}"
    )
    assert problem.fix == fix


def test_a_gated_pod_waits_for_whoever_gated_it() -> None:
    snap = _running()
    _worker(snap)["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    _unscheduled(snap, "Scheduling is blocked due to non-empty scheduling gates", {}, "SchedulingGated")
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "unschedulable", problem
    assert problem.fix == (
        "the Pod waits for its scheduling gates (kueue.x-k8s.io/admission) to be removed by whoever set them"
        " (e.g. Kueue)"
    )


def test_a_wait_still_retrying_counts_only_after_its_grace() -> None:
    snap = _running()
    launcher = _launcher_pod(snap)
    statuses = launcher["status"]["initContainerStatuses"]
    wait = next(s for s in statuses if s["name"] == "wait-for-workers")
    _log(
        snap,
        "wait-for-workers: pi-worker-1.pi.x.svc: ssh: Could not resolve hostname pi-worker-1, retrying",
        "wait-for-workers",
    )
    wait["state"] = {"running": {"startedAt": snap.now}}
    assert diagnose(snap).problem is None
    wait["state"] = {"running": {"startedAt": "2000-01-01T00:00:00Z"}}
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "host-not-resolved"


def test_a_failed_mount_counts_only_after_its_grace() -> None:
    """The kubelet's own cache catching up right after scheduling ("failed to sync secret cache", retried)
    is not a stuck Pod; the same Event MOUNT_GRACE_SECONDS after scheduling is."""
    snap = _running()
    worker = _worker(snap)
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-04T04:16:01Z"}
    worker["status"] = {"phase": "Pending", "conditions": [scheduled]}
    message = 'MountVolume.SetUp failed for volume "ssh-auth" : failed to sync secret cache: timed out'
    event = {"involvedObject": {"name": "pi-worker-0"}, "type": "Warning", "reason": "FailedMount"}
    snap.events.append({**event, "message": message, "lastTimestamp": snap.now})
    assert diagnose(snap).problem is None
    snap.now = "2026-12-04T04:16:31Z"
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "pod-cannot-start", problem


def test_the_failure_evidence_is_the_hooks_own_wording() -> None:
    snap = _running()
    _failed(snap)
    problem = diagnose(snap).problem
    assert problem is not None
    assert problem.evidence[:2] == (
        "condition Failed=True (BackoffLimitExceeded): Job has reached the specified backoff limit",
        "first failure: launcher pi-launcher-old: container mpi-launcher exited with code 1 (Error)",
    )


def test_every_check_has_a_case() -> None:
    """Each case above asserts the check it names, so the checks they expect are the checks covered."""
    expected = {check for check, _ in EDITS.values()} | set(RECORDED)
    assert {c.id for c in CHECKS} - expected == set()


# --- the command: exit codes, text and JSON -------------------------------------------------------------


def _mpijob(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "app.cli.program", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_the_command_exit_codes_and_output(tmp_path: Path) -> None:
    healthy = _mpijob("doctor", "--load", str(RECORDED["running"]))
    assert healthy.returncode == 0, healthy.stderr
    assert healthy.stdout.startswith("healthy: MPIJob ")
    assert " is Running; waiting for mpirun" in healthy.stdout
    problem = _mpijob("doctor", "--load", str(RECORDED["oom-killed"]), "-o", "json")
    assert problem.returncode == 1
    verdict = json.loads(problem.stdout)
    assert set(verdict) == {"job", "healthy", "stage", "problem", "waitingFor"}
    assert verdict["healthy"] is False and set(verdict["problem"]) == {"check", "summary", "evidence", "fix"}
    text = _mpijob("doctor", "--load", str(RECORDED["oom-killed"])).stdout.splitlines()
    assert text[0].startswith("oom-killed: ") and text[-1].startswith("  fix: ")
    empty = tmp_path / "config"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    unusable = _mpijob("doctor", "pi", "--kubeconfig", str(empty))
    assert (unusable.returncode, unusable.stdout) == (2, "")
    assert unusable.stderr.startswith(f"mpijob doctor: {empty}: no current-context")
    assert _mpijob("doctor").returncode == 2
    listed = _mpijob("doctor", "--list-checks").stdout.splitlines()
    assert [line.split()[0] for line in listed] == [c.id for c in CHECKS]
