"""The MPI builds the end-to-end tests run, where ``.ci/install-mpi`` puts them, and how to compile for each.

Debian's Open MPI 4.1 and MPICH share /usr/bin, where only one of them can own ``mpirun``: each is called by
its own absolute path. The PyPI builds live in their own virtualenvs under ``.mpi/`` (override with
``MPI_E2E_PREFIX``), which the pods see at /opt/mpi, as an image would install them (and so that no
folder above the checkout has to be open to the pods' non-root user). A build that is not installed is
skipped with the reason ``install-mpi`` recorded.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PREFIX = Path(os.environ.get("MPI_E2E_PREFIX", ROOT / ".mpi"))
HELLO_SOURCE = ROOT / "examples" / "hello" / "hello.c"
POD_PREFIX = Path("/opt/mpi")  # where the pods see PREFIX
MPICH_INCLUDE = Path("/usr/include/x86_64-linux-gnu/mpich")


def in_pod(path: Path) -> Path:
    """A path under PREFIX as the pods see it."""
    return POD_PREFIX / path.relative_to(PREFIX) if path.is_relative_to(PREFIX) else path


@dataclass(frozen=True)
class Build:
    """One MPI installation: the ``mpiImplementation`` it needs and the launcher command to use.

    Paths are the host's; ``in_pod`` gives the pods' view."""

    name: str
    implementation: str
    mpirun: Path
    bin_dir: Path
    compile_command: tuple[str, ...]
    link_args: tuple[str, ...] = ()
    # Extra mpirun arguments the image's user would pass (root needs Open MPI's explicit consent).
    root_args: tuple[str, ...] = ()
    # Hydra (MPICH, Intel MPI) reaches even the launcher's own host over ssh (runLauncherAsWorker needs sshd
    # there too); MPICH's then waits forever for a proxy that ssh could not start.
    ssh_to_itself: bool = False
    hangs_when_ssh_fails: bool = False
    # MPICH 4.0 (ch4:ucx): now and then a rank prints its line and never returns from MPI_Finalize, on the
    # real node too (docs/troubleshooting.md, "The job never finishes"). The placement is still checked from
    # the ranks' lines; the hang is reported as a warning instead of failing the run.
    finalize_may_hang: bool = False
    # Extra environment the image sets (ENV lines of its Dockerfile).
    image_env: tuple[tuple[str, str], ...] = ()

    def missing(self) -> str | None:
        """Why this build cannot run here, or None."""
        if self.mpirun.exists() and Path(self.compile_command[0]).exists():
            return None
        recorded = PREFIX / "skipped"
        reasons = recorded.read_text().strip() if recorded.exists() else ""
        return f"{self.name} is not installed ({self.mpirun} missing); install-mpi said: {reasons or '-'}"

    def compile(self, output: Path) -> None:
        subprocess.run(
            [*self.compile_command, "-O1", "-o", str(output), str(HELLO_SOURCE), *self.link_args],
            check=True,
            capture_output=True,
            text=True,
        )


_INTEL_LIB = PREFIX / "intel" / "lib"
_OPENMPI5 = PREFIX / "openmpi5"
_POD_INTEL = in_pod(PREFIX / "intel")

BUILDS = {
    b.name: b
    for b in (
        Build(
            name="openmpi4",
            implementation="OpenMPI",
            mpirun=Path("/usr/bin/mpirun.openmpi"),
            bin_dir=Path("/usr/bin"),
            compile_command=("/usr/bin/mpicc.openmpi",),
            root_args=("--allow-run-as-root",),
        ),
        Build(
            name="openmpi5",
            implementation="OpenMPI",
            mpirun=_OPENMPI5 / "bin" / "mpirun",
            bin_dir=_OPENMPI5 / "bin",
            compile_command=(str(_OPENMPI5 / "bin" / "mpicc"), f"-Wl,-rpath,{in_pod(_OPENMPI5 / 'lib')}"),
            root_args=("--allow-run-as-root",),
        ),
        Build(
            name="mpich",
            implementation="MPICH",
            mpirun=Path("/usr/bin/mpiexec.hydra"),
            bin_dir=Path("/usr/bin"),
            compile_command=("/usr/bin/mpicc.mpich",),
            ssh_to_itself=True,
            hangs_when_ssh_fails=True,
            finalize_may_hang=True,
            # Debian's MPICH is ch4:ucx. Our "pods" share one kernel, so UCX would take them for one node
            # and mix in its shared-memory transports; on a cluster the workers are on other nodes and talk
            # TCP, as here.
            image_env=(("UCX_TLS", "tcp,self"),),
        ),
        Build(
            # impi-rt ships no compiler wrapper; Intel MPI keeps MPICH's ABI, so MPICH's header will do.
            name="intel",
            implementation="Intel",
            mpirun=PREFIX / "intel" / "bin" / "mpiexec.hydra",
            bin_dir=PREFIX / "intel" / "bin",
            compile_command=(
                "/usr/bin/gcc",
                f"-I{MPICH_INCLUDE}",
            ),
            link_args=(f"-L{_INTEL_LIB}", f"-Wl,-rpath,{in_pod(_INTEL_LIB)}", "-lmpi"),
            ssh_to_itself=True,
            image_env=(("I_MPI_ROOT", str(_POD_INTEL)), ("FI_PROVIDER", "tcp")),
        ),
    )
}
