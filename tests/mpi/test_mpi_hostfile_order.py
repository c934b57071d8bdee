"""Real mpirun follows a hostfile's order only in the right form and with the right flags: rank i on slot i.

An ordered hostfile (hosts sorted by their nodes' topology instead of worker index) is worth nothing unless
``mpirun`` places ranks in its order. Each test replaces the launcher's /etc/mpi/hostfile with a permuted one
(workers 2, 0, 1: neither index nor name order) that starts with a ``# ...`` marker line, runs real
``mpirun`` of ``examples/hello`` and checks that rank i ran on the host of the file's i-th slot (a line
``host:N`` holds N slots, any other line one):

- Open MPI 4.1 and 5 follow the file strictly only with the sequential mapper (``--mca rmaps seq``,
  ``--map-by seq``), which places one rank per line: each host is written once per slot, bare, which the
  default mapper reads as N slots too (``host slots=N`` counts once under seq, ``host slots=1`` repeated is
  refused). Open MPI 4.1's seq mapper knows the launcher's own host only by its hostname, not its FQDN, and
  reads what follows a host's first space as a CPU list unless it starts with ``#`` or ``slots=``. Without
  seq, the launcher's host, when listed, takes rank 0 wherever its line is.
- MPICH's and Intel MPI's Hydra follow the hook's ``host:N`` lines in order, with or without ``-ppn N``.

docs/user-guide.md ("Making mpirun follow the hostfile order") states these results.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.mpi.builds import Build
from tests.mpi.jobs import Outcome, job_for, run_job
from tests.support.hostfiles import slot_hosts

MARKER = "# mpi-operator-hook: hosts in topology order"
OPEN_MPI = ["openmpi4", "openmpi5"]
HYDRA = ["intel", "mpich"]
# What makes each build's mpirun place ranks in the hostfile's order.
FOLLOW_FLAGS = {
    "openmpi4": ("--mca", "rmaps", "seq"),
    "openmpi5": ("--map-by", "seq"),
    "mpich": (),
    "intel": (),
}
WORKERS_PERMUTED = (2, 0, 1)


@dataclass
class Permuted:
    """Rewrites the hook's hostfile: its hosts in ``order`` (indexes into the hook's lines), in ``form``.

    ``form``: "ordered" (what this build needs: bare ``host`` once per slot for Open MPI, ``host:N`` for
    Hydra), "slots" (Open MPI as the hook writes it today: ``host slots=N``) or "slots_per_line" (``host
    slots=1`` once per slot). ``written`` keeps what the launcher got."""

    build: Build
    order: tuple[int, ...]
    form: str = "ordered"
    launcher_fqdn: bool = False  # keep the launcher's FQDN even where its hostname is needed
    trailing: str = ""  # appended to every host line, e.g. " # a comment"
    written: str = ""

    def __call__(self, hook_hostfile: str) -> str:
        lines = [line for line in hook_hostfile.splitlines() if line]
        slots = int(re.split(r"slots=|:", lines[0])[1])
        hosts = [re.split(r"[\s:]", lines[i])[0] for i in self.order]
        out = [MARKER]
        for host in hosts:
            if self.build.name == "openmpi4" and "-launcher." in host and not self.launcher_fqdn:
                host = host.split(".")[0]  # the launcher Pod's hostname
            comment = self.trailing
            if self.build.implementation != "OpenMPI":
                out.append(f"{host}:{slots}{comment}")
            elif self.form == "slots":
                out.append(f"{host} slots={slots}{comment}")
            else:
                per_slot = " slots=1" if self.form == "slots_per_line" else ""
                out += [f"{host}{per_slot}{comment}"] * slots
        self.written = "\n".join(out) + "\n"
        return self.written


def placed(outcome: Outcome) -> list[str]:
    """The host of each rank, by rank, once every rank reported in one MPI world of that size."""
    assert outcome.exit_code == 0, outcome.log
    ranks = sorted(outcome.ranks)
    size = len(ranks)
    assert [r for r, *_ in ranks] == list(range(size)), outcome.log
    assert {(n, s) for _, n, _, s in ranks} == {(size, size * (size - 1) // 2)}, outcome.log
    return [host for _, _, host, _ in ranks]


def refused(outcome: Outcome, message: str) -> bool:
    """mpirun failed before any rank ran, saying ``message`` (its help texts wrap lines anywhere)."""
    said = " ".join(outcome.log.split())
    return outcome.exit_code not in (0, None) and not outcome.ranks and message in said


def run_permuted(
    build: Build,
    hello_dir: Path,
    permuted: Permuted,
    *,
    workers: int = 3,
    slots: int = 1,
    flags: tuple[str, ...] | None = None,
    **options: object,
) -> Outcome:
    args = FOLLOW_FLAGS[build.name] if flags is None else flags
    job = job_for(build, hello_dir, workers=workers, slots=slots, mpirun_args=args, **options)
    return run_job(build, job, hostfile=permuted)


@pytest.mark.parametrize("slots", [1, 2])
def test_ranks_follow_a_permuted_hostfile(build: Build, hello_dir: Path, slots: int) -> None:
    permuted = Permuted(build, WORKERS_PERMUTED)
    outcome = run_permuted(build, hello_dir, permuted, slots=slots)
    expected = slot_hosts(permuted.written)
    assert expected[::slots] == ["hello-worker-2", "hello-worker-0", "hello-worker-1"]
    assert placed(outcome) == expected, f"{permuted.written}\n{outcome.log}"


def test_a_launcher_listed_second_gets_rank_1(build: Build, hello_dir: Path) -> None:
    """runLauncherAsWorker: the hook lists the launcher first; here it is moved to line 2 (rank 1)."""
    permuted = Permuted(build, (2, 0, 1))  # the hook's lines: launcher, worker-0, worker-1
    outcome = run_permuted(build, hello_dir, permuted, workers=2, launcher_as_worker=True)
    assert placed(outcome) == ["hello-worker-1", "hello-launcher", "hello-worker-0"], outcome.log


@pytest.mark.parametrize("build", HYDRA, indirect=True)
def test_hydra_follows_the_order_with_ppn_too(build: Build, hello_dir: Path) -> None:
    permuted = Permuted(build, WORKERS_PERMUTED)
    outcome = run_permuted(build, hello_dir, permuted, slots=2, flags=("-ppn", "2"))
    assert placed(outcome) == slot_hosts(permuted.written), outcome.log


@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
def test_open_mpi_without_seq_gives_rank_0_to_the_launcher(build: Build, hello_dir: Path) -> None:
    """Why seq is needed: the default mapper takes the launcher's own host first, wherever it is listed."""
    permuted = Permuted(build, (2, 0, 1))
    outcome = run_permuted(build, hello_dir, permuted, workers=2, launcher_as_worker=True, flags=())
    assert slot_hosts(permuted.written)[0] == "hello-worker-1"
    assert placed(outcome) == ["hello-launcher", "hello-worker-1", "hello-worker-0"], outcome.log


@pytest.mark.parametrize(
    ("build", "variable"),
    [("openmpi4", "OMPI_MCA_rmaps"), ("openmpi5", "PRTE_MCA_rmaps_default_mapping_policy")],
    indirect=["build"],
)
def test_open_mpi_seq_from_the_environment(build: Build, hello_dir: Path, variable: str) -> None:
    """The seq flag as a launcher variable instead (what an image or the launcher's env can set)."""
    permuted = Permuted(build, (2, 0, 1))
    options = {"launcher_as_worker": True, "env": {variable: "seq"}}
    outcome = run_permuted(build, hello_dir, permuted, workers=2, flags=(), **options)
    assert placed(outcome) == ["hello-worker-1", "hello-launcher", "hello-worker-0"], outcome.log


@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
def test_open_mpi_default_mapper_counts_one_slot_per_line(build: Build, hello_dir: Path) -> None:
    """A user who passes no seq flag still gets N slots per host from the one-line-per-slot form: N ranks on
    each host, and not one more."""
    permuted = Permuted(build, WORKERS_PERMUTED)
    outcome = run_permuted(build, hello_dir, permuted, slots=2, flags=())
    assert Counter(placed(outcome)) == {"hello-worker-0": 2, "hello-worker-1": 2, "hello-worker-2": 2}
    over = run_permuted(build, hello_dir, Permuted(build, WORKERS_PERMUTED), slots=2, flags=(), ranks=7)
    assert refused(over, "There are not enough slots available in the system to satisfy the 7"), over.log


@pytest.mark.parametrize("build", OPEN_MPI, indirect=True)
@pytest.mark.parametrize(
    ("form", "message"),
    [
        ("slots", "A sequential map was requested, but not enough node entries"),
        ("slots_per_line", "contains multiple definitions of the slot count"),
    ],
)
def test_open_mpi_seq_needs_one_bare_line_per_slot(
    build: Build, hello_dir: Path, form: str, message: str
) -> None:
    """``host slots=2`` is one rank's line to seq; ``host slots=1`` twice is refused by every mapper."""
    outcome = run_permuted(build, hello_dir, Permuted(build, WORKERS_PERMUTED, form), slots=2)
    assert refused(outcome, message), outcome.log


@pytest.mark.parametrize("build", ["openmpi4"], indirect=True)
def test_open_mpi_4_seq_knows_the_launcher_by_hostname_only(build: Build, hello_dir: Path) -> None:
    permuted = Permuted(build, (2, 0, 1), launcher_fqdn=True)
    outcome = run_permuted(build, hello_dir, permuted, workers=2, launcher_as_worker=True)
    assert refused(outcome, "(hello-launcher.hello.default.svc) that is not in your allocation"), outcome.log


@pytest.mark.parametrize("slots", [1, 2])
def test_a_comment_after_a_host_is_ignored(build: Build, hello_dir: Path, slots: int) -> None:
    permuted = Permuted(build, WORKERS_PERMUTED, trailing=" # zone-a")
    outcome = run_permuted(build, hello_dir, permuted, slots=slots)
    assert placed(outcome) == slot_hosts(permuted.written), f"{permuted.written}\n{outcome.log}"


@pytest.mark.parametrize("build", ["openmpi4"], indirect=True)
def test_open_mpi_4_seq_takes_a_second_space_for_a_cpu_list(build: Build, hello_dir: Path) -> None:
    """Its seq mapper splits a line at its first space: with two before ``#``, " # ..." is a CPU list."""
    outcome = run_permuted(build, hello_dir, Permuted(build, WORKERS_PERMUTED, trailing="  # zone-a"))
    assert refused(outcome, "Bad parameter in file"), outcome.log
    assert "rmaps_seq.c" in outcome.log, outcome.log
