"""``mpijob convert``: upstream's documented MPIJob shapes (our own fixtures) to v2beta1.

The two upstream example shapes must become the hand-written v2beta1 equivalent exactly; everything converted
must pass the CRD's admission rules (rebuilt in ``test_crd``) and lint without errors. The training-operator
case and pi as a TrainJob are golden files (``--update-golden``), notes included: every dropped field says
why. What a TrainJob means is tested in test_convert_trainjob.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.lint import Severity, lint_manifest
from app.cli.yamlio import dump_all
from app.convert.mpijob import ConvertError, to_v2beta1
from app.convert.trainjob import to_trainjob
from tests.packaging.test_crd import crd_admission
from tests.support import paths
from tests.support.paths import ROOT
from tests.unit.cli.test_cli import mpijob, objects

FIXTURES = paths.FIXTURES / "convert"
GOLDEN = paths.GOLDEN / "convert"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


@pytest.fixture(scope="module")
def admission() -> Any:
    return crd_admission()


@pytest.mark.parametrize("name", ["v1alpha2-tensorflow-benchmarks", "v1-tensorflow-benchmarks"])
def test_upstream_example_shapes_become_the_v2beta1_example(name: str, admission: Any) -> None:
    result = to_v2beta1(load(FIXTURES / f"{name}.yaml"))
    assert result.obj == load(FIXTURES / "tensorflow-benchmarks.v2beta1.yaml")
    assert admission(result.obj) == set()
    assert lint_manifest(result.obj) == []
    # The one thing a user must know: the workers now need sshd.
    assert len(result.notes) == 1 and "sshd" in result.notes[0]


def test_a_v2beta1_job_converts_to_itself() -> None:
    job = load(ROOT / "examples" / "pi" / "pi.yaml")
    assert to_v2beta1(job).obj == job and to_v2beta1(job).notes == []


# --- v1alpha1: one template and a size, split as mpi-operator v0.2's allocateProcessingUnits did ------------


def v1alpha1(**spec: Any) -> dict[str, Any]:
    container = {"name": "train", "image": "example.com/train", "command": ["mpirun", "python", "train.py"]}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "MPIJob",
        "metadata": {"name": "a"},
        "spec": {"template": template, **spec},
    }


def _worker_limits(obj: dict[str, Any]) -> dict[str, Any]:
    worker = obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    limits: dict[str, Any] = worker.get("resources", {}).get("limits", {})
    return limits


@pytest.mark.parametrize(
    ("spec", "workers", "limits", "slots"),
    [
        # a total below a node's worth: one worker with all of it
        ({"gpus": 1}, 1, {"nvidia.com/gpu": 1}, 1),
        ({"gpus": 4}, 1, {"nvidia.com/gpu": 4}, 4),
        # whole nodes: 8 GPUs each unless the job says (the v1alpha1 deploy manifests' --gpus-per-node)
        ({"gpus": 16}, 2, {"nvidia.com/gpu": 8}, 8),
        ({"gpus": 16, "gpusPerNode": 4}, 4, {"nvidia.com/gpu": 4}, 4),
        ({"gpus": 16, "slotsPerWorker": 1}, 2, {"nvidia.com/gpu": 8}, 1),
        # processing units: 1 per node unless the job says, of the job's resource type
        ({"processingUnits": 3}, 3, {"nvidia.com/gpu": 1}, 1),
        (
            {"processingUnits": 8, "processingUnitsPerNode": 4, "processingResourceType": "cpu"},
            2,
            {"cpu": 4},
            4,
        ),
        # workers given: each with the template's own limit, whose amount is the slots
        ({"replicas": 3}, 3, {}, 1),
        ({"replicas": 2, "gpus": 8, "gpusPerNode": 8}, 1, {"nvidia.com/gpu": 8}, 8),
    ],
)
def test_v1alpha1_sizes_become_workers_and_slots(
    spec: dict[str, Any], workers: int, limits: dict[str, Any], slots: int, admission: Any
) -> None:
    result = to_v2beta1(v1alpha1(**spec))
    assert result.obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == workers
    assert _worker_limits(result.obj) == limits
    assert result.obj["spec"]["slotsPerWorker"] == slots
    assert admission(result.obj) == set()
    assert [f for f in lint_manifest(result.obj) if f.severity is Severity.ERROR] == []
    per_node = {"gpus": "gpusPerNode", "processingUnits": "processingUnitsPerNode"}
    assumed = any(total in spec and field not in spec for total, field in per_node.items())
    assert any("default" in n and "per node" in n for n in result.notes) == assumed
    assert any("spec.replicas: ignored" in n for n in result.notes) == ("replicas" in spec and "gpus" in spec)


def test_v1alpha1_replicas_keep_the_template_gpu_limit_as_the_slots() -> None:
    job = v1alpha1(replicas=4)
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    result = to_v2beta1(job)
    assert _worker_limits(result.obj) == {"nvidia.com/gpu": "2"}  # as written
    assert result.obj["spec"]["slotsPerWorker"] == 2
    launcher = result.obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert "resources" not in launcher
    assert any("Launcher: resources of container 'train' dropped" in n for n in result.notes)


def test_v1alpha1_template_becomes_launcher_and_workers() -> None:
    job = v1alpha1(replicas=2, backoffLimit=3, activeDeadlineSeconds=60, launcherOnMaster=True, extra=1)
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    result = to_v2beta1(job)
    spec = result.obj["spec"]
    assert spec["runPolicy"] == {"cleanPodPolicy": "All", "backoffLimit": 3, "activeDeadlineSeconds": 60}
    launcher, worker = spec["mpiReplicaSpecs"]["Launcher"], spec["mpiReplicaSpecs"]["Worker"]
    assert launcher["restartPolicy"] == "Never" and "restartPolicy" not in worker
    assert "restartPolicy" not in launcher["template"]["spec"] | worker["template"]["spec"]
    assert launcher["template"]["spec"]["containers"][0]["command"] == ["mpirun", "python", "train.py"]
    assert "command" not in worker["template"]["spec"]["containers"][0]  # v1alpha1 ran sleep there
    assert launcher["template"]["spec"]["tolerations"] == [
        {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in worker["template"]["spec"]
    joined = "\n".join(result.notes)
    for expected in ("spec.extra: dropped", "control-plane", "command of container 'train' dropped", "sshd"):
        assert expected in joined


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"gpus": 12}, "12 is not a multiple of 8 per node, .* set spec.gpusPerNode"),
        ({"gpus": 2, "processingUnits": 2}, "both set: .* keep one"),
        ({}, "started no worker; add spec.replicas"),
        ({"replicas": 0}, "spec.replicas: 0 is not a whole number of at least 1"),
        ({"gpus": True}, "spec.gpus: True is not a whole number"),
        ({"replicas": 1, "template": {"spec": {"containers": []}}}, "has no container: .* add one"),
        ({"replicas": 1, "mpiReplicaSpecs": {}}, "set apiVersion kubeflow.org/v1"),
    ],
)
def test_what_the_v1alpha1_operator_refused_is_refused_with_the_fix(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConvertError, match=message):
        to_v2beta1(v1alpha1(**spec))


@pytest.mark.parametrize("version", ["kubeflow.org/v1", "kubeflow.org/v1alpha2"])
def test_the_v1alpha1_shape_under_a_later_version_is_read_as_v1alpha1(version: str, admission: Any) -> None:
    job = load(FIXTURES / "v1-in-v1alpha1-shape.yaml") | {"apiVersion": version}
    result = to_v2beta1(job)
    assert f"v1alpha1's shape (no spec.mpiReplicaSpecs) under apiVersion {version}" in result.notes[0]
    assert result.obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    assert _worker_limits(result.obj) == {"nvidia.com/gpu": 4}
    assert admission(result.obj) == set()


def test_v2_is_v2beta1_renamed(admission: Any) -> None:
    job = load(FIXTURES / "v2-unserved-version.yaml")
    job["spec"]["mainContainer"] = "mnist"
    result = to_v2beta1(job)
    assert result.obj["apiVersion"] == "kubeflow.org/v2beta1"
    assert result.obj["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}
    assert {"cleanPodPolicy", "mainContainer"}.isdisjoint(result.obj["spec"])
    assert result.obj["spec"]["mpiReplicaSpecs"] == job["spec"]["mpiReplicaSpecs"]
    assert admission(result.obj) == set()
    assert lint_manifest(result.obj) == []
    assert len(result.notes) == 3 and "before its first release" in result.notes[0]


@pytest.mark.parametrize(
    ("specs", "missing"),
    [
        ({}, "Launcher or Worker"),
        ({"Launcher": {"replicas": 1}}, "Worker"),
        ({"Worker": {"replicas": 1}}, "Launcher"),
        ({"Worker": 5}, "Launcher or Worker"),
    ],
)
@pytest.mark.parametrize("version", ["kubeflow.org/v1", "kubeflow.org/v2beta1"])
def test_convert_never_returns_a_job_without_launcher_and_worker(
    specs: dict[str, Any], missing: str, version: str
) -> None:
    job = {
        "apiVersion": version,
        "kind": "MPIJob",
        "metadata": {"name": "a"},
        "spec": {"mpiReplicaSpecs": specs},
    }
    with pytest.raises(ConvertError, match=f"no {missing} in spec.mpiReplicaSpecs"):
        to_v2beta1(job)
    with pytest.raises(ConvertError, match=f"no {missing} in spec.mpiReplicaSpecs"):
        to_trainjob(job)


def test_early_v2beta1_spec_level_fields_move_into_run_policy() -> None:
    result = to_v2beta1(load(FIXTURES / "v2beta1-spec-level-clean-pod-policy.yaml"))
    assert result.obj["spec"]["runPolicy"] == {"backoffLimit": 2, "cleanPodPolicy": "Running"}
    assert {"cleanPodPolicy", "backoffLimit"}.isdisjoint(result.obj["spec"])
    assert result.notes == [
        "spec.cleanPodPolicy: moved to spec.runPolicy.cleanPodPolicy (v2beta1 has it there only)",
        "spec.backoffLimit: 0 dropped, runPolicy.backoffLimit 2 takes precedence",
    ]
    assert lint_manifest(result.obj) == []


def test_spec_level_fields_yield_to_run_policy() -> None:
    job = load(FIXTURES / "v1-tensorflow-benchmarks.yaml")
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    job["spec"]["backoffLimit"] = 2
    result = to_v2beta1(job)
    assert result.obj["spec"]["runPolicy"] == {"cleanPodPolicy": "All", "backoffLimit": 2}
    assert any("spec.cleanPodPolicy: 'Running' ignored" in n for n in result.notes)


def test_mpi_distribution_becomes_mpi_implementation() -> None:
    job = load(FIXTURES / "v1alpha2-tensorflow-benchmarks.yaml")
    job["spec"]["mpiDistribution"] = "intel_mpi"
    assert to_v2beta1(job).obj["spec"]["mpiImplementation"] == "Intel"


CASES = {
    "training-operator-v1-horovod": (FIXTURES / "training-operator-v1-horovod.yaml", "v2beta1"),
    "pi-trainjob": (ROOT / "examples" / "pi" / "pi.yaml", "trainjob"),
}


def _convert(path: Path, to: str) -> tuple[dict[str, Any], list[str]]:
    result = to_v2beta1(load(path)) if to == "v2beta1" else to_trainjob(load(path))
    return result.obj, result.notes


@pytest.mark.parametrize("name", CASES, ids=list(CASES))
def test_golden_conversions(name: str, update_golden: bool) -> None:
    path, to = CASES[name]
    result = to_v2beta1(load(path)) if to == "v2beta1" else to_trainjob(load(path))
    text = dump_all([*result.prerequisites, result.obj])  # as `mpijob convert` prints it
    text += "".join(f"# note: {n}\n" for n in result.notes)
    path = GOLDEN / f"{name}.yaml"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text, f"{path} is stale: run --update-golden and review the diff"


def test_training_operator_job_is_admitted_and_says_what_it_dropped(admission: Any) -> None:
    obj, notes = _convert(*CASES["training-operator-v1-horovod"])
    assert admission(obj) == set()
    assert [f for f in lint_manifest(obj) if f.severity is Severity.ERROR] == []
    launcher = obj["spec"]["mpiReplicaSpecs"]["Launcher"]
    assert [c["name"] for c in launcher["template"]["spec"]["containers"]] == ["mpi-launcher", "sidecar"]
    assert "restartPolicy" not in launcher
    assert "managedBy" not in obj["spec"]["runPolicy"]
    assert obj["metadata"] == {
        "name": "tensorflow-mnist",
        "namespace": "kubeflow",
        "labels": {"team": "vision"},
    }
    joined = "\n".join(notes)
    for expected in (
        "creationTimestamp, resourceVersion, uid dropped",
        "status: dropped",
        "'ExitCode' is not",
        "managedBy: 'kubeflow.org/training-operator' dropped",
        "moved first",
    ):
        assert expected in joined


# --- the console script ------------------------------------------------------------------------------------


def test_convert_prints_yaml_and_notes_on_stderr() -> None:
    done = mpijob("convert", str(FIXTURES / "training-operator-v1-horovod.yaml"))
    assert done.returncode == 0
    [obj] = objects(done)
    assert obj["apiVersion"] == "kubeflow.org/v2beta1"
    notes = done.stderr.splitlines()
    assert notes and all(n.startswith("mpijob convert: tensorflow-mnist: ") for n in notes)


def test_converted_output_renders(tmp_path: Path) -> None:
    converted = mpijob("convert", str(FIXTURES / "v1-tensorflow-benchmarks.yaml"))
    rendered = mpijob("render", "-", stdin=converted.stdout)
    assert rendered.returncode == 0, rendered.stderr
    assert [c["kind"] for c in objects(rendered)][-1] == "Job"


@pytest.mark.parametrize(
    "flag", ["--runtime", "--gang-scheduling", "-n", "--namespace", "--kubeconfig", "--context"]
)
def test_trainjob_flags_without_trainjob_are_a_usage_error(flag: str) -> None:
    done = mpijob("convert", flag, "x", str(FIXTURES / "v1-tensorflow-benchmarks.yaml"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "mpijob convert: --runtime, --gang-scheduling, -n, --kubeconfig and --context go with --to trainjob:"
        " add --to trainjob, or leave them out\n"
    )
