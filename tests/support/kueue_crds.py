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

from tests.support import crd_admission
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
    bases = module_dir() / "config" / "components" / "crd" / "bases"
    crds = [yaml.safe_load(path.read_text()) for path in sorted(bases.glob(f"{GROUP}_*.yaml"))]
    (crd,) = [c for c in crds if c["spec"]["names"]["kind"] == kind]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    return crd_admission.compiled(served["schema"]["openAPIV3Schema"])


def admission_errors(obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    """What the apiserver with Kueue's CRDs refuses in ``obj``: unknown fields, schema, CEL rules."""
    return crd_admission.errors(_admission(obj["kind"], str(obj["apiVersion"]).split("/", 1)[1]), obj)
