"""Field paths as the hook and ``mpijob`` show them: upstream's notation, one way.

The Go operator's validation errors print k8s.io/apimachinery's ``field.Path``: a field after a dot, a
replica type (a key of ``mpiReplicaSpecs``) and a list index in brackets:
``spec.mpiReplicaSpecs[Worker].template.spec.containers[0].args``. Every path the hook or ``mpijob`` shows is
written so: the ``Invalid`` condition (upstream's validation, the parse's and the depth limit's errors) and
every lint finding (``mpijob lint``, the ``Warning`` condition), so one field reads the same wherever it is
named. Messages quoted from other programs keep theirs: the apiserver and ``kubectl`` print a CRD's map
keys after a dot (``unknown field "spec.mpiReplicaSpecs.Worker.slotsPerWorker"``).
"""

from __future__ import annotations

from collections.abc import Iterable

# The one map whose keys upstream's paths show (``field.NewPath("spec").Child("mpiReplicaSpecs").Key(...)``).
REPLICA_SPECS = "mpiReplicaSpecs"
# A list element whose index is not known (the depth limit's walk counts no elements).
ANY_INDEX = None


def replica_spec(kind: str) -> str:
    """``spec.mpiReplicaSpecs[Worker]``."""
    return f"spec.{REPLICA_SPECS}[{kind}]"


def join(parts: Iterable[str | int | None]) -> str:
    """``parts`` (a pydantic location, or the keys walked to a value) as a path: an index, ``ANY_INDEX``
    (``[]``) and a key of ``mpiReplicaSpecs`` in brackets, any other name after a dot."""
    path = ""
    previous: str | int | None = ""
    for part in parts:
        if part is None:
            path += "[]"
        elif isinstance(part, int) or previous == REPLICA_SPECS:
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
        previous = part
    return path
