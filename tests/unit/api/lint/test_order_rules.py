"""``hostfile-order-not-followed``: an Open MPI job in topology order whose ``mpirun`` places ranks its own
way. What follows the order is what tests/mpi/test_mpi_hostfile_order.py and tests/node show with real
``mpirun`` (docs/user-guide.md, "Making mpirun follow the order"): ``--mca rmaps seq`` or
``OMPI_MCA_rmaps=seq`` (Open MPI 4.1), ``--map-by seq`` or ``PRTE_MCA_rmaps_default_mapping_policy=seq``
(Open MPI 5); MPICH and Intel MPI follow the file as it is.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.lint import Rule, Severity, lint_manifest
from app.api.ordering import ORDER_ANNOTATION
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


# id: (the launcher's command, its env, warned)
CASES: dict[str, tuple[list[str], dict[str, str], bool]] = {
    "plain mpirun": (["mpirun", *PI], {}, True),
    "mpiexec": (["mpiexec", *PI], {}, True),
    "--mca rmaps seq (4.1)": (["mpirun", "--mca", "rmaps", "seq", *PI], {}, False),
    "-mca rmaps seq": (["mpirun", "-mca", "rmaps", "seq", *PI], {}, False),
    "--map-by seq (5)": (["mpirun", "--map-by", "seq", *PI], {}, False),
    "-map-by seq": (["mpirun", "-map-by", "seq", *PI], {}, False),
    "--map-by=seq": (["mpirun", "--map-by=seq", *PI], {}, False),
    "--rankfile": (["mpirun", "--rankfile", "/etc/ranks", *PI], {}, False),
    "-rf": (["mpirun", "-rf", "/etc/ranks", *PI], {}, False),
    "OMPI_MCA_rmaps=seq in env (4.1)": (["mpirun", *PI], {"OMPI_MCA_rmaps": "seq"}, False),
    "PRTE_MCA_rmaps_default_mapping_policy=seq in env (5)": (
        ["mpirun", *PI],
        {"PRTE_MCA_rmaps_default_mapping_policy": "seq"},
        False,
    ),
    "another mapper in env": (["mpirun", *PI], {"OMPI_MCA_rmaps": "round_robin"}, True),
    "--map-by slot": (["mpirun", "--map-by", "slot", *PI], {}, True),
    "--map-by ppr:1:node": (["mpirun", "--map-by", "ppr:1:node", *PI], {}, True),
    "--map-by slot with the env's seq": (
        ["mpirun", "--map-by", "slot", *PI],
        {"OMPI_MCA_rmaps": "seq"},
        True,
    ),
    "--mca rmaps other": (["mpirun", "--mca", "rmaps", "round_robin", *PI], {}, True),
    "sh -c without seq": (["sh", "-c", "cd /w && mpirun -n 2 ./pi"], {}, True),
    "sh -c with --map-by seq": (["sh", "-c", "cd /w && mpirun --map-by seq -n 2 ./pi"], {}, False),
    "sh -c with a seq variable": (["bash", "-c", "OMPI_MCA_rmaps=seq mpirun -n 2 ./pi"], {}, False),
    "sh -c export": (
        ["sh", "-c", "export PRTE_MCA_rmaps_default_mapping_policy=seq; mpirun -n 2 ./pi"],
        {},
        False,
    ),
    "rm -rf before mpirun is no rankfile": (["sh", "-c", "rm -rf /tmp/x; mpirun -n 2 ./pi"], {}, True),
    "no MPI launcher (launcher-command's case)": (["python", "train.py"], {}, False),
}


@pytest.mark.parametrize(("command", "env", "warned"), CASES.values(), ids=CASES.keys())
def test_an_open_mpi_job_in_topology_order(command: list[str], env: dict[str, str], warned: bool) -> None:
    findings = found(job(command, env=env))
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


def test_the_message_names_the_other_mapper_and_what_to_drop() -> None:
    [finding] = found(job(["mpirun", "--map-by", "ppr:1:node", *PI]))
    assert "mpirun --map-by ppr:1:node maps ranks its own way" in finding.message
    assert finding.fix.endswith("; and drop --map-by ppr:1:node")
    [finding] = found(job(["mpirun", *PI]))
    assert f"({ORDER_ANNOTATION}: topology)" in finding.message
    assert "not told to follow it" in finding.message
    assert finding.fix == (
        "Open MPI 4.1: add --mca rmaps seq (or the launcher variable OMPI_MCA_rmaps=seq); Open MPI 5: add"
        " --map-by seq (or PRTE_MCA_rmaps_default_mapping_policy=seq)"
    )
