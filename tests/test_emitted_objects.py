"""Every object the hook emits is a valid Kubernetes object and follows the contract's hygiene rules.

Checked against Kubernetes' own schemas (kubernetes-validate, strict: unknown fields fail) for the
version we target, plus the rules Metacontroller imposes: no ownerReferences, no ``controller-uid``, no
zero values the apiserver would drop, canonical quantities.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.kube.quantity import canonical_quantity
from app.settings import Settings
from tests.builders import walk
from tests.golden_cases import CASES, all_cases, run
from tests.kube_schema import schema_errors


def emitted(name: str, request_file: Path, settings: dict[str, str]) -> list[dict[str, Any]]:
    return run(request_file.read_bytes(), Settings(**settings))["children"]


CHILDREN = [
    pytest.param(child, id=f"{name}:{child['kind']}/{child['metadata']['name']}")
    for name, request_file, settings in all_cases()
    for child in emitted(name, request_file, settings)
]


@pytest.mark.parametrize("child", CHILDREN)
def test_child_matches_kubernetes_schema(child: dict[str, Any]) -> None:
    assert schema_errors(child) == []


@pytest.mark.parametrize("child", CHILDREN)
def test_child_leaves_ownership_to_metacontroller(child: dict[str, Any]) -> None:
    text = json.dumps(child)
    assert "ownerReferences" not in text
    assert '"controller-uid"' not in text
    assert child["metadata"]["name"]
    assert child.get("apiVersion") in {"v1", "batch/v1"}


BUILT = [
    pytest.param(child, id=f"{name}:{child['kind']}/{child['metadata']['name']}")
    for name, request_file, settings in all_cases()
    if name in CASES and not name.startswith(("invalid-edit", "managed-by"))
    for child in emitted(name, request_file, settings)
]


@pytest.mark.parametrize("child", BUILT)
def test_child_has_no_zero_values(child: dict[str, Any]) -> None:
    """The apiserver drops ``false``/``""``/``{}``/``[]``; emitting them is a write on every sync."""
    zeros = [
        path
        for path, value in walk(child)
        if (value is False or value == "" or value == {} or value == []) and not path.startswith("$.status")
    ]
    assert zeros == []


@pytest.mark.parametrize("child", BUILT)
def test_child_quantities_are_canonical(child: dict[str, Any]) -> None:
    for path, value in walk(child):
        if path.endswith((".limits", ".requests")) and isinstance(value, dict):
            for quantity in value.values():
                assert isinstance(quantity, str), f"{path}: {quantity!r} is not a string"
                assert canonical_quantity(quantity) == quantity


def test_schema_check_can_fail() -> None:
    """The check above is strict: an unknown field or a wrong type is an error."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "a", "image": "b", "sshd": True}], "hostname": 7},
    }
    assert [e.split(":")[0] for e in schema_errors(pod)] == ["spec/containers/0", "spec/hostname"]
