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
from tests.support import golden_store
from tests.support.builders import walk
from tests.support.golden_cases import CASES, all_cases, run
from tests.support.kube_schema import schema_errors

CASES_RUN = all_cases()
# Cases whose children are freshly built (not re-emitted as last applied by a frozen or foreign job).
BUILT = [c for c in CASES_RUN if c[0] in CASES and not c[0].startswith(("invalid-edit", "managed-by"))]


def emitted(request_file: Path, settings: dict[str, str]) -> list[dict[str, Any]]:
    return run(golden_store.read_bytes(request_file), Settings(**settings))["children"]


def label(child: dict[str, Any]) -> str:
    return f"{child['kind']}/{child['metadata']['name']}"


@pytest.mark.parametrize(("name", "request_file", "settings"), CASES_RUN, ids=[c[0] for c in CASES_RUN])
def test_children_match_kubernetes_schemas(name: str, request_file: Path, settings: dict[str, str]) -> None:
    problems = {label(c): schema_errors(c) for c in emitted(request_file, settings)}
    assert {k: v for k, v in problems.items() if v} == {}


@pytest.mark.parametrize(("name", "request_file", "settings"), CASES_RUN, ids=[c[0] for c in CASES_RUN])
def test_children_leave_ownership_to_metacontroller(
    name: str, request_file: Path, settings: dict[str, str]
) -> None:
    for child in emitted(request_file, settings):
        text = json.dumps(child)
        assert "ownerReferences" not in text, label(child)
        assert '"controller-uid"' not in text, label(child)
        assert child["metadata"]["name"]
        assert child.get("apiVersion") in {
            "v1",
            "batch/v1",
            "scheduling.volcano.sh/v1beta1",
            "scheduling.x-k8s.io/v1alpha1",
            "scheduling.k8s.io/v1beta1",
        }, label(child)


@pytest.mark.parametrize(("name", "request_file", "settings"), BUILT, ids=[c[0] for c in BUILT])
def test_built_children_have_no_zero_values(name: str, request_file: Path, settings: dict[str, str]) -> None:
    """The apiserver drops ``false``/``""``/``{}``/``[]``; emitting them is a write on every sync. But for the
    one member of a union that has no fields (the Workload API's ``disruptionMode: {all: {}}``): a pointer
    to an empty struct, which the apiserver keeps."""
    zeros = [
        f"{label(child)}: {path}"
        for child in emitted(request_file, settings)
        for path, value in walk(child)
        if (value is False or value == "" or value == {} or value == [])
        and not path.startswith("$.status")
        and not path.endswith(".disruptionMode.all")
    ]
    assert zeros == []


@pytest.mark.parametrize(("name", "request_file", "settings"), BUILT, ids=[c[0] for c in BUILT])
def test_built_children_quantities_are_canonical(
    name: str, request_file: Path, settings: dict[str, str]
) -> None:
    for child in emitted(request_file, settings):
        for path, value in walk(child):
            if path.endswith((".limits", ".requests", ".minResources")) and isinstance(value, dict):
                for quantity in value.values():
                    assert isinstance(quantity, str), f"{label(child)} {path}: {quantity!r} is not a string"
                    assert canonical_quantity(quantity) == quantity, f"{label(child)} {path}"


def test_schema_check_can_fail() -> None:
    """The check above is strict: an unknown field or a wrong type is an error."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "a", "image": "b", "sshd": True}], "hostname": 7},
    }
    assert [e.split(":")[0] for e in schema_errors(pod)] == ["spec/containers/0", "spec/hostname"]
