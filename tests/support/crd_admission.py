"""What the apiserver with a CRD refuses in an object, from the CRD's openAPIV3Schema alone: unknown fields,
the schema, the CEL rules (``tests/packaging/test_crd.py``'s walk). One rule for our CRD in the docs' checks
and for the neighbours' CRDs (Kubeflow Trainer's, Kueue's)."""

from __future__ import annotations

from typing import Any

# A CRD's schema and its CEL rules compiled, rule -> program.
Admission = tuple[dict[str, Any], dict[str, Any]]


def compiled(node: dict[str, Any]) -> Admission:
    """The schema and each of its CEL rules compiled, as ``errors`` takes them (compile once, check many)."""
    import cel

    from tests.packaging.test_crd import _nodes

    rules = {r["rule"] for _, n, _ in _nodes(node) for r in n.get("x-kubernetes-validations", [])}
    return node, {rule: cel.compile(rule) for rule in rules}


def errors(admission: Admission, obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    """Unknown fields, schema and CEL errors of ``obj`` under ``compiled``'s answer."""
    from tests.packaging import test_crd

    node, programs = admission
    return test_crd.unknown_fields(node, obj) | test_crd.admission_errors(node, programs, obj)
