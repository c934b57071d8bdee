"""The rule about the hostfile's topology order (ours, ``app.api.ordering``): Open MPI's ``mpirun`` places
ranks its own way unless told to follow the file with the sequential mapper, so a job that asks for the
order and does not say so gets its ranks where the default mapper puts them (docs/user-guide.md, "Making
mpirun follow the order"). MPICH and Intel MPI follow the file's order already.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from app.api.defaults import Job
from app.api.lint import mpi_commands, reading
from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity
from app.api.ordering import ORDER_ANNOTATION, requested
from app.api.types import MPIImplementation, ReplicaType

SEQUENTIAL = "seq"
# The launcher variables that choose the sequential mapper: Open MPI 4.1's, then Open MPI 5's (PRRTE's).
SEQUENTIAL_ENV = ("OMPI_MCA_rmaps", "PRTE_MCA_rmaps_default_mapping_policy")
_MAP_BY = ("--map-by", "-map-by")
_MCA = ("--mca", "-mca", "--gmca", "-gmca", "--prtemca", "-prtemca")
# MCA parameters whose value ``seq`` is the sequential mapper (--mca rmaps seq; --prtemca for Open MPI 5).
_SEQUENTIAL_MCA = ("rmaps", "rmaps_default_mapping_policy")
_RANKFILE = ("--rankfile", "-rankfile", "-rf")
_FIX = (
    "Open MPI 4.1: add --mca rmaps seq (or the launcher variable OMPI_MCA_rmaps=seq); Open MPI 5: add"
    " --map-by seq (or PRTE_MCA_rmaps_default_mapping_policy=seq)"
)


def hostfile_order_not_followed(job: Job) -> Iterator[Finding]:
    if job.mpi_implementation != MPIImplementation.OPENMPI or not requested(job.metadata.annotations):
        return
    for index, container in enumerate(reading.containers(job, ReplicaType.LAUNCHER)):
        found = mpi_commands.launch_line(container)
        if found is None or mpi_commands.program_name(found[0][0]) == "horovodrun":
            continue
        line, before = found
        program = mpi_commands.program_name(line[0])
        follows, other = _mapping(line[1:])
        if other is None and (follows or _sequential_env(container, before)):
            continue
        launch = mpi_commands.find_launch(container)
        field = launch.field if launch is not None else "command"
        why = (
            f"{program} {other} maps ranks its own way"
            if other is not None
            else f"{program} is not told to follow it (no sequential mapper)"
        )
        yield Finding(
            Rule.HOSTFILE_ORDER_NOT_FOLLOWED,
            Severity.WARNING,
            f"{reading.LAUNCHER}.template.spec.containers[{index}].{field}",
            f"the job asks for its hostfile in topology order ({ORDER_ANNOTATION}: topology), but {why}:"
            " Open MPI then does not put rank i on the hostfile's i-th line",
            _FIX + ("; and drop " + other if other is not None else ""),
        )


def _mapping(flags: list[str]) -> tuple[bool, str | None]:
    """(the sequential mapper or a rankfile is asked for, another ``--map-by`` given, as written)."""
    follows, other = False, None
    for index, word in enumerate(flags):
        name, equals, inline = word.partition("=")
        value = inline if equals else (flags[index + 1] if index + 1 < len(flags) else "")
        if name in _MAP_BY:
            if value.partition(":")[0].lower() == SEQUENTIAL:
                follows = True
            else:
                other = f"{name} {value}"
        elif word in _MCA and index + 2 < len(flags):
            follows = follows or (flags[index + 1] in _SEQUENTIAL_MCA and flags[index + 2] == SEQUENTIAL)
        elif name in _RANKFILE:
            follows = True
    return follows, other


def _sequential_env(container: Mapping[str, Any], before: list[str]) -> bool:
    """The launcher container's env, or a shell's ``OMPI_MCA_rmaps=seq mpirun`` or ``export ...``, chooses
    the sequential mapper."""
    env = container.get("env")
    assigned: list[Any] = [
        (e.get("name"), e.get("value"))
        for e in (env if isinstance(env, list) else [])
        if isinstance(e, Mapping)
    ]
    assigned += [word.split("=", 1) for word in before if "=" in word]
    return any(name in SEQUENTIAL_ENV and value == SEQUENTIAL for name, value in assigned)
