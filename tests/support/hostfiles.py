"""Reading a hostfile as ``mpirun`` does, for the tests that check where ranks ran: one host per slot."""

from __future__ import annotations

import re

# ``host``, ``host:N`` (MPICH, Intel) or ``host slots=N`` (Open MPI); a ``#`` starts a comment.
_LINE = re.compile(r"^(\S+?)(?::(\d+)|\s+slots=(\d+))?(?:\s.*)?$")


def slot_hosts(hostfile: str) -> list[str]:
    """The short host of each slot, in the file's order: ``host:N`` and ``host slots=N`` hold N slots, a bare
    ``host`` line one (Open MPI's sequential form repeats it)."""
    slots: list[str] = []
    for line in hostfile.splitlines():
        entry = line.split("#")[0].strip()
        found = _LINE.match(entry) if entry else None
        if found:
            slots += [found[1].split(".")[0]] * int(found[2] or found[3] or 1)
    return slots
