"""Every shape upstream's ``examples/`` (v1alpha1, v1alpha2, v1, v2, v2beta1) put in users' hands, through
every command.

The fixtures are our own small files of each shape that mattered (``tests/fixtures/convert/``), not
upstream's files. Each command, and ``convert``'s output fed to ``lint`` and ``render``, gives a correct
result or a clear error with exit code 2: never exit 0 with an empty or broken job.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import paths
from tests.unit.cli.test_cli import mpijob, objects

FIXTURES = paths.FIXTURES / "convert"
CHILDREN = ["Service", "ConfigMap", "Secret", "Pod", "Pod", "Job"]

# fixture -> command -> (exit code, text expected on stderr, or stdout for lint; None: nothing there)
# "convert|lint" and "convert|render" run on convert's output, when convert succeeded.
SHAPES: dict[str, dict[str, tuple[int, str | None]]] = {
    "v1-in-v1alpha1-shape": {
        "convert": (0, "v1alpha1's shape (no spec.mpiReplicaSpecs) under apiVersion kubeflow.org/v1"),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
        "convert|lint": (0, None),
        "convert|render": (0, None),
    },
    "v1alpha1-gpus": {
        "convert": (0, "spec.gpus: 16 split as by the v1alpha1 operator's default 8 per node"),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
        "convert|lint": (0, "info [launcher-command]"),
        "convert|render": (0, None),
    },
    "v1alpha1-replicas": {
        "convert": (0, "command of container 'train' dropped: the v1alpha1 operator ran sleep there"),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
        "convert|lint": (0, None),
        "convert|render": (0, None),
    },
    "v1alpha1-every-field": {
        "convert": (
            0,
            "spec.launcherOnMaster: the launcher tolerates and requires node-role.kubernetes.io/master",
        ),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
        "convert|lint": (0, None),
        "convert|render": (0, None),
    },
    "v1alpha2-pod-level-gpus": {
        "convert": (0, "spec.runPolicy.cleanPodPolicy: unset"),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
        "convert|lint": (1, "error [gpus-at-pod-level] spec.mpiReplicaSpecs[Worker].template.spec.resources"),
        "convert|render": (0, None),
    },
    "v2-unserved-version": {
        "convert": (0, "kubeflow.org/v2 is kubeflow.org/v2beta1 under its name before its first release"),
        "lint": (1, "error [old-api-version] apiVersion (MPIJob mnist-v2)"),
        "render": (2, "is kubeflow.org/v2, not kubeflow.org/v2beta1: run `mpijob convert"),
        "convert|lint": (0, None),
        "convert|render": (0, None),
    },
    "v1-launcher-only": {
        "convert": (2, "no Worker in spec.mpiReplicaSpecs: the result would not be a job"),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
    },
    "v1alpha2-tensorflow-benchmarks": {
        "convert": (0, "v2beta1 uses SSH"),
        "lint": (1, "error [old-api-version]"),
        "render": (2, "run `mpijob convert"),
        "convert|lint": (0, None),
        "convert|render": (0, None),
    },
    "v2beta1-spec-level-clean-pod-policy": {
        "convert": (0, "spec.cleanPodPolicy: moved to spec.runPolicy.cleanPodPolicy"),
        "lint": (1, "error [unknown-field] spec.cleanPodPolicy"),
        "render": (0, None),
        "convert|lint": (0, None),
        "convert|render": (0, None),
    },
    "v2beta1-home-ssh-as-root": {
        "convert": (0, None),
        "lint": (1, "warning [ssh-path-for-root] spec.sshAuthMountPath"),
        "render": (0, None),
        "convert|lint": (1, "warning [ssh-path-for-root]"),
        "convert|render": (0, None),
    },
}
CASES = [(name, command) for name, commands in SHAPES.items() for command in commands]


def _run(name: str, command: str) -> Any:
    path = str(FIXTURES / f"{name}.yaml")
    if "|" not in command:
        return mpijob(command, path)
    converted = mpijob("convert", path)
    assert converted.returncode == 0, converted.stderr
    return mpijob(command.split("|")[1], "-", stdin=converted.stdout)


@pytest.mark.parametrize(("name", "command"), CASES, ids=[f"{n}-{c}" for n, c in CASES])
def test_each_shape_gives_a_result_or_a_clear_error(name: str, command: str) -> None:
    code, text = SHAPES[name][command]
    done = _run(name, command)
    assert done.returncode == code, done.stderr
    if code == 2:
        assert done.stdout == "", "an error and nothing else"
        assert done.stderr.startswith(f"mpijob {command.split('|')[-1]}: ")
    where = done.stdout if command.endswith("lint") else done.stderr
    assert (text or "") in where, where
    if command.endswith("convert") and code == 0:
        [job] = objects(done)
        assert set(job["spec"]["mpiReplicaSpecs"]) == {"Launcher", "Worker"}
    if command.endswith("render") and code == 0:
        assert [c["kind"] for c in objects(done)][:3] == CHILDREN[:3]
        assert [c["kind"] for c in objects(done)][-1] == "Job"


def test_every_fixture_has_its_row() -> None:
    """A new shape fixture gets a row here (the golden and TrainJob fixtures are test_convert's)."""
    shapes = {p.stem for p in FIXTURES.glob("*.yaml")}
    theirs = {"tensorflow-benchmarks.v2beta1", "training-operator-v1-horovod", "v1-tensorflow-benchmarks"}
    assert shapes - theirs == set(SHAPES)
