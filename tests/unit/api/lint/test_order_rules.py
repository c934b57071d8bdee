"""``hostfile-order-not-followed``: an Open MPI job in topology order whose ``mpirun`` places ranks its own
way. The hook makes the sequential mapper both versions' default for such a job, and a mapping flag replaces
it: what tests/mpi/test_mpi_seq_env.py shows with real ``mpirun`` (docs/user-guide.md, "Making mpirun follow
the order"). MPICH and Intel MPI follow the file as it is.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.hostfile_order_annotations import ORDER_ANNOTATION
from app.api.lint import Rule, Severity, lint_manifest
from tests.packaging.test_crd import pi

RULE = Rule.HOSTFILE_ORDER_NOT_FOLLOWED
PI = ["-n", "2", "/home/mpiuser/pi"]


def job(
    command: list[str],
    *,
    env: dict[str, str] | None = None,
    order: str | None = "topology",
    implementation: str | None = None,
) -> dict[str, Any]:
    built = pi()
    if order is not None:
        built["metadata"]["annotations"] = {ORDER_ANNOTATION: order}
    if implementation is not None:
        built["spec"]["mpiImplementation"] = implementation
    launcher = built["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["command"] = command
    if env:
        launcher["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return built


def found(manifest: dict[str, Any]) -> list[Any]:
    return [f for f in lint_manifest(manifest) if f.rule == RULE]


# id: (the launcher's command, warned)
CASES: dict[str, tuple[list[str], bool]] = {
    "plain mpirun: the hook's default follows the order": (["mpirun", *PI], False),
    "mpiexec": (["mpiexec", *PI], False),
    "--mca rmaps seq (4.1)": (["mpirun", "--mca", "rmaps", "seq", *PI], False),
    "--map-by seq (5)": (["mpirun", "--map-by", "seq", *PI], False),
    "--map-by=seq": (["mpirun", "--map-by=seq", *PI], False),
    "--rankfile": (["mpirun", "--rankfile", "/etc/ranks", *PI], False),
    "--bind-to none keeps the mapping": (["mpirun", "--bind-to", "none", *PI], False),
    "--map-by slot": (["mpirun", "--map-by", "slot", *PI], True),
    "-map-by ppr:1:node": (["mpirun", "-map-by", "ppr:1:node", *PI], True),
    "--map-by=node": (["mpirun", "--map-by=node", *PI], True),
    "-npernode 1": (["mpirun", "-npernode", "1", *PI], True),
    "-N 1": (["mpirun", "-N", "1", *PI], True),
    "--mca rmaps round_robin": (["mpirun", "--mca", "rmaps", "round_robin", *PI], True),
    "--mca rmaps_base_mapping_policy slot": (
        ["mpirun", "--mca", "rmaps_base_mapping_policy", "slot", *PI],
        True,
    ),
    "--prtemca rmaps_default_mapping_policy node": (
        ["mpirun", "--prtemca", "rmaps_default_mapping_policy", "node", *PI],
        True,
    ),
    "sh -c plain": (["sh", "-c", "cd /w && mpirun -n 2 ./pi"], False),
    "sh -c with --map-by slot": (["sh", "-c", "cd /w && mpirun --map-by slot -n 2 ./pi"], True),
    "rm -rf before mpirun is no flag of it": (["sh", "-c", "rm -N 1 -rf /tmp/x; mpirun -n 2 ./pi"], False),
    "no MPI launcher (launcher-command's case)": (["python", "train.py"], False),
}


@pytest.mark.parametrize(("command", "warned"), CASES.values(), ids=CASES.keys())
def test_an_open_mpi_job_in_topology_order(command: list[str], warned: bool) -> None:
    findings = found(job(command))
    assert bool(findings) is warned, findings
    for finding in findings:
        assert finding.severity is Severity.WARNING
        assert finding.path == "spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].command"
        assert "--mca rmaps seq" in finding.fix and "--map-by seq" in finding.fix


@pytest.mark.parametrize("implementation", ["MPICH", "Intel"])
def test_mpich_and_intel_follow_the_order_as_they_are(implementation: str) -> None:
    assert found(job(["mpirun", *PI], implementation=implementation)) == []


@pytest.mark.parametrize("order", [None, "index"])
def test_a_job_in_upstreams_order_is_not_warned(order: str | None) -> None:
    assert found(job(["mpirun", *PI], order=order)) == []


def test_the_message_names_the_other_mapping_and_what_to_drop() -> None:
    [finding] = found(job(["mpirun", "--map-by", "ppr:1:node", *PI]))
    assert f"({ORDER_ANNOTATION}: topology)" in finding.message
    assert "mpirun --map-by ppr:1:node maps ranks its own way" in finding.message
    assert finding.fix.startswith("drop --map-by ppr:1:node: for a job in topology order the hook makes")
