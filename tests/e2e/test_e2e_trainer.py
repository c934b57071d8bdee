"""Kubeflow Trainer v2.3.0's CRDs on the real apiserver accept what ``mpijob convert --to trainjob`` writes.

Every MPIJob of examples/ and every variant of tests/support/trainer_variants.py is converted by the real
``mpijob`` and sent with ``kubectl apply --dry-run=server --validate=strict``: the apiserver decodes each
object against the CRD's schema (unknown fields are errors), runs its CEL rules and defaulting, and answers
with what it would store, which must keep every field that was sent. docs/migration.md's gang example, run as
written, keeps its podGroupPolicy and scheduler. Intel MPI and MPICH exit 2 and write nothing. The
TrainingRuntime CRD holds the whole JobSet template schema, so JobSet's own CRD is not needed (and not
installed: the test checks). Trainer's webhooks do not run; tests/unit/convert/test_convert_trainjob.py covers
their rules (replicas 1 and a ``node`` container on the trainer step, no reserved env) and the meaning.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import E2E
from tests.e2e.kube import Kube, wait_for
from tests.support.trainer_crds import CRD_FILES, require_trainer_dir
from tests.support.trainer_variants import EXAMPLES, REFUSED_EXAMPLES, ROOT, VARIANTS
from tests.unit.cli.test_cli import mpijob

JOBSET_CRD = "jobsets.jobset.x-k8s.io"
# docs/migration.md's gang example, word for word: the example file itself, under the scheduler name
# deploy/overlays/scheduler-plugins sets as MPI_OPERATOR_GANG_SCHEDULING (docs/operations.md).
DOCUMENTED_GANG = (
    "mpijob convert --to trainjob --gang-scheduling scheduler-plugins-scheduler"
    " examples/gang/pi-scheduler-plugins.yaml"
)


@pytest.fixture
def trainer_crds(e2e: E2E) -> Iterator[Path]:
    """Trainer's three CRDs, Established; removed afterwards when this test installed them."""
    directory = require_trainer_dir()
    kube = e2e.kube
    names = {
        kind: yaml.safe_load((directory / f).read_text())["metadata"]["name"] for kind, f in CRD_FILES.items()
    }
    installed = [n for n in names.values() if kube.get("customresourcedefinitions", None, n) is None]
    try:
        for file in CRD_FILES.values():  # ~1 MB each: over client-side apply's annotation limit
            kube.kubectl("apply", "--server-side", "-f", str(directory / file))
        for name in names.values():
            wait_for(lambda name=name: _established(kube, name), 60, f"CRD {name} to be Established")
        yield directory
    finally:
        for name in installed:
            kube.delete("customresourcedefinitions", None, name)


def _established(kube: Kube, name: str) -> bool:
    crd = kube.get("customresourcedefinitions", None, name) or {}
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def missing(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of ``sent`` that ``stored`` does not hold with the same value (pruned or changed)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [path or "."]
        return [p for key, value in sent.items() for p in missing(value, stored.get(key), f"{path}.{key}")]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [path]
        return [p for i, value in enumerate(sent) for p in missing(value, stored[i], f"{path}[{i}]")]
    return [] if sent == stored else [path]


def dry_run(kube: Kube, ns: str, manifest: str) -> list[dict[str, Any]]:
    done = kube.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-n", ns, "-o", "json", "-f", "-", stdin=manifest
    )
    answer = json.loads(done.stdout)
    items: list[dict[str, Any]] = answer["items"] if answer.get("kind") == "List" else [answer]
    return items


def test_trainers_crds_accept_every_conversion(e2e: E2E, ns: str, trainer_crds: Path, tmp_path: Path) -> None:
    kube = e2e.kube
    assert kube.get("customresourcedefinitions", None, JOBSET_CRD) is None
    converted: dict[str, list[str]] = {}
    for path in EXAMPLES:
        done = mpijob("convert", "--to", "trainjob", str(path))
        if path.name in REFUSED_EXAMPLES:
            assert done.returncode == 2 and done.stdout == "", done.stderr
            continue
        assert done.returncode == 0, done.stderr
        converted[path.stem] = _accepted(kube, ns, done.stdout)
    for variant in VARIANTS:
        source = tmp_path / f"{variant.name}.yaml"
        source.write_text(yaml.safe_dump(variant.job()))
        args = ["--gang-scheduling", variant.gang] if variant.gang else []
        if variant.runtime:
            args += ["--runtime", str(trainer_crds / variant.runtime)]
        done = mpijob("convert", "--to", "trainjob", *args, str(source))
        assert done.returncode == 0, done.stderr
        converted[variant.name] = _accepted(kube, ns, done.stdout)
    assert len(converted) == len(EXAMPLES) - len(REFUSED_EXAMPLES) + len(VARIANTS)
    assert all(kinds[-1] == "TrainJob" for kinds in converted.values()), converted


def test_the_docs_gang_example_keeps_its_pod_group_policy(e2e: E2E, ns: str, trainer_crds: Path) -> None:
    assert DOCUMENTED_GANG in (ROOT / "docs" / "migration.md").read_text()
    done = mpijob(*shlex.split(DOCUMENTED_GANG)[1:])
    assert done.returncode == 0, done.stderr
    runtime, trainjob = [d for d in yaml.safe_load_all(done.stdout) if d]
    stored_runtime, stored_trainjob = dry_run(e2e.kube, ns, done.stdout)
    assert missing(runtime, stored_runtime) == [] and missing(trainjob, stored_trainjob) == []
    assert stored_trainjob["spec"]["runtimeRef"]["name"] == stored_runtime["metadata"]["name"]
    # The example's scheduleTimeoutSeconds, as Trainer's coscheduling plugin takes it, and every Pod of both
    # replicated jobs for the coscheduler.
    assert stored_runtime["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 300}}
    jobs = stored_runtime["spec"]["template"]["spec"]["replicatedJobs"]
    schedulers = {j["name"]: j["template"]["spec"]["template"]["spec"]["schedulerName"] for j in jobs}
    assert schedulers == {"launcher": "scheduler-plugins-scheduler", "node": "scheduler-plugins-scheduler"}


def test_the_dry_run_refuses_what_trainer_does_not_have(e2e: E2E, ns: str, trainer_crds: Path) -> None:
    """So that acceptance means something: today's outdated output and a broken CEL rule are refused."""
    done = mpijob("convert", "--to", "trainjob", str(EXAMPLES[0]))
    runtime, trainjob = [d for d in yaml.safe_load_all(done.stdout) if d]
    trainjob["spec"]["podTemplateOverrides"] = [{"targetJobs": [{"name": "node"}]}]
    runtime["spec"]["mlPolicy"]["torch"] = {}
    for obj, error in ((trainjob, 'unknown field "spec.podTemplateOverrides"'),
                       (runtime, "Only one of the policy can be configured")):  # fmt: skip
        refused = e2e.kube.kubectl(
            "apply",
            "--dry-run=server",
            "--validate=strict",
            "-n",
            ns,
            "-f",
            "-",
            stdin=yaml.safe_dump(obj),
            check=False,
        )
        assert refused.returncode != 0 and error in refused.stderr, refused.stderr


def _accepted(kube: Kube, ns: str, manifest: str) -> list[str]:
    sent = [d for d in yaml.safe_load_all(manifest) if d]
    stored = dry_run(kube, ns, manifest)
    assert [(o["kind"], o["metadata"]["name"]) for o in stored] == [
        (o["kind"], o["metadata"]["name"]) for o in sent
    ]
    for obj, answer in zip(sent, stored, strict=True):
        assert answer["metadata"]["namespace"] == ns
        assert missing(obj, answer) == [], obj["metadata"]["name"]
    return [o["kind"] for o in sent]
