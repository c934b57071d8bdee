"""The advice ``lint`` and ``render`` give for an old MPIJob works when followed to the letter.

For every old-version fixture (one of each shape upstream's ``examples/`` ever had, in
``tests/fixtures/convert/``, our own files), the command each one prints is taken from its output and run
as printed; what it writes must be admitted by the CRD (schema and CEL rules, rebuilt in ``test_crd``),
lint without errors and render. A shape ``convert`` refuses must say which edit makes it convert.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.lint import Severity, lint_manifest
from app.api.types import OLD_API_VERSIONS
from tests.packaging.test_crd import crd_admission
from tests.support import paths
from tests.unit.cli.test_cli import mpijob, objects

FIXTURES = paths.FIXTURES / "convert"
# fixture -> the edit convert's refusal names (a job no operator ran: a launcher and no workers).
REFUSED = {"v1-launcher-only": "add spec.mpiReplicaSpecs[Worker] to the input"}
# fixture -> the error lint still finds after conversion: a mistake of the original, carried over and named.
CARRIED_OVER = {"v1alpha2-pod-level-gpus": {"gpus-at-pod-level"}}


def _old_fixtures() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(FIXTURES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind") == "MPIJob" and doc.get("apiVersion") in OLD_API_VERSIONS:
            found[path.stem] = doc
    return found


OLD = _old_fixtures()


def test_there_is_a_fixture_of_every_old_version_and_shape() -> None:
    assert {doc["apiVersion"] for doc in OLD.values()} == set(OLD_API_VERSIONS)
    later_with_v1alpha1_shape = [
        name
        for name, doc in OLD.items()
        if doc["apiVersion"] != "kubeflow.org/v1alpha1" and "mpiReplicaSpecs" not in doc["spec"]
    ]
    assert later_with_v1alpha1_shape, "the v1alpha1 shape under a later apiVersion, as some upstream examples"
    assert set(REFUSED) | set(CARRIED_OVER) <= set(OLD)


@pytest.fixture(scope="module")
def admission() -> Any:
    return crd_admission()


def lint_advice(path: Path) -> list[str]:
    """The command of lint's ``old-api-version`` fix, its FILE the file linted."""
    done = mpijob("lint", str(path))
    assert done.returncode == 1 and "error [old-api-version]" in done.stdout, done.stdout
    [command] = re.findall(r"^    fix: convert it: (.*) \(apiVersion [^)]*\)$", done.stdout, re.M)
    return [str(path) if word == "FILE" else word for word in shlex.split(command)]


def render_advice(path: Path) -> list[str]:
    done = mpijob("render", str(path))
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [command] = re.findall(r"run `([^`]*)` first$", done.stderr, re.M)
    return shlex.split(command)


def follow(command: list[str], tmp_path: Path) -> tuple[Any, Path]:
    """Run ``mpijob ... > FILE`` as a shell would, in ``tmp_path``; the run, and FILE."""
    program, *args, redirect, target = command
    assert (program, redirect) == ("mpijob", ">"), command
    done = mpijob(*args, cwd=tmp_path)
    written = tmp_path / target
    written.write_text(done.stdout)
    return done, written


@pytest.mark.parametrize("name", OLD)
def test_the_advice_followed_gives_a_job_that_is_admitted_and_runs(
    name: str, tmp_path: Path, admission: Any
) -> None:
    path = FIXTURES / f"{name}.yaml"
    by_lint, by_render = lint_advice(path), render_advice(path)
    assert by_lint == by_render, "lint and render advise the same command"
    done, written = follow(by_lint, tmp_path)
    if name in REFUSED:
        assert (done.returncode, done.stdout) == (2, "")
        assert REFUSED[name] in done.stderr
        return
    assert done.returncode == 0, done.stderr
    [job] = objects(done)
    assert job["apiVersion"] == "kubeflow.org/v2beta1"
    assert admission(job) == set()
    findings = lint_manifest(yaml.safe_load(written.read_text()))
    assert {f.rule for f in findings if f.severity is Severity.ERROR} == CARRIED_OVER.get(name, set())
    rendered = mpijob("render", str(written))
    assert rendered.returncode == 0, rendered.stderr
    assert objects(rendered)[-1]["kind"] == "Job"
