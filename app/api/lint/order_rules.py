"""The rule about topology order (ours, ``app.api.hostfile_order_annotations``): for an ordered Open MPI job
the hook makes the sequential mapper both versions' default (``app.children.launcher_job``), which a mapping
the user passes replaces; then Open MPI places ranks its own way, not on the hostfile's lines in order
(docs/user-guide.md, "Making mpirun follow the order"). MPICH and Intel MPI follow the file's order already.
"""

from __future__ import annotations

from collections.abc import Iterator

from app.api.defaults import Job
from app.api.hostfile_order_annotations import ORDER_ANNOTATION, asks_topology_order
from app.api.lint import mpi_commands, reading
from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity
from app.api.types import MPIImplementation, ReplicaType

SEQUENTIAL = "seq"
_MAP_BY = ("--map-by", "-map-by")
_PER_NODE = ("-npernode", "--npernode", "-N", "-pernode", "--pernode", "-npersocket", "--npersocket")
_MCA = ("--mca", "-mca", "--gmca", "-gmca", "--prtemca", "-prtemca")
# MCA parameters that choose a mapper or a mapping policy: 4.1's component and policy, 5's (PRRTE's) policy.
_MAPPING_MCA = ("rmaps", "rmaps_base_mapping_policy", "rmaps_default_mapping_policy")
_FIX = (
    "drop {flag}: for a job in topology order the hook makes the sequential mapper Open MPI's default"
    " (4.1 and 5); to say it yourself, --mca rmaps seq (4.1) or --map-by seq (5)"
)


def hostfile_order_not_followed(job: Job) -> Iterator[Finding]:
    annotations = job.metadata.annotations
    if job.mpi_implementation != MPIImplementation.OPENMPI or not asks_topology_order(annotations):
        return
    for index, container in enumerate(reading.containers(job, ReplicaType.LAUNCHER)):
        found = mpi_commands.launch_line(container)
        if found is None or mpi_commands.program_name(found[0][0]) == "horovodrun":
            continue
        line, _ = found
        flag = other_mapping(line[1:])
        if flag is None:
            continue
        launch = mpi_commands.find_launch(container)
        field = launch.field if launch is not None else "command"
        yield Finding(
            Rule.HOSTFILE_ORDER_NOT_FOLLOWED,
            Severity.WARNING,
            f"{reading.LAUNCHER}.template.spec.containers[{index}].{field}",
            f"the job asks for its hostfile in topology order ({ORDER_ANNOTATION}: topology), but"
            f" {mpi_commands.program_name(line[0])} {flag} maps ranks its own way: Open MPI then does not put"
            " rank i on the hostfile's i-th slot",
            _FIX.format(flag=flag),
        )


def other_mapping(flags: list[str]) -> str | None:
    """A mapping other than the sequential mapper or a rankfile, as written (``--map-by ppr:1:node``)."""
    for index, word in enumerate(flags):
        name, equals, inline = word.partition("=")
        value = inline if equals else (flags[index + 1] if index + 1 < len(flags) else "")
        if name in _MAP_BY and value.partition(":")[0].lower() != SEQUENTIAL:
            return f"{name} {value}"
        if name in _PER_NODE:
            return word if equals or name in ("-pernode", "--pernode") else f"{name} {value}"
        mca = flags[index : index + 3]
        if word in _MCA and len(mca) == 3 and mca[1] in _MAPPING_MCA and mca[2] != SEQUENTIAL:
            return " ".join(mca)
    return None
