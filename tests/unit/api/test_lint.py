"""Every lint rule with a case that trips it and a near-identical case that does not.

Cases start from upstream's pi example shape (``tests/packaging/test_crd.py``'s ``pi()``) and change one
thing. Then the admission rules: lint must reject what the CRD (rebuilt in ``test_crd``) rejects, with the
CRD's messages, and pass what it admits.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from app.api import child_names
from app.api.hostfile_order_annotations import ORDER_ANNOTATION
from app.api.lint import IGNORE_ANNOTATION, RULES, SEVERITIES, Rule, Severity, lint, lint_manifest
from app.api.types import MPIJob
from tests.packaging import test_crd
from tests.packaging.test_crd import CRD_FILE, INVALID, VALID, pi

Job = dict[str, Any]
# Where to edit a job (dotted keys) ...
LAUNCHER = "spec.mpiReplicaSpecs.Launcher"
WORKER = "spec.mpiReplicaSpecs.Worker"
# ... and how a finding names the place: upstream's field paths, a replica type in brackets.
WORKER_PATH = "spec.mpiReplicaSpecs[Worker]"


def at(job: Job, path: str) -> Any:
    node: Any = job
    for key in path.split("."):
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    return node


def edit(*changes: tuple[str, Any]) -> Callable[[], Job]:
    """A pi() job with dotted paths set (``None`` deletes); list indexes as numbers."""

    def build() -> Job:
        job = pi()
        for path, value in changes:
            *parents, last = path.split(".")
            node = at(job, ".".join(parents)) if parents else job
            if value is None:
                node.pop(last, None)
            elif isinstance(node, list):
                node[int(last)] = value
            else:
                node[last] = copy.deepcopy(value)
        return job

    return build


LC = f"{LAUNCHER}.template.spec.containers.0"
WC = f"{WORKER}.template.spec.containers.0"
GPU2 = {"limits": {"nvidia.com/gpu": 2}}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": "pi"}},
    }
]

# rule -> (trips it, does not)
LAUNCHER_ = "Launcher"
FAIL_ON_42 = {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
CASES: dict[str, tuple[Callable[[], Job], Callable[[], Job]]] = {
    Rule.INVALID: (edit((f"{LAUNCHER}.replicas", 2)), edit((f"{LAUNCHER}.replicas", 1))),
    Rule.CRD_REJECTED: (
        edit(("spec.launcherCreationPolicy", "Later")),
        edit(("spec.launcherCreationPolicy", "WaitForWorkersReady")),
    ),
    Rule.UNKNOWN_FIELD: (
        edit(("spec.cleanPodPolicy", "Running")),
        edit(("spec.runPolicy.cleanPodPolicy", "All")),
    ),
    Rule.NAME_TOO_LONG: (edit(("metadata.name", "a" * 55)), edit(("metadata.name", "a" * 54))),
    Rule.INVALID_LABEL: (
        edit(("metadata.labels", {"team": "v" * 64})),
        edit(("metadata.labels", {"team": "v" * 63})),
    ),
    Rule.INVALID_ANNOTATION_KEY: (
        edit(("metadata.annotations", {"notes about it": "x"})),
        edit(("metadata.annotations", {"Example.com/Notes": "x"})),
    ),
    Rule.ANNOTATIONS_TOO_LARGE: (
        edit(("metadata.annotations", {"note": "x" * (256 * 1024 - 3)})),
        edit(("metadata.annotations", {"note": "x" * (256 * 1024 - 4)})),
    ),
    Rule.OLD_API_VERSION: (
        edit(("apiVersion", "kubeflow.org/v1")),
        edit(("apiVersion", "kubeflow.org/v2beta1")),
    ),
    Rule.SLOTS_IN_REPLICA_SPEC: (
        edit((f"{WORKER}.slotsPerWorker", 2)),
        edit(("spec.slotsPerWorker", 2), (f"{LC}.command", ["mpirun", "-n", "4", "/pi"])),
    ),
    Rule.NP_MISMATCH: (
        edit((f"{LC}.command", ["mpirun", "-n", "3", "/home/mpiuser/pi"])),
        edit((f"{LC}.command", ["mpirun", "-n", "2", "/home/mpiuser/pi"])),
    ),
    Rule.GPU_SLOTS_MISMATCH: (
        edit((f"{WC}.resources", GPU2), ("spec.runPolicy.cleanPodPolicy", "Running")),
        edit(
            (f"{WC}.resources", GPU2),
            ("spec.slotsPerWorker", 2),
            (f"{LC}.command", ["mpirun", "-np", "4", "/pi"]),
        ),
    ),
    Rule.GPUS_AT_POD_LEVEL: (
        edit((f"{WORKER}.template.spec.resources", {"limits": {"nvidia.com/gpu": 1}})),
        edit((f"{WORKER}.template.spec.resources", {"limits": {"cpu": "4", "memory": "8Gi"}})),
    ),
    Rule.LAUNCHER_GPUS_HIDDEN: (
        edit((f"{LC}.resources", GPU2)),
        edit((f"{LC}.resources", {"limits": {"cpu": "1"}})),
    ),
    Rule.GPUS_HELD_AFTER_FINISH: (
        edit((f"{WC}.resources", {"limits": {"nvidia.com/gpu": 1}}), ("spec.runPolicy.cleanPodPolicy", None)),
        edit(
            (f"{WC}.resources", {"limits": {"nvidia.com/gpu": 1}}),
            ("spec.runPolicy.cleanPodPolicy", "Running"),
        ),
    ),
    Rule.ORTE_ONLY_SETTINGS: (
        edit((f"{LC}.env", [{"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "1"}])),
        edit(
            (
                f"{LC}.env",
                [
                    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "1"},
                    {"name": "PRTE_MCA_keep_fqdn_hostnames", "value": "1"},
                ],
            )
        ),
    ),
    Rule.LAUNCHER_COMMAND: (
        edit((f"{LC}.command", ["python", "train.py"])),
        edit((f"{LC}.command", ["bash", "-c", "cd /w && exec mpirun -n 2 python train.py"])),
    ),
    Rule.WORKER_COMMAND: (
        edit((f"{WC}.command", ["python", "serve.py"])),
        edit((f"{WC}.command", ["sh", "-c", "setup.sh && /usr/sbin/sshd -De"])),
    ),
    Rule.HOSTNETWORK_PORT_CLASH: (
        edit((f"{WORKER}.template.spec.hostNetwork", True)),
        edit(
            (f"{WORKER}.template.spec.hostNetwork", True),
            (f"{WORKER}.template.spec.topologySpreadConstraints", SPREAD),
        ),
    ),
    Rule.SSH_PATH_FOR_NON_ROOT: (
        edit(("spec.sshAuthMountPath", None)),
        edit(("spec.sshAuthMountPath", "/home/mpiuser/.ssh")),
    ),
    Rule.SSH_PATH_FOR_ROOT: (
        edit((f"{LC}.securityContext", None), (f"{WC}.securityContext", None)),
        edit(
            (f"{LC}.securityContext", None), (f"{WC}.securityContext", None), ("spec.sshAuthMountPath", None)
        ),
    ),
    Rule.FAILURE_POLICY_UNSEEN: (
        edit(("spec.failurePolicy", {"maxRestarts": 2}), (f"{WORKER}.restartPolicy", "OnFailure")),
        edit(("spec.failurePolicy", {"maxRestarts": 2}), (f"{WORKER}.restartPolicy", "Never")),
    ),
    Rule.FAILURE_RULE_UNREACHABLE: (
        edit(("spec.failurePolicy", {"rules": [{"action": "FailJob"}, FAIL_ON_42]})),
        edit(
            (
                "spec.failurePolicy",
                {"rules": [FAIL_ON_42, {"action": "FailJob", "replicaTypes": [LAUNCHER_]}]},
            )
        ),
    ),
    Rule.HOSTFILE_ORDER_NOT_FOLLOWED: (
        edit(
            ("metadata.annotations", {ORDER_ANNOTATION: "topology"}),
            (f"{LC}.command", ["mpirun", "--map-by", "slot", "-n", "2", "/home/mpiuser/pi"]),
        ),
        edit(("metadata.annotations", {ORDER_ANNOTATION: "topology"})),
    ),
    # pi(): a launcher and 2 workers, 3 Pods.
    Rule.MIN_AVAILABLE_ABOVE_PODS: (
        edit(("spec.runPolicy.schedulingPolicy", {"minAvailable": 4})),
        edit(("spec.runPolicy.schedulingPolicy", {"minAvailable": 3})),
    ),
}


def rules(job: Job) -> set[str]:
    return {f.rule for f in lint_manifest(job)}


def test_the_pi_example_is_clean() -> None:
    assert lint_manifest(pi()) == []


def test_every_rule_has_cases() -> None:
    assert set(CASES) == set(RULES) == set(SEVERITIES) == {r.value for r in Rule}


@pytest.mark.parametrize("rule", list(CASES), ids=[str(r) for r in CASES])
def test_rule_trips(rule: str) -> None:
    tripped = CASES[rule][0]()
    findings = [f for f in lint_manifest(tripped) if f.rule == rule]
    assert findings, lint_manifest(tripped)
    for finding in findings:
        assert finding.path and finding.message and finding.fix
        assert "\n" not in finding.message
        assert finding.severity is SEVERITIES[rule]  # the registry's severity is the one reported


@pytest.mark.parametrize("rule", list(CASES), ids=[str(r) for r in CASES])
def test_rule_stays_quiet(rule: str) -> None:
    assert lint_manifest(CASES[rule][1]()) == []


# --- details of single rules ---------------------------------------------------------------------------

NP = {
    "mpirun -np": (["mpirun", "-np", "4", "./a"], 4),
    "mpiexec -n in args": (["mpiexec"], 3),
    "--np=": (["mpirun", "--np=5", "./a"], 5),
    "horovodrun": (["horovodrun", "-np", "6", "python", "t.py"], 6),
    "shell wrapper": (["/bin/bash", "-lc", "echo hi; mpirun --allow-run-as-root -np 7 ./a"], 7),
}


@pytest.mark.parametrize(("command", "processes"), NP.values(), ids=NP.keys())
def test_np_is_read_from_every_launcher_shape(command: list[str], processes: int) -> None:
    args = ["-n", "3", "./a"] if command == ["mpiexec"] else []
    job = edit((f"{LC}.command", command), (f"{LC}.args", args))()
    [finding] = [f for f in lint_manifest(job) if f.rule == Rule.NP_MISMATCH]
    assert f"{processes} processes but the hostfile has 2 slots" in finding.message
    assert finding.fix.startswith(("use -np 2", "use -n 2", "use --np 2"))


def test_np_counts_the_launcher_slots_with_run_launcher_as_worker() -> None:
    job = edit(("spec.runLauncherAsWorker", True), (f"{LC}.command", ["mpirun", "-n", "3", "./a"]))()
    assert Rule.NP_MISMATCH not in rules(job)
    job = edit(("spec.runLauncherAsWorker", True))()
    [finding] = [f for f in lint_manifest(job) if f.rule == Rule.NP_MISMATCH]
    assert "runLauncherAsWorker" in finding.message


def test_np_from_a_variable_is_not_guessed() -> None:
    assert Rule.NP_MISMATCH not in rules(edit((f"{LC}.command", ["sh", "-c", "mpirun -np $N ./a"]))())


def test_oversubscribe_is_said() -> None:
    job = edit((f"{LC}.command", ["mpirun", "--oversubscribe", "-n", "4", "./a"]))()
    [finding] = [f for f in lint_manifest(job) if f.rule == Rule.NP_MISMATCH]
    assert "oversubscribed" in finding.message


def test_amd_gpus_count_too() -> None:
    job = edit((f"{WC}.resources", {"limits": {"amd.com/gpu": "4"}}))()
    assert Rule.GPU_SLOTS_MISMATCH in rules(job)


def test_launcher_without_command_is_only_info() -> None:
    job = edit((f"{LC}.command", None), (f"{LC}.args", None))()
    [finding] = lint_manifest(job)
    assert (finding.rule, finding.severity) == (Rule.LAUNCHER_COMMAND, Severity.INFO)


def test_the_ignore_annotation_silences_warnings_but_not_errors() -> None:
    job = CASES[Rule.WORKER_COMMAND][0]()
    job["metadata"]["annotations"] = {IGNORE_ANNOTATION: "np-mismatch, worker-command"}
    assert lint_manifest(job) == []
    job = CASES[Rule.INVALID][0]()
    job["metadata"]["annotations"] = {IGNORE_ANNOTATION: "invalid"}
    assert Rule.INVALID in rules(job)


def test_lint_without_the_raw_manifest_cannot_see_pruned_fields() -> None:
    job = CASES[Rule.SLOTS_IN_REPLICA_SPEC][0]()
    assert Rule.SLOTS_IN_REPLICA_SPEC not in {f.rule for f in lint(MPIJob.model_validate(job))}


def test_a_value_of_the_wrong_type_is_an_invalid_finding() -> None:
    [finding] = lint_manifest(edit((f"{WORKER}.replicas", "two"))())
    assert (finding.rule, finding.path) == (Rule.INVALID, f"{WORKER_PATH}.replicas")


# --- admission: what the CRD and validation reject -------------------------------------------------------


def test_the_crd_messages_are_the_ones_lint_prints() -> None:
    crd = yaml.safe_load(CRD_FILE.read_text())
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    messages = {r["message"] for r in root["x-kubernetes-validations"]}
    assert messages == {child_names.NAME_NOT_DNS1035, child_names.NAME_TOO_LONG}


@pytest.mark.parametrize("job", VALID.values(), ids=VALID.keys())
def test_what_the_crd_admits_has_no_errors(job: Job) -> None:
    """Except the one limit the CRD cannot see: a hostfile too large for Metacontroller's default
    dynamic-apply (its last-applied annotation), which the hook reports the same way."""
    errors = [f for f in lint_manifest(job) if f.severity is Severity.ERROR]
    too_large = [f for f in errors if "a ConfigMap can hold here" in f.message]
    assert [f for f in errors if f not in too_large] == []
    worker = job["spec"]["mpiReplicaSpecs"].get("Worker") or {}
    assert bool(too_large) == (worker.get("replicas", 0) >= 1000), worker.get("replicas")


# The pod template's own schema (Kubernetes' Pod) is left to `kubectl apply --dry-run=server`.
MPIJOB_LEVEL = {
    name: case
    for name, case in INVALID.items()
    if not any(where.startswith(f"{WORKER}.template.spec.") for _, where, _ in case[1])
}


@pytest.mark.parametrize(("job", "expected"), MPIJOB_LEVEL.values(), ids=MPIJOB_LEVEL.keys())
def test_what_the_crd_rejects_is_an_error_with_the_same_message(job: Job, expected: set[Any]) -> None:
    errors = [f for f in lint_manifest(job) if f.severity is Severity.ERROR]
    assert errors
    for source, where, message in expected:
        where = _as_upstream_prints(where)
        if source == "cel":
            assert any(f.path == where and f.message.endswith(message) for f in errors), (errors, where)
        else:
            assert any(f.path.startswith(where) or where.startswith(f.path) for f in errors), (errors, where)


def _as_upstream_prints(apiserver_path: str) -> str:
    """The apiserver prints a CRD's map keys (and the schema test its list indexes) after a dot; lint, as
    upstream's validation, in brackets."""
    bracketed = re.sub(r"mpiReplicaSpecs\.([^.]+)", r"mpiReplicaSpecs[\1]", apiserver_path)
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", bracketed)


def test_the_table_is_the_crd_tests_table() -> None:
    assert test_crd.pi is pi


# --- robustness: lint runs inside every sync, so no shape of pod template may crash it ----------------------

JUNK = [None, 5, 1.5, "x", True, [], {}, [5], ["x"], {"a": 5}, [{"a": None}]]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _replaced(job: Job, path: tuple[Any, ...], value: Any) -> Job:
    job = copy.deepcopy(job)
    node: Any = job
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = copy.deepcopy(value)
    return job


def test_no_template_shape_crashes_lint() -> None:
    """Every node of rich templates replaced by every kind of junk: lint answers (findings), never raises."""
    base = CASES[Rule.HOSTNETWORK_PORT_CLASH][1]()
    base = _replaced(base, ("spec", "runLauncherAsWorker"), True)
    launcher = base["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher["spec"]["hostNetwork"] = True
    launcher["spec"]["containers"][0]["env"] = [{"name": "OMPI_MCA_orte_x", "value": "1"}]
    launcher["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    templates = ("spec", "mpiReplicaSpecs")
    paths = [p for p in _paths(base) if p[:2] == templates and len(p) > 4]
    assert len(paths) > 40
    for path in paths:
        for junk in JUNK:
            job = _replaced(base, path, junk)
            lint(MPIJob.model_validate(job), job)
            lint_manifest(job)


def test_a_root_user_needs_no_other_ssh_path() -> None:
    job = edit(
        ("spec.sshAuthMountPath", None),
        (f"{LC}.securityContext", {"runAsUser": 0}),
        (f"{WC}.securityContext", {}),
        (f"{WORKER}.template.spec.securityContext", {"runAsUser": 0}),
    )()
    assert Rule.SSH_PATH_FOR_NON_ROOT not in rules(job)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["securityContext"] = {"runAsUser": 1000}
    assert Rule.SSH_PATH_FOR_NON_ROOT in rules(job)  # the pod's user counts when the container sets none


def test_an_unknown_api_version_is_rejected() -> None:
    [finding] = lint_manifest(edit(("apiVersion", "kubeflow.org/v3"))())
    assert (finding.rule, finding.path) == (Rule.CRD_REJECTED, "apiVersion")
    assert finding.message == 'no matches for kind "MPIJob" in version "kubeflow.org/v3"'


# --- GPUs at pod level (template.spec.resources) ------------------------------------------------------------

POD_RESOURCES = f"{WORKER}.template.spec.resources"
POD_RESOURCES_PATH = f"{WORKER_PATH}.template.spec.resources"


def _findings(job: Job, rule: str) -> list[Any]:
    return [f for f in lint_manifest(job) if f.rule == rule]


def test_pod_level_gpus_count_against_slots_and_say_so() -> None:
    """Upstream's v1alpha2 tensorflow-benchmarks-custom shape: the GPU limits one level too high."""
    job = edit((POD_RESOURCES, {"limits": {"nvidia.com/gpu": 4}}))()
    [mismatch] = _findings(job, Rule.GPU_SLOTS_MISMATCH)
    assert "requests 4 GPUs (counting the 4 at pod level) but has 1 slot" in mismatch.message
    [pod_level] = _findings(job, Rule.GPUS_AT_POD_LEVEL)
    assert pod_level.severity is Severity.ERROR
    assert pod_level.path == f"{POD_RESOURCES_PATH}.limits"
    assert "cpu, memory and hugepages only" in pod_level.message
    assert "containers[0].resources.limits" in pod_level.fix


def test_pod_level_gpus_equal_to_slots_are_no_mismatch_but_still_an_error() -> None:
    job = edit((POD_RESOURCES, {"requests": {"gpu.intel.com/i915": 1}}))()
    assert _findings(job, Rule.GPU_SLOTS_MISMATCH) == []
    [pod_level] = _findings(job, Rule.GPUS_AT_POD_LEVEL)
    assert pod_level.path == f"{POD_RESOURCES_PATH}.requests"


def test_pod_level_gpus_take_precedence_over_the_containers() -> None:
    job = edit((POD_RESOURCES, {"limits": {"nvidia.com/gpu": 2}}), (f"{WC}.resources", GPU2))()
    job["spec"]["slotsPerWorker"] = 2
    assert _findings(job, Rule.GPU_SLOTS_MISMATCH) == []  # 2, not 2 + 2


def test_every_gpu_rule_counts_pod_level_gpus() -> None:
    job = edit(
        (f"{LAUNCHER}.template.spec.resources", {"limits": {"nvidia.com/gpu": 1}}),
        (POD_RESOURCES, {"limits": {"amd.com/gpu": 1}}),
        ("spec.runPolicy.cleanPodPolicy", None),
    )()
    for rule in (Rule.LAUNCHER_GPUS_HIDDEN, Rule.GPUS_HELD_AFTER_FINISH):
        [finding] = _findings(job, rule)
        assert "counting the 1 at pod level" in finding.message
    assert len(_findings(job, Rule.GPUS_AT_POD_LEVEL)) == 2  # launcher and worker


# --- a user's ~/.ssh for containers that run as root -----------------------------------------------------


def test_a_home_ssh_path_with_root_containers_names_the_launcher_and_mpirun() -> None:
    [finding] = _findings(CASES[Rule.SSH_PATH_FOR_ROOT][0](), Rule.SSH_PATH_FOR_ROOT)
    assert finding.path == "spec.sshAuthMountPath"
    assert "mounted at /home/mpiuser/.ssh, but the launcher runs as root (no runAsUser" in finding.message
    assert "mpirun refuses to run as root" in finding.message
    assert "runAsUser: 1000" in finding.fix


@pytest.mark.parametrize(
    ("launcher", "worker", "pod", "implementation", "expected"),
    [
        ({"runAsUser": 1000}, {"runAsUser": 0}, None, "OpenMPI", "the worker runs as root (runAsUser: 0)"),
        ({"runAsUser": 1000}, None, None, "OpenMPI", "the worker runs as root (no runAsUser"),
        (None, None, {"runAsUser": 1000}, "OpenMPI", None),  # the pod's user counts
        ({"runAsNonRoot": True}, {"runAsNonRoot": True}, None, "OpenMPI", None),  # the image's non-root user
        (None, {"runAsUser": 1000}, None, "Intel", "the launcher runs as root"),
    ],
)
def test_which_container_runs_as_root(
    launcher: Any, worker: Any, pod: Any, implementation: str, expected: str | None
) -> None:
    job = edit(
        (f"{LC}.securityContext", launcher),
        (f"{WC}.securityContext", worker),
        (f"{WORKER}.template.spec.securityContext", pod),
        (f"{LAUNCHER}.template.spec.securityContext", pod),
        ("spec.mpiImplementation", implementation),
    )()
    findings = _findings(job, Rule.SSH_PATH_FOR_ROOT)
    if expected is None:
        assert findings == []
    else:
        [finding] = findings
        assert expected in finding.message
        assert ("mpirun refuses" in finding.message) == (
            implementation == "OpenMPI" and "launcher" in expected
        )


# --- counts in words ---------------------------------------------------------------------------------------


def test_counts_of_one_are_singular() -> None:
    job = edit(
        (f"{WORKER}.replicas", 2),
        ("spec.slotsPerWorker", 1),
        (f"{LC}.command", ["mpirun", "-n", "1", "./a"]),
        (f"{WC}.resources", {"limits": {"nvidia.com/gpu": 1}}),
    )()
    job["spec"]["slotsPerWorker"] = 2
    [np] = _findings(job, Rule.NP_MISMATCH)
    assert "starts 1 process but the hostfile has 4 slots (slotsPerWorker 2 x 2 workers): 3 slots stay" in (
        np.message
    )
    assert np.fix.endswith("so that the hostfile has 1 slot")
    [gpus] = _findings(job, Rule.GPU_SLOTS_MISMATCH)
    assert "requests 1 GPU but has 2 slots" in gpus.message
    job = edit((f"{WORKER}.replicas", 1), (f"{LC}.command", ["mpirun", "-n", "2", "./a"]))()
    [np] = _findings(job, Rule.NP_MISMATCH)
    assert "starts 2 processes but the hostfile has 1 slot (slotsPerWorker 1 x 1 worker)" in np.message
    job = edit((f"{WORKER}.replicas", 3), (f"{LC}.command", ["mpirun", "-n", "2", "./a"]))()
    [np] = _findings(job, Rule.NP_MISMATCH)
    assert np.message.endswith(": 1 slot stays idle")
