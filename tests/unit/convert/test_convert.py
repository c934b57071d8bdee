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
from app.convert.mpijob import ConvertError, to_v2beta1
from app.convert.trainjob import to_trainjob
from tests.packaging.test_crd import CRD_FILE, _nodes, admission_errors
from tests.unit.cli.test_cli import mpijob, objects

import cel  # isort: skip
from tests.support import paths
from tests.support.paths import ROOT

FIXTURES = paths.FIXTURES / "convert"
GOLDEN = paths.GOLDEN / "convert"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


@pytest.fixture(scope="module")
def admission() -> Any:
    crd = yaml.safe_load(CRD_FILE.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    programs = {
        r["rule"]: cel.compile(r["rule"])
        for _, n, _ in _nodes(schema)
        for r in n.get("x-kubernetes-validations", [])
    }
    return lambda obj: admission_errors(schema, programs, obj)


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


def test_v1alpha1_is_refused_with_a_reason() -> None:
    with pytest.raises(ConvertError, match="v1alpha1 jobs have no replica specs"):
        to_v2beta1({"apiVersion": "kubeflow.org/v1alpha1", "kind": "MPIJob", "spec": {"gpus": 8}})


@pytest.mark.parametrize("version", ["kubeflow.org/v1", "kubeflow.org/v1alpha2"])
def test_the_v1alpha1_shape_under_a_later_version_is_refused(version: str) -> None:
    job = load(FIXTURES / "v1-in-v1alpha1-shape.yaml") | {"apiVersion": version}
    with pytest.raises(ConvertError, match=f"v1alpha1 shape .* under apiVersion {version}"):
        to_v2beta1(job)


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
    text = yaml.safe_dump_all([*result.prerequisites, result.obj], sort_keys=False)
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
        "mpijob: --runtime, --gang-scheduling, -n, --kubeconfig and --context go with --to trainjob\n"
    )
