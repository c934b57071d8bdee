"""What ``mpijob convert --to trainjob`` writes, applied as written and run to the end by the real Kubeflow
Trainer v2.3.0 and JobSet v0.12.0 controllers (trainer.py) on the real node: the examples Trainer can run,
the variants of the conversion table that change what runs, a failure, a deadline, suspend and resume, the
same job side by side with the hook (side_by_side.py), docs/migration.md's steps as written, and the real
Kueue admitting a converted job. Each test says what it proved in its ``e2e_summary``.

Every container asks 250m CPU (a job of three: 750m, one job at a time on the node's 2 CPUs beside the hook).
Trainer and JobSet are installed for this module and removed after it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kube import Kube, wait_for
from tests.node import kueue, neighbours, runs, side_by_side, trainer, trainjobs
from tests.node.conftest import RealNode
from tests.node.images import ROOT
from tests.node.quickstart import doc_blocks

CPU = "250m"
IMAGES = {"openmpi4": "mpioperator/mpi-pi:openmpi", "openmpi5": "mpioperator/mpi-pi:openmpi5"}
TRAINER_DEPLOYMENT = "kubeflow-trainer-controller-manager"
MIGRATION = ROOT / "docs" / "migration.md"


@pytest.fixture(scope="module")
def trainer_node(real_node: RealNode) -> Iterator[RealNode]:
    """Trainer and JobSet installed from their own manifests for this module's tests, removed after them. On
    a given cluster (MPI_HOOK_NODE_KUBECONFIG), the Trainer installed there is used."""
    cluster = real_node.cluster
    if cluster is None:
        if real_node.kube.get("deployments", trainer.NAMESPACE, TRAINER_DEPLOYMENT) is None:
            pytest.skip("no Kubeflow Trainer on the given cluster")
        yield real_node
        return
    try:
        built, jobset = cluster.builds["trainer"].result(), cluster.builds["jobset"].result()
    except RuntimeError as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"Trainer or JobSet could not be built here: {err}")
    for recipe in trainer.recipes(built, jobset):
        cluster.add_image(recipe)
    jobset_objects, trainer_objects = trainer.manifests(built, jobset)
    began = time.monotonic()
    trainer.install(real_node.kube, jobset_objects, trainer_objects)
    cluster.timings[f"Trainer {built.version} and JobSet {jobset.version} installed"] = (
        time.monotonic() - began
    )
    try:
        yield real_node
    finally:
        trainer.uninstall(real_node.kube, jobset_objects, trainer_objects)


def pi(name: str, image: str = IMAGES["openmpi4"]) -> dict[str, Any]:
    """examples/pi/pi.yaml as ``name``, every container at CPU."""
    return runs.with_image(runs.example("pi.yaml", name, cpu=CPU), image)


def _ranks(job: dict[str, Any], ranks: int) -> None:
    runs.launcher(job)["args"] = ["-n", str(ranks), "/home/mpiuser/pi"]


def run(node: RealNode, ns: str, job: dict[str, Any]) -> None:
    """Convert ``job``, apply what was written, wait for the TrainJob Complete."""
    trainjobs.apply(node.kube, ns, trainjobs.convert(job))
    trainjobs.wait_condition(node.kube, ns, job["metadata"]["name"], "Complete")


def hosts(placed: dict[int, str]) -> list[str]:
    return sorted(placed.values())


@pytest.mark.parametrize("build", sorted(IMAGES))
def test_the_converted_pi_example_completes_with_every_rank_on_its_host(
    trainer_node: RealNode, ns: str, build: str, record_property: pytest.RecordProperty
) -> None:
    kube = trainer_node.kube
    began = time.monotonic()
    run(trainer_node, ns, pi("pi", IMAGES[build]))
    took = time.monotonic() - began
    placed = trainjobs.assert_ran_on_hostfile(kube, ns, "pi", 2)
    assert hosts(placed) == ["pi-node-0-0", "pi-node-0-1"]
    assert "pi is approximately 3.14" in trainjobs.launcher_log(kube, ns, "pi")
    record_property(
        "e2e_summary",
        f"Trainer: examples/pi ({build}) converted, applied as written: TrainJob Complete in {took:.0f} s,"
        f" ranks {placed} as the hostfile says: {trainjobs.hostfile(kube, ns, 'pi').split()}",
    )


def _slots(job: dict[str, Any]) -> None:
    job["spec"]["slotsPerWorker"] = 2
    _ranks(job, 4)


def _launcher_as_worker(job: dict[str, Any]) -> None:
    job["spec"]["runLauncherAsWorker"] = True
    _ranks(job, 3)


def _root(job: dict[str, Any]) -> None:
    """Root, the key at /root/.ssh (the path where Trainer's own mount, 0640, would be refused by ssh: the
    runtime the converter writes mounts a 0600 copy there), sshd with the image's own configuration."""
    job["spec"]["sshAuthMountPath"] = "/root/.ssh"
    for container in runs.containers(job):
        container.pop("securityContext")
    runs.launcher(job)["args"] = ["--allow-run-as-root", "-n", "2", "/home/mpiuser/pi"]
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"] = ["-De"]


# variant -> (change, ranks, the hosts of the ranks); the examples themselves run as mpiuser (non-root keys)
VARIANTS = {
    "root": (_root, 2, ["root-node-0-0", "root-node-0-1"]),
    "slots": (_slots, 4, ["slots-node-0-0"] * 2 + ["slots-node-0-1"] * 2),
    "launcher-as-worker": (
        _launcher_as_worker,
        3,
        ["launcher-as-worker-launcher-0-0", "launcher-as-worker-node-0-0", "launcher-as-worker-node-0-1"],
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_variant_that_changes_what_runs_completes_as_the_mpijob_would(
    trainer_node: RealNode, ns: str, variant: str, record_property: pytest.RecordProperty
) -> None:
    change, ranks, expected = VARIANTS[variant]
    job = pi(variant)
    change(job)
    run(trainer_node, ns, job)
    placed = trainjobs.assert_ran_on_hostfile(trainer_node.kube, ns, variant, ranks)
    assert hosts(placed) == expected
    record_property("e2e_summary", f"Trainer: {variant}: Complete, ranks {placed}")


def _failing(name: str, backoff_limit: int) -> dict[str, Any]:
    """pi whose launcher exits 1 after printing a line (every attempt)."""
    job = pi(name)
    launcher = runs.launcher(job)
    launcher["command"] = ["sh", "-c", "echo 'the launcher gives up'; exit 1"]
    launcher.pop("args", None)
    job["spec"]["runPolicy"] = {"backoffLimit": backoff_limit}
    return job


def _failed_runs(pod: dict[str, Any]) -> int:
    """How many runs of the MPI container ended with exit 1 (its restarts, and the run that ended last)."""
    for status in pod["status"].get("containerStatuses") or []:
        now, before = status.get("state") or {}, status.get("lastState") or {}
        ended = [s["terminated"] for s in (now, before) if "terminated" in s]
        if status["name"] == trainjobs.CONTAINER and any(e["exitCode"] == 1 for e in ended):
            return int(status.get("restartCount", 0)) + (1 if "terminated" in now else 0)
    return 0


def test_a_launcher_that_exits_1_is_retried_backoff_limit_times_then_the_trainjob_fails(
    trainer_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """The launcher restarts in place (``OnFailure``, as the MPIJob's): attempts are its container's runs."""
    kube = trainer_node.kube
    trainjobs.apply(kube, ns, trainjobs.convert(_failing("fails", backoff_limit=1)))
    attempts: dict[str, int] = {}  # launcher Pod -> runs of its container that ended with exit 1
    logs: list[str] = []

    def failed() -> bool:
        for pod in trainjobs.pods(kube, ns, "fails", "launcher"):
            name = pod["metadata"]["name"]
            attempts[name] = max(_failed_runs(pod), attempts.get(name, 0))
            if attempts[name] and not logs:
                logs.append(kube.kubectl("-n", ns, "logs", name, "-c", trainjobs.CONTAINER).stdout)
        found = trainjobs.conditions(trainjobs.get(kube, ns, "fails"))
        return found.get("Failed", {}).get("status") == "True"

    wait_for(failed, trainjobs.RUN_SECONDS, "TrainJob fails Failed")
    reason = trainjobs.conditions(trainjobs.get(kube, ns, "fails"))["Failed"]
    assert sum(attempts.values()) == 2, attempts  # the first run and one retry: backoffLimit 1
    assert "the launcher gives up" in logs[0], logs
    record_property(
        "e2e_summary",
        f"Trainer: launcher exits 1, backoffLimit 1: runs per launcher Pod {attempts}, each exit 1;"
        f" TrainJob Failed {reason.get('reason')}: {reason.get('message')}",
    )


def test_a_job_past_its_deadline_fails_with_the_reason(
    trainer_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    kube = trainer_node.kube
    job = pi("late")
    launcher = runs.launcher(job)
    launcher["command"], launcher["args"] = ["sleep"], ["600"]
    job["spec"]["runPolicy"] = {"activeDeadlineSeconds": 30}
    manifest = trainjobs.convert(job)
    began = time.monotonic()
    trainjobs.apply(kube, ns, manifest)
    failed = trainjobs.wait_condition(kube, ns, "late", "Failed", timeout=120)
    took = time.monotonic() - began
    reason = trainjobs.conditions(failed)["Failed"]
    # By the apiserver's clock: the deadline counts from the TrainJob's start, never before its creation.
    assert trainjobs.seconds(reason["lastTransitionTime"], failed["metadata"]["creationTimestamp"]) >= 30
    wait_for(lambda: not trainjobs.pods(kube, ns, "late", "launcher"), 120, "the launcher gone")
    record_property(
        "e2e_summary",
        f"Trainer: activeDeadlineSeconds 30: TrainJob Failed after {took:.0f} s,"
        f" {reason.get('reason')}: {reason.get('message')}",
    )


def test_suspended_then_resumed_through_the_trainjob_completes_with_its_queue_label(
    trainer_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    kube = trainer_node.kube
    job = pi("held")
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    job["spec"]["runPolicy"] = {"suspend": True}
    trainjobs.apply(kube, ns, trainjobs.convert(job))
    trainjobs.wait_condition(kube, ns, "held", "Suspended", timeout=60)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert not kube.list("pods", ns), "a Pod of a suspended TrainJob"
        time.sleep(0.5)
    kube.kubectl("-n", ns, "patch", "trainjob", "held", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    done = trainjobs.wait_condition(kube, ns, "held", "Complete")
    assert done["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    trainjobs.assert_ran_on_hostfile(kube, ns, "held", 2)
    record_property(
        "e2e_summary",
        "Trainer: suspend: true -> TrainJob Suspended, no Pod over 5 s; resumed -> Complete, queue label"
        " kept",
    )


def test_side_by_side_the_hook_and_trainer_run_the_same_job_alike(
    trainer_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """The same MPIJob run by the hook, then (the MPIJob deleted) its conversion by Trainer: both put rank
    i on worker i as their hostfiles say; every difference in the launcher's environment and in the kinds of
    objects is named in docs/migration.md, where the table goes."""
    kube = trainer_node.kube
    job = pi("pi")
    hook = side_by_side.hook_run(kube, ns, job)
    kube.kubectl("-n", ns, "delete", "mpijob", "pi", "--wait=true", "--timeout=120s")
    wait_for(lambda: not kube.list("pods", ns), 120, "the MPIJob's Pods gone")
    trainer_ = side_by_side.trainer_run(kube, ns, trainjobs.convert(job), "pi")
    assert hook.workers() == trainer_.workers() == [0, 1]
    assert side_by_side.rank_workers(hook) == side_by_side.rank_workers(trainer_)
    record_property("e2e_summary", "Trainer side by side:\n" + side_by_side.table(hook, trainer_))
    guide = MIGRATION.read_text()
    unexplained = [e for e in set(hook.env) ^ set(trainer_.env) if f"`{e}`" not in guide]
    assert not unexplained, f"launcher env not in docs/migration.md: {sorted(unexplained)}"
    kinds = set(hook.objects) ^ set(trainer_.objects)
    unnamed = [k for k in kinds if side_by_side.KIND_NAMES[k] not in guide]
    assert not unnamed, f"kinds made by one only, not in docs/migration.md: {sorted(unnamed)}"


MOVING = "### Moving a cluster to Trainer"


def _guide_shell(node: RealNode, ns: str, workdir: Path) -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Runs a command of the guide as a user would in ``ns``: bash, the kubeconfig's context in that
    namespace, ``mpijob`` on the PATH, in a folder of its own that sees the repository's deploy/ and
    examples/ (so trainjobs.yaml lands there)."""
    config = yaml.safe_load(node.kubeconfig.read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = ns
    (workdir / "kubeconfig").write_text(yaml.safe_dump(config))
    for folder in ("deploy", "examples"):
        (workdir / folder).symlink_to(ROOT / folder)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "KUBECONFIG": str(workdir / "kubeconfig"), "PATH": path}

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=workdir, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip

    return shell


def _refused(shell: Callable[[str], subprocess.CompletedProcess[str]], workdir: Path) -> bool:
    """A new MPIJob is refused, and the error says what to do instead."""
    (workdir / "newer.yaml").write_text(yaml.safe_dump(runs.example("pi.yaml", "newer")))
    done = shell("kubectl create --dry-run=server -f newer.yaml")
    return done.returncode != 0 and "mpijob convert --to trainjob" in done.stderr


def test_moving_a_namespace_to_trainer_as_the_migration_guide_says_and_back(
    trainer_node: RealNode, ns: str, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    """docs/migration.md's steps word for word, with examples/pi running as an MPIJob: new MPIJobs refused
    with the way out, the running one converted from the cluster, finished, deleted, its TrainJob Complete
    and its log read; then back: the TrainJob gone, MPIJobs accepted, examples/pi Succeeded again."""
    kube = trainer_node.kube
    shell = _guide_shell(trainer_node, ns, tmp_path)
    moving, back = doc_blocks(MIGRATION, MOVING)[:2]
    runs.apply(kube, ns, runs.example("pi.yaml", "pi"))
    said: dict[str, str] = {}
    try:
        for command in moving:
            done = shell(command)
            assert done.returncode == 0, f"`{command}` failed ({done.returncode}): {done.stderr}"
            said[command] = done.stdout
            if "deploy/migration" in command:
                wait_for(lambda: _refused(shell, tmp_path), 30, "a new MPIJob refused by the policy")
        assert "pi is approximately 3.14" in said[moving[-1]], said[moving[-1]]
        trainjobs.wait_condition(kube, ns, "pi", "Complete", timeout=1)
        for command in back:
            done = shell(command)
            assert done.returncode == 0, f"`{command}` failed ({done.returncode}): {done.stderr}"
        runs.succeeded(kube, ns, "pi")
    finally:
        shell("kubectl delete --ignore-not-found -k deploy/migration")
    assert trainjobs.get(kube, ns, "pi") is None
    record_property(
        "e2e_summary",
        f"Trainer: docs/migration.md, moving and back, {len(moving) + len(back)} commands as written: a new"
        f" MPIJob refused with the way out; pi converted from the cluster, TrainJob Complete; MPIJob pi again"
        f" Succeeded",
    )


TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"


def _workload(kube: Kube, ns: str, trainjob: dict[str, Any], condition: str) -> dict[str, Any] | None:
    """The TrainJob's Kueue Workload once ``condition`` is True."""
    found = kueue.workloads(kube, ns, trainjob)
    return found[0] if found and kueue.condition(found[0], condition).get("status") == "True" else None


def test_kueue_queues_and_admits_the_converted_trainjob_by_the_label_it_kept(
    trainer_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """The real Kueue (v0.17.0, its TrainJob integration on) beside Trainer: the TrainJob of an MPIJob
    labelled for a LocalQueue is created suspended by Kueue's webhook, admitted by its Workload, Complete."""
    cluster, kube = trainer_node.cluster, trainer_node.kube
    if cluster is None:
        pytest.skip("the real Kueue beside Trainer: installed by the harness only")
    built = cluster.builds["kueue"].result()
    cluster.add_image(kueue.recipe(built))
    objects = kueue.manifests(built, kueue.with_frameworks("batch/job", TRAINJOB_FRAMEWORK))
    kueue.install(kube, objects)
    queues = [
        kueue.resource_flavor(f"{ns}-flavor"),
        kueue.cluster_queue(ns, f"{ns}-flavor", "1", "4Gi"),
        kueue.local_queue(ns, "user-queue", ns),
    ]
    try:
        with neighbours.applied(kube, queues):
            job = pi("queued")
            job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
            trainjobs.apply(kube, ns, trainjobs.convert(job))
            created = trainjobs.get(kube, ns, "queued")
            assert created is not None and created["spec"].get("suspend") is True, created
            workload = wait_for(
                lambda: _workload(kube, ns, created, "Admitted"), 120, "the Workload admitted"
            )
            trainjobs.wait_condition(kube, ns, "queued", "Complete")
            wait_for(lambda: _workload(kube, ns, created, "Finished"), 60, "the Workload Finished")
    finally:
        neighbours.uninstall(kube, objects)
    trainjobs.assert_ran_on_hostfile(kube, ns, "queued", 2)
    record_property(
        "e2e_summary",
        f"Trainer + Kueue {built.version} ({TRAINJOB_FRAMEWORK}): the TrainJob created suspended by Kueue's"
        f" webhook, admitted through Workload {workload['metadata']['name']}, Complete, Workload Finished",
    )
