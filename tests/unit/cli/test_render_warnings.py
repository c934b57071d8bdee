"""``mpijob render`` never lets a mistake pass quietly: what the hook would say about a job is on stderr.

Every Warning (and Invalid) condition the hook would set is an error line of render's, in the one shape
``mpijob render: <what is wrong>: <what to do>`` (``app.cli.complaints``); a job the hook would mark Invalid
exits 1, one it only warns about exits 0 (the exit codes of the user guide). A gang scheduler a typo away
from a backend is refused, by the flag and by the hook's setting alike (``app.kube.gang.gang_setting``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.unit.cli.test_cli import INTEL, PI, POD, mpijob, objects

LOWERCASE_WORKER = PI.read_text().replace("    Worker:\n", "    worker:\n")
# An error line of render's: the command, what is wrong, and (after the last ": ") what to do.
LINE = re.compile(r"mpijob render: .+: .+")


def error_lines(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    assert all(LINE.fullmatch(line) for line in lines), stderr
    return lines


def test_a_job_the_hook_warns_about_renders_with_its_warning_on_stderr(tmp_path: Path) -> None:
    """``Worker`` written ``worker``: no workers, which only ``Warning=True`` in a comment used to say."""
    job = tmp_path / "pi.yaml"
    job.write_text(LOWERCASE_WORKER)
    done = mpijob("render", str(job))
    assert done.returncode == 0, done.stderr
    assert "Pod" not in {c["kind"] for c in objects(done)}
    [line] = error_lines(done.stderr)
    assert line.startswith(f"mpijob render: {job}: MPIJob pi: the hook would set Warning: mpijob lint: ")
    assert 'unknown field "spec.mpiReplicaSpecs.worker"' in line
    assert line.endswith(f": `mpijob lint {shlex.quote(str(job))}` names each finding's line")


def test_each_job_of_a_file_says_its_own_warnings() -> None:
    text = f"{LOWERCASE_WORKER}---\n{PI.read_text()}---\n{LOWERCASE_WORKER.replace('name: pi', 'name: pi2')}"
    done = mpijob("render", "-", stdin=text)
    assert done.returncode == 0, done.stderr
    assert [line.split(": ")[2] for line in error_lines(done.stderr)] == ["MPIJob pi", "MPIJob pi2"]


def test_a_refused_gang_topology_is_said_too() -> None:
    """GangSchedulingUnavailable: the hook would run the job without what its annotation asks."""
    text = PI.read_text().replace(
        "  name: pi\n", "  name: pi\n  annotations:\n    mpi-operator-hook/gang-topology-key: rack\n"
    )
    done = mpijob("render", "--gang-scheduling", "volcano", "-", stdin=text)
    assert done.returncode == 0, done.stderr
    [line] = error_lines(done.stderr)
    assert "the hook would set GangSchedulingUnavailable: " in line and "'rack'" in line


def test_an_invalid_job_exits_1_with_its_message_as_an_error_line() -> None:
    done = mpijob("render", "-", stdin=PI.read_text().replace("replicas: 2", "replicas: 0"))
    assert done.returncode == 1 and objects(done) == []
    [line] = error_lines(done.stderr)
    assert line.startswith("mpijob render: <stdin>: MPIJob pi is invalid, nothing would be created: ")
    assert "spec.mpiReplicaSpecs[Worker].replicas" in line
    assert line.endswith(": `mpijob lint -` names each field to correct, with its line")


def test_a_clean_job_says_nothing() -> None:
    done = mpijob("render", str(PI))
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        (["-", "--nodes", "-"], None, "FILE and --nodes cannot both be standard input (-)"),
        (["-"], POD, "(Pod) is not an MPIJob"),
        (["-"], "kind: MPIJob\nspec: [\n", "<stdin>:3:1: "),
        (["-"], PI.read_text().replace("kubeflow.org/v2beta1", "kubeflow.org/v1"), "mpijob convert"),
        ([str(INTEL)], None, "no launcher Job yet"),
    ],
    ids=["stdin-twice", "not-an-mpijob", "yaml-error", "old-version", "launcher-waits"],
)
def test_every_line_on_stderr_is_an_error_line_of_render(
    args: list[str], stdin: str | None, says: str
) -> None:
    done = mpijob("render", *args, stdin=stdin)
    assert says in done.stderr
    for line in done.stderr.splitlines():
        assert line.startswith("mpijob render: "), line


# --- the gang scheduler: one rule for the flag and the hook's setting ---------------------------------------


@pytest.mark.parametrize(("typo", "meant"), [("volcanoo", "volcano"), ("kubernets", "kubernetes")])
def test_a_gang_scheduler_typo_is_refused_by_the_flag(typo: str, meant: str) -> None:
    done = mpijob("render", "--gang-scheduling", typo, str(PI))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("mpijob render: ") and f"argument --gang-scheduling: {typo!r} " in line
    assert f": did you mean {meant}?" in line


def test_a_gang_scheduler_typo_is_refused_in_the_hooks_setting_too() -> None:
    done = mpijob("render", str(PI), env={"MPI_OPERATOR_GANG_SCHEDULING": "Volcano"})
    assert (done.returncode, done.stdout) == (2, "")
    [line] = error_lines(done.stderr)
    assert "MPI_OPERATOR_GANG_SCHEDULING" in line and line.endswith(": did you mean volcano?")


def test_a_real_scheduler_name_is_still_a_scheduler_plugins_scheduler() -> None:
    done = mpijob("render", "--gang-scheduling", "scheduler-plugins-scheduler", str(PI))
    assert done.returncode == 0, done.stderr
    podgroup = next(c for c in objects(done) if c["kind"] == "PodGroup")
    assert podgroup["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
