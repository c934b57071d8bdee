"""Kueue's CRDs, read from its Go module at test time (``scripts/build-neighbour --module kueue``: the release
the real-node tests run), so the docs' Kueue objects are checked as the apiserver with Kueue would check
them. Without Go or the module proxy the tests that need them skip, naming why."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import ROOT

GROUP = "kueue.x-k8s.io"


@functools.cache
def module_dir() -> Path:
    done = subprocess.run(
        [str(ROOT / "scripts" / "build-neighbour"), "--module", "kueue"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"Kueue's module is not available: {done.stderr.strip()[-300:]}")
    said = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return Path(said["module"])


@functools.cache
def _admission(kind: str, version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    import cel

    from tests.packaging.test_crd import _nodes

    bases = module_dir() / "config" / "components" / "crd" / "bases"
    crds = [yaml.safe_load(path.read_text()) for path in sorted(bases.glob(f"{GROUP}_*.yaml"))]
    (crd,) = [c for c in crds if c["spec"]["names"]["kind"] == kind]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    node: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    rules = {r["rule"] for _, n, _ in _nodes(node) for r in n.get("x-kubernetes-validations", [])}
    return node, {rule: cel.compile(rule) for rule in rules}


def admission_errors(obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    """What the apiserver with Kueue's CRDs refuses in ``obj``: unknown fields, schema, CEL rules."""
    from tests.packaging import test_crd

    node, programs = _admission(obj["kind"], str(obj["apiVersion"]).split("/", 1)[1])
    return test_crd.unknown_fields(node, obj) | test_crd.admission_errors(node, programs, obj)
