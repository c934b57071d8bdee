"""Kubeflow Trainer v2.3.0's CRDs and MPI runtimes, as released (test data only, never in the repository).

Read from ``MPI_HOOK_TRAINER_DIR``, else ``shared/trainer-v2.3.0`` next to the repository (or next to its
parent, for a git worktree one level deeper), as tests/e2e/controlplane.py finds its binaries. Without them
the tests that need them skip, naming what is missing.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import crd_admission
from tests.support.paths import ROOT

FOLDER = "trainer-v2.3.0"
CRD_FILES = {
    "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    "TrainingRuntime": "trainer.kubeflow.org_trainingruntimes.yaml",
    "ClusterTrainingRuntime": "trainer.kubeflow.org_clustertrainingruntimes.yaml",
}
# The runtimes v2.3.0 ships with an mlPolicy.mpi.
MPI_RUNTIMES = ("deepspeed_distributed.yaml", "mlx_distributed.yaml")


def trainer_dir() -> Path:
    given = os.environ.get("MPI_HOOK_TRAINER_DIR")
    if given:
        return Path(given)
    candidates = [ROOT.parent / "shared" / FOLDER, ROOT.parent.parent / "shared" / FOLDER]
    return next((c for c in candidates if (c / CRD_FILES["TrainJob"]).is_file()), candidates[0])


def require_trainer_dir() -> Path:
    directory = trainer_dir()
    if not (directory / CRD_FILES["TrainJob"]).is_file():
        pytest.skip(f"Kubeflow Trainer v2.3.0's CRDs not found in {directory} (set MPI_HOOK_TRAINER_DIR)")
    return directory


@functools.cache
def crd(kind: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((require_trainer_dir() / CRD_FILES[kind]).read_text())
    return loaded


def schema(kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of ``kind``'s only version, v1alpha1."""
    [version] = crd(kind)["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    found: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return found


@functools.cache
def _admission(kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return crd_admission.compiled(schema(kind))


def admission_errors(obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    """What the apiserver with Trainer's CRDs refuses in ``obj``: unknown fields, schema, CEL rules."""
    return crd_admission.errors(_admission(obj["kind"]), obj)


def shipped_runtime(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((require_trainer_dir() / name).read_text())
    return loaded
