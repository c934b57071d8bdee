"""On the real node, each MPI image's mpirun puts rank i on the i-th slot of a reordered hostfile.

The pi example with 3 workers and 2 slots each; its launcher writes /etc/mpi/hostfile's hosts in the order
worker-2, worker-0, worker-1 (neither index nor name order) to a file of its own, in the form the build needs
(tests/mpi/test_mpi_hostfile_order.py finds it: Open MPI one bare line per slot, MPICH ``host:N``), after a
``# ...`` marker line, points the launcher's hostfile variables at it and runs ``mpirun`` with the flags
that make it follow the order (docs/user-guide.md, "Making mpirun follow the hostfile order"). The pi program
prints each rank's host: rank i must have run on the file's i-th slot.

With runLauncherAsWorker and the launcher listed second, Open MPI 4.1 and 5 follow the file with seq and
give the launcher rank 0 without it.
"""

from __future__ import annotations

import pytest

from tests.node import runs
from tests.node.conftest import RealNode
from tests.support.hostfiles import slot_hosts

ORDER = (2, 0, 1)
SLOTS = 2
WORKERS = 3
# build -> (example file, image, mpirun flags that follow the hostfile's order, one line per slot)
BUILDS = {
    "openmpi4": ("pi.yaml", "mpioperator/mpi-pi:openmpi", "--mca rmaps seq", True),
    "openmpi5": ("pi.yaml", "mpioperator/mpi-pi:openmpi5", "--map-by seq", True),
    "mpich": ("pi-mpich.yaml", "mpioperator/mpi-pi:mpich", "", False),
}
ECHO = "hostfile| "


def _launcher_script(order: tuple[int, ...], flags: str, line_per_slot: bool, ranks: int) -> str:
    """POSIX sh, as mpiuser: the reordered hostfile from the mounted one, shown in the log, then mpirun.

    The launcher's own line names it by its hostname, which Open MPI 4.1's seq mapper needs."""
    entry = (
        'n=0; while [ "$n" -lt "$slots" ]; do echo "$host"; n=$((n + 1)); done'
        if line_per_slot
        else 'echo "$host:$slots"'
    )
    indexes = " ".join(str(i) for i in order)
    return f"""set -e
file=/tmp/ordered-hostfile
{{
  echo '# mpi-operator-hook: hosts in a test order'
  for i in {indexes}; do
    line=$(grep -v '^#' /etc/mpi/hostfile | sed -n "$((i + 1))p")
    host=${{line%%[ :]*}}
    case $host in "$(hostname)".*) host=$(hostname);; esac
    slots=${{line##*[=:]}}
    {entry}
  done
}} > "$file"
sed 's/^/{ECHO}/' "$file"
export OMPI_MCA_orte_default_hostfile="$file" PRTE_MCA_prte_default_hostfile="$file" HYDRA_HOST_FILE="$file"
exec mpirun {flags} -n {ranks} /home/mpiuser/pi
"""


def _run(
    real_node: RealNode,
    ns: str,
    build: str,
    order: tuple[int, ...],
    *,
    workers: int,
    slots: int,
    follow: bool = True,
    **spec: object,
) -> tuple[list[str], list[str | None]]:
    """Run the job; return each slot's host (from the hook's hostfile, reordered) and each rank's host."""
    file, image, flags, line_per_slot = BUILDS[build]
    job = runs.with_image(runs.example(file, "pi"), image)
    job["spec"].update(slotsPerWorker=slots, **spec)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = workers
    for container in runs.containers(job):  # up to 4 Pods on a 2-CPU node
        container["resources"] = {"limits": {"cpu": "200m", "memory": "256Mi"}}
    ranks = slots * len(order)
    launcher = runs.launcher(job)
    launcher["command"] = ["sh", "-c", _launcher_script(order, flags if follow else "", line_per_slot, ranks)]
    launcher.pop("args", None)
    runs.apply(real_node.kube, ns, job)
    runs.succeeded(real_node.kube, ns, "pi")
    log = runs.launcher_log(real_node.kube, ns, "pi")
    written = "\n".join(line[len(ECHO) :] for line in log.splitlines() if line.startswith(ECHO))
    hook_hosts = list(runs.hostfile(real_node.kube, ns, "pi"))
    expected = [hook_hosts[i] for i in order for _ in range(slots)]
    assert slot_hosts(written) == expected, log
    assert f"Workers: {ranks}" in log, log
    placed = runs.ranks(log)
    print(f"{build}: hostfile\n{written}\nrank -> host: {placed}")
    return expected, [placed.get(rank) for rank in range(ranks)]


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_ranks_follow_a_reordered_hostfile(real_node: RealNode, ns: str, build: str) -> None:
    expected, placed = _run(real_node, ns, build, ORDER, workers=WORKERS, slots=SLOTS)
    assert expected[::SLOTS] == ["pi-worker-2", "pi-worker-0", "pi-worker-1"]
    assert placed == expected


@pytest.mark.parametrize("follow", [True, False], ids=["seq", "default-mapper"])
@pytest.mark.parametrize("build", ["openmpi4", "openmpi5"])
def test_open_mpi_follows_a_launcher_listed_second_only_with_seq(
    real_node: RealNode, ns: str, build: str, follow: bool
) -> None:
    """runLauncherAsWorker: the hook lists the launcher first; here it is second. Without seq, Open MPI's
    default mapper still gives the launcher's own host rank 0."""
    expected, placed = _run(
        real_node, ns, build, (2, 0, 1), workers=2, slots=1, follow=follow, runLauncherAsWorker=True
    )
    assert expected == ["pi-worker-1", "pi-launcher", "pi-worker-0"]
    assert placed == (expected if follow else ["pi-launcher", "pi-worker-1", "pi-worker-0"])
