"""The gang scheduling rules: a minAvailable no job can meet (``min-available-above-pods``, against the
one Pod count the PodGroup builders use, ``defaults.gang_size``), and a topology annotation that is not a
node label key (validation's one check, reported as ``invalid`` with its own fix).

Upstream's ``calculateMinAvailable``: ``schedulingPolicy.minAvailable``, else workers + 1; the launcher is
always a Pod of its own, and ``runLauncherAsWorker`` only lists it in the hostfile.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.defaults import gang_size, with_defaults
from app.api.lint import Rule, Severity, lint_manifest
from app.api.types import MPIJob
from app.api.validation import validate
from app.children.podgroup import gang_job, min_member
from tests.packaging.test_crd import pi

TOPOLOGY = "mpi-operator-hook/gang-topology-key"


def job(workers: int | None, min_available: int | None, **spec: Any) -> dict[str, Any]:
    built = pi(workers=workers)
    if min_available is not None:
        built["spec"].setdefault("runPolicy", {})["schedulingPolicy"] = {"minAvailable": min_available}
    built["spec"].update(spec)
    return built


def found(manifest: dict[str, Any], rule: str) -> list[Any]:
    return [f for f in lint_manifest(manifest) if f.rule == rule]


# id: (workers, minAvailable, other spec fields, warned)
CASES: dict[str, tuple[int | None, int | None, dict[str, Any], bool]] = {
    "unset: the gang is every Pod": (2, None, {}, False),
    "every Pod (2 workers + the launcher)": (2, 3, {}, False),
    "fewer than every Pod": (2, 1, {}, False),
    "zero: no gang": (2, 0, {}, False),
    "one more than the Pods": (2, 4, {}, True),
    "runLauncherAsWorker adds no Pod": (2, 4, {"runLauncherAsWorker": True}, True),
    "runLauncherAsWorker, every Pod": (2, 3, {"runLauncherAsWorker": True}, False),
    "WaitForWorkersReady: the launcher comes, and counts, later": (
        2,
        3,
        {"launcherCreationPolicy": "WaitForWorkersReady"},
        False,
    ),
    "no replicas given: upstream's default of 1 worker": (None, 3, {}, True),
}


@pytest.mark.parametrize(("workers", "wanted", "spec", "warned"), CASES.values(), ids=CASES.keys())
def test_min_available_above_the_jobs_pods(
    workers: int | None, wanted: int | None, spec: dict[str, Any], warned: bool
) -> None:
    manifest = job(workers, wanted, **spec)
    findings = found(manifest, Rule.MIN_AVAILABLE_ABOVE_PODS)
    assert bool(findings) == warned, findings
    if warned:
        (finding,) = findings
        assert (finding.severity, finding.path) == (
            Severity.WARNING,
            "spec.runPolicy.schedulingPolicy.minAvailable",
        )
        pods = gang_size(None, with_defaults(MPIJob.model_validate(manifest)).worker_replicas)
        assert f"more than the job's {pods} Pods" in finding.message
        assert (
            finding.fix == f"set minAvailable to at most {pods}, or leave it out (the gang is then every Pod)"
        )


@pytest.mark.parametrize("workers", [1, 2, 7])
def test_the_pod_count_is_the_podgroups_own_default(workers: int) -> None:
    """Lint's Pod count is the minMember the builders give a job without minAvailable: one rule."""
    defaulted = with_defaults(MPIJob.model_validate(job(workers, None)))
    assert min_member(gang_job(defaulted)) == gang_size(None, workers) == workers + 1


def test_a_topology_key_that_is_no_label_key_is_the_hooks_own_error() -> None:
    """The same check as the hook's Invalid condition (validation), with a fix of its own."""
    manifest = pi()
    manifest["metadata"]["annotations"] = {TOPOLOGY: "not a label key"}
    (finding,) = found(manifest, Rule.INVALID)
    path = f"metadata.annotations[{TOPOLOGY}]"
    assert (finding.severity, finding.path) == (Severity.ERROR, path)
    (error,) = validate(with_defaults(MPIJob.model_validate(manifest)))
    assert error.field == path and error.detail in finding.message
    assert finding.fix.startswith("name the node label the gang's nodes share")
    manifest["metadata"]["annotations"] = {TOPOLOGY: "topology.kubernetes.io/zone"}
    assert lint_manifest(manifest) == []
