"""A key of ``spec.mpiReplicaSpecs`` other than Launcher and Worker (``worker:``, ``Workers:``): the CRD has
only those two, so ``kubectl apply`` refuses the job and other clients drop the key. Lint names the key as
an unknown replica type with the valid ones (and the one meant, for a near miss), and the rules that count
workers stay quiet rather than advise on a job whose Worker is only misspelled (``use -n 0``).

The hook's validation never sees such a key (the CRD prunes it; upstream's validation reads only Launcher
and Worker), so what lint says is what kubectl says.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.defaults import with_defaults
from app.api.lint import Rule, lint_manifest
from app.api.types import MPIJob
from app.api.validation import validate
from tests.packaging.test_crd import pi


def renamed(old: str, new: str, **spec: Any) -> dict[str, Any]:
    job = pi()
    specs = job["spec"]["mpiReplicaSpecs"]
    job["spec"]["mpiReplicaSpecs"] = {new if k == old else k: v for k, v in specs.items()}
    job["spec"].update(spec)
    return job


NEAR_MISSES = [("worker", "Worker"), ("Workers", "Worker"), ("WORKER", "Worker"), ("launchr", "Launcher")]


@pytest.mark.parametrize(("written", "meant"), NEAR_MISSES)
def test_a_misspelled_replica_type_is_named_with_the_one_meant(written: str, meant: str) -> None:
    findings = lint_manifest(renamed(meant, written))
    [finding] = [f for f in findings if f.rule == Rule.UNKNOWN_FIELD]
    assert finding.path == f"spec.mpiReplicaSpecs[{written}]"
    assert f'unknown field "spec.mpiReplicaSpecs.{written}"' in finding.message
    assert "replica type" in finding.message and "Launcher and Worker" in finding.message
    assert f"did you mean {meant}?" in finding.fix
    assert "Launcher" in finding.fix and "Worker" in finding.fix


def test_a_replica_type_unlike_any_is_named_without_a_guess() -> None:
    job = pi()
    job["spec"]["mpiReplicaSpecs"]["PS"] = job["spec"]["mpiReplicaSpecs"]["Worker"]
    [finding] = lint_manifest(job)
    assert finding.rule == Rule.UNKNOWN_FIELD
    assert "did you mean" not in finding.fix and "Launcher" in finding.fix and "Worker" in finding.fix


def test_a_misspelled_worker_gets_no_advice_about_slots() -> None:
    """pi's ``mpirun -n 2`` against the 0 slots of a job without its Worker: the misspelling is the news."""
    findings = lint_manifest(renamed("Worker", "worker"))
    assert [f.rule for f in findings] == [Rule.UNKNOWN_FIELD]
    assert "without workers" in findings[0].message
    gang = renamed("Worker", "worker", runPolicy={"schedulingPolicy": {"minAvailable": 3}})
    assert [f.rule for f in lint_manifest(gang)] == [Rule.UNKNOWN_FIELD]


def test_the_hook_never_sees_the_key_its_validation_passes_a_job_without_a_worker() -> None:
    """Why lint speaks kubectl's words here, not the Invalid condition's: there is none."""
    job = MPIJob.model_validate(renamed("Worker", "worker"))
    assert validate(with_defaults(job)) == []


def test_a_job_without_a_worker_is_not_told_to_run_no_process() -> None:
    """No Worker written at all: the hostfile has no slot, and ``-n 0`` is no advice."""
    job = pi()
    del job["spec"]["mpiReplicaSpecs"]["Worker"]
    [finding] = [f for f in lint_manifest(job) if f.rule == Rule.NP_MISMATCH]
    assert "-n 0" not in finding.fix
    assert "Worker" in finding.fix and "runLauncherAsWorker" in finding.fix


def test_slots_per_worker_0_is_not_told_to_run_no_process() -> None:
    job = pi()
    job["spec"]["slotsPerWorker"] = 0
    [finding] = [f for f in lint_manifest(job) if f.rule == Rule.NP_MISMATCH]
    assert "-n 0" not in finding.fix and "slotsPerWorker" in finding.fix


def test_a_near_miss_of_another_field_is_named_too() -> None:
    job = pi()
    job["spec"]["slotPerWorker"] = job["spec"].pop("slotsPerWorker")
    [finding] = [f for f in lint_manifest(job) if f.rule == Rule.UNKNOWN_FIELD]
    assert "did you mean slotsPerWorker?" in finding.fix
