"""``mpijob convert --to trainjob``: what Kubeflow Trainer v2.3.0 would run is the job the hook runs.

For every example and every variant (tests/support/trainer_variants.py) the conversion is fed to a model of
Trainer (tests/support/trainer_model.py, written from Trainer's source) and compared, field by field, with
what the hook itself creates for the MPIJob (its real first sync): how many node Pods and hosts, the slots,
where the SSH key is and who can read it, and the launcher's and the nodes' containers (images, commands, env,
resources, mounts), Pod fields, labels and annotations. What the hook adds that Trainer does not is removed
first, each item named in ``HOOK_ONLY`` (docs/migration.md lists them as lost). The failure policy is compared
decision by decision; Intel MPI and MPICH are refused with the reason and the way out.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from typing import Any

import pytest
import yaml

from app.api.defaults import with_defaults
from app.api.hostfile_order_annotations import ORDER_ANNOTATION
from app.api.types import LauncherCreationPolicy, MPIJob, ReplicaType
from app.children import launcher_wait
from app.convert.mpijob import Conversion, ConvertError, to_v2beta1
from app.convert.trainjob import Target, to_trainjob
from app.core.observed import Exit
from app.core.policies.failure import Action, PodFailure, rule_on
from app.settings import Settings
from tests.support.builders import JOB_UID, observe, sync_request
from tests.support.golden_cases import PRIORITY_CLASSES, run, running
from tests.support.trainer_crds import shipped_runtime
from tests.support.trainer_model import Made, jobset_decision, make, pod_failure
from tests.support.trainer_variants import EXAMPLES, PI, REFUSED_EXAMPLES, ROOT, VARIANTS, Variant, load
from tests.unit.cli.test_cli import mpijob, objects

PI_AS_WORKER = next(v for v in VARIANTS if v.name == "launcher-as-worker")
CASES = [Variant(p.stem, p) for p in EXAMPLES if p.name not in REFUSED_EXAMPLES] + VARIANTS
IDS = [case.name for case in CASES]
# What the hook adds to its Pods that a Trainer runtime does not (each one documented in docs/migration.md):
HOOK_ONLY = {
    # hostname/subdomain: JobSet sets its own; dnsConfig.searches: the hook's <job>.<ns>.svc search path.
    "pod": ("hostname", "subdomain", "dnsConfig"),
    # the kubelet keeps the log's tail for the hook's Failed message.
    "container": ("terminationMessagePolicy",),
    "label_prefixes": ("training.kubeflow.org/", "mpi-operator-hook/"),
}
WAIT = "wait-for-workers"
# On an existing runtime, the env the hook adds is the runtime's (a note says so).
HOOK_ENV = re.compile(r"^(K_MPI_JOB_ROLE|PRTE_MCA_.*|NVIDIA_VISIBLE_DEVICES|NVIDIA_DRIVER_CAPABILITIES)$")
# ...and what Trainer needs differently: the MPI container (the first) is named ``node``.
GANG_KIND = {"volcano": "volcano", "scheduler-plugins-scheduler": "plugins"}


def convert(case: Variant) -> Conversion:
    runtime = shipped_runtime(case.runtime) if case.runtime else None
    return to_trainjob(case.job(), Target(runtime, case.gang))


def trainer_made(case: Variant, result: Conversion) -> tuple[Made, dict[str, Any]]:
    runtime = result.prerequisites[0] if not case.runtime else shipped_runtime(case.runtime)
    return make(result.obj, runtime), runtime


# --- the hook's side --------------------------------------------------------------------------------------


def hook_children(case: Variant) -> dict[str, Any]:
    """The hook's children for the (v2beta1, resumed) job: launcher template, workers, hostfile, PodGroup."""
    parent = to_v2beta1(case.job()).obj
    parent["metadata"].update(namespace="default", uid=JOB_UID)
    # Trainer has no topology order (a note says so): compared with the hook's index order.
    parent["metadata"].get("annotations", {}).pop(ORDER_ANNOTATION, None)
    parent["spec"].setdefault("runPolicy", {})["suspend"] = False
    kind = GANG_KIND.get(case.gang)
    settings = Settings(gang_scheduling=case.gang)
    children = run(sync_request(parent, podgroup=kind, priority_classes=PRIORITY_CLASSES), settings)[
        "children"
    ]
    if not any(c["kind"] == "Job" for c in children):  # WaitForWorkersReady: once the workers are Ready
        observed = running([observe(c) for c in children])
        request = sync_request(parent, observed, podgroup=kind, priority_classes=PRIORITY_CLASSES)
        children = run(request, settings)["children"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for child in children:
        by_kind.setdefault(child["kind"], []).append(child)
    return {
        "launcher": by_kind["Job"][0]["spec"]["template"],
        "launcher_job": by_kind["Job"][0]["spec"],
        "workers": sorted(by_kind["Pod"], key=lambda p: p["metadata"]["name"]),
        "hostfile": by_kind["ConfigMap"][0]["data"]["hostfile"].splitlines(),
        "podgroup": (by_kind.get("PodGroup") or [None])[0],
    }


# --- what both sides are compared on ----------------------------------------------------------------------


def essentials(template: dict[str, Any], ssh_path: str, hook: bool, hook_env: bool = True) -> dict[str, Any]:
    """A pod template without what only one side adds: the SSH key and hostfile become the files they put
    at each path (key, mode bits beyond the owner's), env a mapping, the hook's own additions dropped."""
    spec = copy.deepcopy(template["spec"])
    if hook:
        spec = _mpi_container_named_node(spec)
    platform = {v["name"]: v for v in spec.get("volumes") or [] if _platform_volume(v)}
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v["name"] not in platform]
    files: dict[str, dict[str, Any]] = {}
    for container in spec["containers"]:
        files[container["name"]] = _files(container, platform, ssh_path)
        container["env"] = _env(
            [e for e in container.get("env") or [] if hook_env or not HOOK_ENV.match(e["name"])]
        )
        if hook:
            for key in HOOK_ONLY["container"]:
                container.pop(key, None)
    if hook:
        for key in HOOK_ONLY["pod"]:
            spec.pop(key, None)
    # Compared on its own (test_a_launcher_created_at_start_up_waits_for_the_nodes_as_under_the_hook).
    spec["initContainers"] = [c for c in spec.get("initContainers") or [] if c["name"] != WAIT]
    metadata = template.get("metadata") or {}
    labels = {
        k: v
        for k, v in (metadata.get("labels") or {}).items()
        if not k.startswith(HOOK_ONLY["label_prefixes"])
    }
    drop_empty = {k: v for k, v in spec.items() if v not in ([], {}, None)}
    return {
        "labels": labels,
        "annotations": metadata.get("annotations") or {},
        "spec": drop_empty,
        "files": files,
    }


def _mpi_container_named_node(spec: dict[str, Any]) -> dict[str, Any]:
    old = spec["containers"][0]["name"]
    text = json.dumps(spec).replace(f'"containerName": "{old}"', '"containerName": "node"')
    renamed: dict[str, Any] = json.loads(text)
    renamed["containers"][0]["name"] = "node"
    return renamed


def _platform_volume(volume: dict[str, Any]) -> bool:
    """The job's SSH key Secret and hostfile ConfigMap, as either side names them."""
    secret = (volume.get("secret") or {}).get("secretName", "")
    config = (volume.get("configMap") or {}).get("name", "")
    return secret.endswith(("-ssh", "-mpi-ssh-auth")) or config.endswith(("-config", "-mpi-hostfile"))


def _files(container: dict[str, Any], platform: dict[str, Any], ssh_path: str) -> dict[str, Any]:
    found = {}
    mounts = container.pop("volumeMounts", None) or []
    container["volumeMounts"] = [m for m in mounts if m["name"] not in platform]
    for mount in (m for m in mounts if m["name"] in platform):
        source = platform[mount["name"]].get("secret") or platform[mount["name"]]["configMap"]
        for item in source["items"]:
            path = f"{mount['mountPath']}/{item['path']}"
            mode = item.get("mode", source.get("defaultMode", 0o644))
            if mount["mountPath"] == ssh_path or path == "/etc/mpi/hostfile":
                found[path] = (item["key"], mode & 0o077)
    return found


def _env(env: list[dict[str, Any]]) -> dict[str, Any]:
    out = {e["name"]: e.get("value", e.get("valueFrom")) for e in env}
    if "MPIJOB_RESTART_ATTEMPT" in out:  # the hook's literal attempt, JobSet's restart count
        value = out["MPIJOB_RESTART_ATTEMPT"]
        assert value == "0" or value == {
            "fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}
        }
        out["MPIJOB_RESTART_ATTEMPT"] = "<attempt>"
    return out


def roles(hostfile: list[str]) -> list[tuple[str, str]]:
    """(Pod, slots) per line: ``launcher`` or ``worker <i>``, from either side's host names."""
    found = []
    for line in hostfile:
        host, slots = line.split(" slots=")
        name = host.split(".")[0]
        match = re.search(r"-(?:worker-|node-0-)(\d+)$", name)
        found.append((f"worker {match[1]}" if match else "launcher", slots))
    return found


# --- the tests --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_trainer_runs_the_same_pods(case: Variant) -> None:
    result = convert(case)
    made, _ = trainer_made(case, result)
    hook = hook_children(case)
    job = with_defaults(MPIJob.model_validate(to_v2beta1(case.job()).obj))
    path = job.ssh_auth_mount_path
    assert made.pod_sets["node"].count == len(hook["workers"]) == job.worker_replicas
    assert made.pod_sets["launcher"].count == 1
    assert made.slots == job.slots_per_worker
    launcher_last = job.run_launcher_as_worker and made.hostfile[-1].startswith(f"{job.name}-launcher-")
    if launcher_last:
        assert sorted(roles(made.hostfile)) == sorted(roles(hook["hostfile"]))
        assert any("hostfile" in n and "last" in n for n in result.notes), result.notes
    else:
        assert roles(made.hostfile) == roles(hook["hostfile"])
    env = not case.runtime
    if case.runtime:
        assert any(n.startswith("env: K_MPI_JOB_ROLE") for n in result.notes)
    trainer_launcher = essentials(made.pod_sets["launcher"].template, path, hook=False)
    assert trainer_launcher == essentials(hook["launcher"], path, hook=True, hook_env=env)
    for worker in hook["workers"]:
        trainer_node = essentials(made.pod_sets["node"].template, path, hook=False)
        assert trainer_node == essentials(worker, path, hook=True, hook_env=env)
    assert trainer_launcher["files"]["node"][f"{path}/id_rsa"][0] == "ssh-privatekey"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_run_policy_and_gang_mean_the_same(case: Variant) -> None:
    result = convert(case)
    made, runtime = trainer_made(case, result)
    hook = hook_children(case)
    train, policy = result.obj["spec"], case.job()["spec"].get("runPolicy") or {}
    launcher_job = next(
        j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "launcher"
    )
    if not case.runtime:
        assert launcher_job["template"]["spec"].get("backoffLimit") == hook["launcher_job"].get(
            "backoffLimit"
        )
        ttl = runtime["spec"]["template"]["spec"].get("ttlSecondsAfterFinished")
        assert ttl == hook["launcher_job"].get("ttlSecondsAfterFinished")
    assert train.get("activeDeadlineSeconds") == hook["launcher_job"].get("activeDeadlineSeconds")
    assert train.get("suspend") == policy.get("suspend")
    assert result.obj["metadata"].get("labels") == case.job()["metadata"].get("labels")
    podgroup = hook["podgroup"]
    if podgroup is None:
        assert "podGroupPolicy" not in runtime["spec"]
        return
    assert made.pod_group_members == podgroup["spec"]["minMember"]
    if case.gang == "volcano":
        annotations = runtime["spec"]["template"]["metadata"]["annotations"]
        assert annotations["scheduling.volcano.sh/queue-name"] == podgroup["spec"]["queue"]
    else:
        coscheduling = runtime["spec"]["podGroupPolicy"]["coscheduling"]
        assert coscheduling["scheduleTimeoutSeconds"] == podgroup["spec"]["scheduleTimeoutSeconds"]


def test_trainer_would_count_the_launcher_among_the_nodes() -> None:
    """numNodes counts the launcher only when it runs ranks; Trainer then makes numNodes - 1 node Pods."""
    for name, as_worker, nodes in (("pi", False, 2), ("launcher-as-worker", True, 3)):
        case = next(c for c in CASES if c.name == name)
        result = convert(case)
        assert result.obj["spec"]["trainer"]["numNodes"] == nodes
        assert result.prerequisites[0]["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] is as_worker
        assert trainer_made(case, result)[0].pod_sets["node"].count == 2


def test_slots_stay_the_jobs_when_trainer_would_count_gpus() -> None:
    """Trainer reads GPUs from the first node or launcher container with resources: the nodes', once they
    come first (WaitForWorkersReady)."""
    gpus = next(c for c in CASES if c.name == "non-root-gpus")
    case = Variant(
        "gpus-waiting",
        PI,
        lambda job: (gpus.change(job), job["spec"].update(launcherCreationPolicy="WaitForWorkersReady")),
    )  # type: ignore[misc]
    result = convert(case)
    assert result.obj["spec"]["trainer"]["numProcPerNode"] == 1
    without = copy.deepcopy(result.obj)
    del without["spec"]["trainer"]["numProcPerNode"]
    runtime = copy.deepcopy(result.prerequisites[0])
    del runtime["spec"]["mlPolicy"]["mpi"]["numProcPerNode"]
    assert make(without, runtime).slots == 2  # what Trainer does with GPUs and no numProcPerNode


FAILURES = list(
    itertools.product(
        (ReplicaType.LAUNCHER, ReplicaType.WORKER), (None, 1, 3, 42, 137), ((), ("DisruptionTarget",)), (0, 3)
    )
)


@pytest.mark.parametrize(("replica", "code", "conditions", "restarts"), FAILURES)
def test_failure_policy_decides_as_the_hook(
    replica: ReplicaType, code: int | None, conditions: tuple[str, ...], restarts: int
) -> None:
    case = next(c for c in CASES if c.name == "failure-policy")
    result = convert(case)
    job = with_defaults(MPIJob.model_validate(case.job()))
    exit = Exit("p", "node", code, "Error", "") if code is not None else None
    wanted = rule_on(job, PodFailure(replica, "p", exit, frozenset(conditions)), restarts)
    jobset = result.prerequisites[0]["spec"]["template"]["spec"]
    name = "launcher" if replica is ReplicaType.LAUNCHER else "node"
    job_spec = next(j for j in jobset["replicatedJobs"] if j["name"] == name)["template"]["spec"]
    reason, message = pod_failure(job_spec, code, frozenset(conditions))
    got = jobset_decision(jobset["failurePolicy"], name, reason, message, restarts)
    assert got == ("fail" if wanted.action is Action.FAIL else "restart", wanted.counted)


def test_a_restart_waits_until_the_old_attempt_is_gone() -> None:
    result = convert(next(c for c in CASES if c.name == "failure-policy"))
    policy = result.prerequisites[0]["spec"]["template"]["spec"]["failurePolicy"]
    assert (policy["maxRestarts"], policy["restartStrategy"]) == (3, "BlockingRecreate")


def test_a_job_without_failure_policy_fails_with_its_first_dead_worker() -> None:
    result = convert(next(c for c in CASES if c.name == "pi"))
    jobset = result.prerequisites[0]["spec"]["template"]["spec"]
    node = next(j for j in jobset["replicatedJobs"] if j["name"] == "node")["template"]["spec"]
    assert node["backoffLimit"] == 0 and "failurePolicy" not in jobset
    assert jobset_decision(None, "node", *pod_failure(node, 1, frozenset()), 0) == ("fail", False)


# --- refusals and notes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REFUSED_EXAMPLES))
def test_intel_and_mpich_exit_2_with_the_reason(name: str) -> None:
    path = next(p for p in EXAMPLES if p.name == name)
    done = mpijob("convert", "--to", "trainjob", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert (
        f"spec.mpiImplementation {REFUSED_EXAMPLES[name]}: Kubeflow Trainer v2.3 runs OpenMPI only"
        in done.stderr
    )
    assert "keep this job an MPIJob" in done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda j: j["metadata"].update(name="a" * 45), "too long for Trainer"),
        (lambda j: j["spec"]["runPolicy"].update(activeDeadlineSeconds=0), "activeDeadlineSeconds 0"),
        (lambda j: j["spec"]["mpiReplicaSpecs"]["Launcher"].update(replicas=2), "not a valid MPIJob"),
    ],
)
def test_what_trainer_cannot_run_is_refused(change: Any, message: str) -> None:
    job = load(PI)
    change(job)
    with pytest.raises(ConvertError, match=message):
        to_trainjob(job)


def test_wait_for_workers_with_gang_scheduling_is_refused() -> None:
    with pytest.raises(ConvertError, match="never fits"):
        to_trainjob(load(PI.parent.parent / "gang" / "pi-volcano.yaml"), Target(gang_scheduling="volcano"))


def test_a_runtime_that_runs_the_job_differently_is_refused_naming_every_field() -> None:
    with pytest.raises(ConvertError) as refused:
        to_trainjob(load(PI), Target(shipped_runtime("deepspeed_distributed.yaml")))
    message = str(refused.value)
    assert "runLauncherAsNode is True" in message
    assert "convert without --runtime" in message


def test_notes_say_what_is_not_carried() -> None:
    by_name = {case.name: convert(case).notes for case in CASES}
    assert any("schedulingPolicy: not carried" in n for n in by_name["pi-volcano"])
    assert any("cleanPodPolicy All" in n for n in by_name["clean-all"])
    assert any("ssh refuses as root" in n for n in by_name["root-gpus"])
    assert any("named 'node'" in n for n in by_name["pi"])
    assert any(
        n.startswith(f"metadata.annotations[{ORDER_ANNOTATION}] topology") for n in by_name["pi-topology"]
    )
    assert not any(ORDER_ANNOTATION in n for n in by_name["pi"])
    assert any("restart is JobSet's" in n for n in by_name["failure-policy"])
    runtime_notes = by_name["on-deepspeed-runtime"]
    assert any(n.startswith("spec.launcherCreationPolicy: not carried") for n in runtime_notes)
    assert any("fails after 6 restarts of a node container" in n for n in runtime_notes)


def test_the_cli_prints_the_runtime_before_its_trainjob() -> None:
    done = mpijob("convert", "--to", "trainjob", str(PI))
    assert done.returncode == 0, done.stderr
    assert [(o["kind"], o["metadata"]["name"]) for o in objects(done)] == [
        ("TrainingRuntime", "pi"),
        ("TrainJob", "pi"),
    ]
    assert all(line.startswith("mpijob convert: pi: ") for line in done.stderr.splitlines())


def test_the_cli_converts_onto_a_runtime_file(tmp_path: Any) -> None:
    case = next(c for c in CASES if c.runtime)
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text(yaml.safe_dump(shipped_runtime(case.runtime)))
    done = mpijob(
        "convert", "--to", "trainjob", "--runtime", str(runtime), "-", stdin=yaml.safe_dump(case.job())
    )
    assert done.returncode == 0, done.stderr
    [trainjob] = objects(done)
    assert trainjob["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "deepspeed-distributed",
    }
    assert trainjob["spec"]["trainer"]["command"] == ["mpirun"]
    [patch] = trainjob["spec"]["runtimePatches"]
    assert patch["manager"] == "mpi-operator-hook/mpijob-convert"
    [node] = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert node["name"] == "node"
    assert node["template"]["spec"]["template"] == {
        "metadata": {"labels": {"team": "hpc"}},
        "spec": {"nodeSelector": {"pool": "cpu"}, "tolerations": [{"key": "cpu", "operator": "Exists"}]},
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [("kind: Pod\n", "holds 0 TrainingRuntimes, not one"), ("a: [", "--runtime"), (None, "no such file")],
)
def test_a_runtime_file_that_is_not_one_runtime_is_unusable(
    tmp_path: Any, content: str | None, message: str
) -> None:
    runtime = tmp_path / "runtime.yaml"
    if content is not None:
        runtime.write_text(content)
    done = mpijob("convert", "--to", "trainjob", "--runtime", str(runtime), str(PI))
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr or "runtime.yaml" in done.stderr, done.stderr


def test_the_namespace_goes_to_both_objects() -> None:
    result = to_trainjob(load(ROOT / "tests" / "fixtures" / "convert" / "training-operator-v1-horovod.yaml"))
    assert [o["metadata"].get("namespace") for o in (*result.prerequisites, result.obj)] == ["kubeflow"] * 2
    assert result.obj["metadata"]["labels"] == {"team": "vision"}


def test_a_training_runtime_of_another_namespace_is_refused() -> None:
    case = next(c for c in CASES if c.runtime)
    runtime = {**shipped_runtime(case.runtime), "kind": "TrainingRuntime"}
    runtime["metadata"] = {**runtime["metadata"], "namespace": "team-a"}
    job = case.job()
    job["metadata"]["namespace"] = "team-b"
    with pytest.raises(ConvertError, match="it is in namespace team-a, the job in team-b"):
        to_trainjob(job, Target(runtime))
    job["metadata"]["namespace"] = "team-a"
    assert to_trainjob(job, Target(runtime)).obj["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"


def test_the_workload_api_is_not_carried_and_says_so() -> None:
    """Trainer v2.3's podGroupPolicy has no Workload policy: the runtime gets no gang, and a note says it."""
    job = load(PI.parent.parent / "gang" / "pi-scheduler-plugins.yaml")
    job["metadata"].setdefault("annotations", {})["mpi-operator-hook/gang-topology-key"] = "rack"
    converted = to_trainjob(job, Target(gang_scheduling="kubernetes"))
    (runtime,) = converted.prerequisites
    assert "podGroupPolicy" not in runtime["spec"]
    assert "schedulerName" not in json.dumps(runtime)
    (note,) = [n for n in converted.notes if "Workload API" in n]
    assert "Trainer v2.3's podGroupPolicy has no Workload policy" in note and "'rack'" in note
    with pytest.raises(ConvertError, match="goes without --runtime"):
        to_trainjob(job, Target(shipped_runtime("deepspeed_distributed.yaml"), "kubernetes"))


def _wait(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in template["spec"].get("initContainers") or [] if c["name"] == WAIT]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_launcher_created_at_start_up_waits_for_the_nodes_as_under_the_hook(case: Variant) -> None:
    """The hook's wait-for-workers, its script unordered (Trainer's hostfile is in index order), skipping
    Trainer's launcher host with runLauncherAsWorker, reading the hostfile and key from the volumes Trainer
    adds (at /root/.ssh: the runtime's own 0600 key) in the Pod Trainer makes."""
    result = convert(case)
    made, _ = trainer_made(case, result)
    job = with_defaults(MPIJob.model_validate(to_v2beta1(case.job()).obj))
    launcher = made.pod_sets["launcher"].template
    if case.runtime or job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY:
        assert _wait(launcher) == []
        return
    (wait,) = _wait(launcher)
    (hooks,) = _wait(hook_children(case)["launcher"])
    own = f"{job.name}-launcher-0-0" if job.run_launcher_as_worker else "-"
    assert wait["command"] == [*hooks["command"][:2], launcher_wait.SCRIPT, WAIT, hooks["command"][4], own]
    # The rest as under the hook, but for the env and mounts Trainer gives the node container only: the
    # wait's env is the launcher's as the runtime writes it.
    mine = ("command", "volumeMounts", "env")
    assert {k: v for k, v in wait.items() if k not in mine} == {
        k: v for k, v in hooks.items() if k not in mine
    }
    runtime_launcher = result.prerequisites[0]["spec"]["template"]["spec"]["replicatedJobs"]
    (written,) = [j for j in runtime_launcher if j["name"] == "launcher"]
    node = written["template"]["spec"]["template"]["spec"]["containers"][0]
    assert wait.get("env") == node.get("env")
    mounts = {m["mountPath"]: m["name"] for m in wait["volumeMounts"]}
    key = "ssh-auth" if job.ssh_auth_mount_path == "/root/.ssh" else "mpi-ssh-auth"
    assert {p: mounts.get(p) for p in ("/etc/mpi", job.ssh_auth_mount_path)} == {
        "/etc/mpi": "mpi-hostfile",
        job.ssh_auth_mount_path: key,
    }
    volumes = {v["name"] for v in launcher["spec"]["volumes"]}
    assert set(mounts.values()) <= volumes, (mounts, volumes)


def test_a_runtime_derived_for_another_job_is_refused_when_its_wait_skips_another_launcher() -> None:
    job = PI_AS_WORKER.job()
    derived = to_trainjob(job, Target(None, "")).prerequisites[0]
    other = copy.deepcopy(job)
    other["metadata"]["name"] = "other"
    expected = "skips host launcher-as-worker-launcher-0-0, this job's launcher is other-launcher-0-0"
    with pytest.raises(ConvertError, match=expected):
        to_trainjob(other, Target(derived, ""))


def test_a_job_read_from_the_cluster_keeps_its_annotations_but_not_kubectls_copy_of_itself() -> None:
    job = load(PI)
    job["metadata"].update(
        namespace="team-a", uid="u", resourceVersion="7", managedFields=[{"manager": "kubectl"}],
        annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "hpc"},
    )  # fmt: skip
    job["status"] = {"conditions": [{"type": "Running", "status": "True"}]}
    metadata = to_trainjob(job, Target(None, "")).obj["metadata"]
    assert metadata == {"name": "pi", "namespace": "team-a", "annotations": {"team": "hpc"}}
