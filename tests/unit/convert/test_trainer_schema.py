"""Every object ``mpijob convert --to trainjob`` writes fits Kubeflow Trainer v2.3.0's CRDs, walked field by
field: no field the CRD does not define (the apiserver would prune it, or refuse it under strict field
validation), the schema's types, enums and bounds, and the CEL rules, as tests/packaging/test_crd.py rebuilds
the apiserver's admission. Never a name Trainer dropped: runtime ``mpi-distributed``,
``podTemplateOverrides``.

The real apiserver checks the same objects in tests/e2e/test_e2e_trainer.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.support.trainer_crds import admission_errors
from tests.unit.convert.test_convert_trainjob import CASES, IDS, convert

DROPPED_BY_TRAINER = ("mpi-distributed", "podTemplateOverrides")


@pytest.fixture(scope="module")
def admit() -> Any:
    return admission_errors


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_object_fits_trainers_crds(case: Any, admit: Any) -> None:
    result = convert(case)
    written = [*result.prerequisites, result.obj]
    assert [o["kind"] for o in written] == (["TrainJob"] if case.runtime else ["TrainingRuntime", "TrainJob"])
    for obj in written:
        assert obj["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
        assert admit(obj) == set(), obj["kind"]
        text = json.dumps(obj)
        assert not [word for word in DROPPED_BY_TRAINER if word in text]


def test_the_walk_finds_a_field_trainer_does_not_have(admit: Any) -> None:
    """So that the test above cannot pass by walking nothing: today's outdated fields are caught."""
    result = convert(CASES[0])
    trainjob = copy.deepcopy(result.obj)
    trainjob["spec"]["podTemplateOverrides"] = [{"targetJobs": [{"name": "node"}]}]
    runtime = copy.deepcopy(result.prerequisites[0])
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["containers"][0]["sshAuthMountPath"] = "/root/.ssh"
    assert ("strict", "spec.podTemplateOverrides", "unknown field") in admit(trainjob)
    assert any(path.endswith("containers.0.sshAuthMountPath") for _, path, _ in admit(runtime))
    mpi = copy.deepcopy(result.prerequisites[0])
    mpi["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = "Intel"
    assert ("schema", "spec.mlPolicy.mpi.mpiImplementation", "enum") in admit(mpi)
