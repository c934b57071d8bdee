"""Both Open MPI versions' seq variables in one launcher: the hostfile's order without any mpirun flag.

The hook cannot know which Open MPI an image runs, so for an ordered hostfile it could set the sequential
mapper for both at once: 4.1's variable and 5's ``PRTE_MCA_rmaps_default_mapping_policy=seq``. Each version
ignores the other's variable without a word, and Hydra (MPICH, Intel MPI) ignores both. For 4.1 there are
two candidates, and they differ once the user passes a mapping flag of their own:

- ``OMPI_MCA_rmaps_base_mapping_policy=seq`` is a default policy: ``--map-by slot``, ``--map-by ppr:1:node``
  or ``-npernode 1`` replace it, as they replace PRTE's default on 5;
- ``OMPI_MCA_rmaps=seq`` selects the seq component alone, so 4.1 silently ignores those flags (a user who
  asks for one rank per node gets two on the first host).

``--bind-to none`` leaves the mapping alone, and ``-n`` below the number of lines takes the first lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.mpi.builds import Build
from tests.mpi.test_mpi_hostfile_order import (
    HYDRA,
    OPEN_MPI,
    WORKERS_PERMUTED,
    Permuted,
    placed,
    run_permuted,
    slot_hosts,
)

OPEN_MPI_5 = {"PRTE_MCA_rmaps_default_mapping_policy": "seq"}
PAIRS = {
    "policy": {"OMPI_MCA_rmaps_base_mapping_policy": "seq", **OPEN_MPI_5},
    "component": {"OMPI_MCA_rmaps": "seq", **OPEN_MPI_5},
}
# Lines mpirun may print besides the ranks': Open MPI's launcher (plm:rsh in 4.1, plm:ssh in 5) now and then
# reports losing the race to setpgid its ssh child (EACCES once the child has exec'd), with or without these
# variables; it changes nothing.
HARMLESS = ("rank ", "discovered: ", "key: ", "wait-for-workers: ", "Public key for /etc/ssh/")
SETPGID_RACE = re.compile(r"plm:(rsh|ssh): Warning: setpgid\(\d+,\d+\) failed in parent")

LAUNCHER_SECOND = ["hello-worker-1", "hello-launcher", "hello-worker-0"]
LAUNCHER_FIRST = ["hello-launcher", "hello-worker-1", "hello-worker-0"]  # what a mapper other than seq does
SEQ_3_OF_6 = ["hello-worker-2", "hello-worker-2", "hello-worker-0"]  # slots 2, -n 3: the first three lines
ONE_PER_NODE = ["hello-worker-2", "hello-worker-0", "hello-worker-1"]


def said_nothing_else(log: str) -> list[str]:
    """The launcher's lines that are neither a rank's, the bed's, nor the setpgid race."""
    lines = log.splitlines()
    return [line for line in lines if not line.startswith(HARMLESS) and not SETPGID_RACE.search(line)]


def launcher_second(build: Build, hello_dir: Path, env: dict[str, str], **options: object) -> list[str]:
    """runLauncherAsWorker with the launcher moved to line 2, so only seq gives it rank 1."""
    permuted = Permuted(build, (2, 0, 1))  # the hook's lines: launcher, worker-0, worker-1
    outcome = run_permuted(build, hello_dir, permuted, workers=2, launcher_as_worker=True, env=env, **options)
    assert slot_hosts(permuted.written) == LAUNCHER_SECOND
    return placed(outcome)


def three_of_six(build: Build, hello_dir: Path, env: dict[str, str], flags: tuple[str, ...]) -> list[str]:
    """Workers 2, 0, 1, 2 slots each, ``-n 3``: seq takes the first three lines, one-per-node does not."""
    outcome = run_permuted(
        build, hello_dir, Permuted(build, WORKERS_PERMUTED), slots=2, ranks=3, flags=flags, env=env
    )
    return placed(outcome)


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
@pytest.mark.parametrize("slots", [1, 2])
def test_open_mpi_follows_the_order_with_both_variables_and_no_flag(
    build: Build, hello_dir: Path, pair: str, slots: int
) -> None:
    permuted = Permuted(build, WORKERS_PERMUTED)
    outcome = run_permuted(build, hello_dir, permuted, slots=slots, flags=(), env=PAIRS[pair])
    assert placed(outcome) == slot_hosts(permuted.written), f"{permuted.written}\n{outcome.log}"
    assert said_nothing_else(outcome.log) == [], outcome.log


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
def test_open_mpi_gives_the_launcher_listed_second_rank_1(build: Build, hello_dir: Path, pair: str) -> None:
    assert launcher_second(build, hello_dir, PAIRS[pair], flags=()) == LAUNCHER_SECOND


@pytest.mark.parametrize("build", HYDRA, indirect=True)
def test_hydra_ignores_every_seq_variable(build: Build, hello_dir: Path) -> None:
    env = {**PAIRS["policy"], **PAIRS["component"]}
    permuted = Permuted(build, WORKERS_PERMUTED)
    outcome = run_permuted(build, hello_dir, permuted, slots=2, env=env)
    assert placed(outcome) == slot_hosts(permuted.written), outcome.log
    assert said_nothing_else(outcome.log) == [], outcome.log


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
def test_a_mapping_flag_replaces_the_default_policy(build: Build, hello_dir: Path, pair: str) -> None:
    """The user's own mapping wins over the variables, except 4.1's component choice, which keeps seq."""
    flag_ignored = build.name == "openmpi4" and pair == "component"
    env = PAIRS[pair]
    by_slot = launcher_second(build, hello_dir, env, flags=("--map-by", "slot"))
    assert by_slot == (LAUNCHER_SECOND if flag_ignored else LAUNCHER_FIRST)
    for flags in (("--map-by", "ppr:1:node"), ("-npernode", "1")):
        assert three_of_six(build, hello_dir, env, flags) == (SEQ_3_OF_6 if flag_ignored else ONE_PER_NODE), (
            flags
        )


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
def test_binding_flags_and_fewer_ranks_keep_the_order(build: Build, hello_dir: Path, pair: str) -> None:
    env = PAIRS[pair]
    assert launcher_second(build, hello_dir, env, flags=("--bind-to", "none")) == LAUNCHER_SECOND
    assert launcher_second(build, hello_dir, env, flags=(), ranks=2) == LAUNCHER_SECOND[:2]
    assert three_of_six(build, hello_dir, env, ()) == SEQ_3_OF_6
