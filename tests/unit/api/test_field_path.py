"""Field paths in upstream's notation (apimachinery's ``field.Path``), however the place was found."""

from __future__ import annotations

import pytest

from app.api.field_path import ANY_INDEX, join, replica_spec

CASES: list[tuple[str, tuple[str | int | None, ...], str]] = [
    ("one field", ("spec",), "spec"),
    ("fields", ("spec", "runPolicy", "backoffLimit"), "spec.runPolicy.backoffLimit"),
    (
        "a replica type",
        ("spec", "mpiReplicaSpecs", "Worker", "replicas"),
        "spec.mpiReplicaSpecs[Worker].replicas",
    ),
    (
        "a list index",
        ("spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers", 0, "args"),
        "spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].args",
    ),
    ("a key of another map", ("metadata", "labels", "app"), "metadata.labels.app"),
    ("an index not known", ("spec", "x", ANY_INDEX, ANY_INDEX), "spec.x[][]"),
    ("indexes in a row", ("rules", 1, 2), "rules[1][2]"),
    ("nothing", (), ""),
]


@pytest.mark.parametrize(("parts", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_join_writes_upstreams_notation(parts: tuple[str | int | None, ...], path: str) -> None:
    assert join(parts) == path


def test_a_replica_spec_is_named_by_its_type_in_brackets() -> None:
    assert replica_spec("Worker") == "spec.mpiReplicaSpecs[Worker]"
