"""Ours: the hostfile order of an ordered job and the lines the ConfigMap writes for it
(``app.core.policies.hostfile_order`` decides it).

The order header, the hostfile's first line, says where the order stands, for the launcher's
``wait-for-workers`` to read (``launcher_wait``) and for a user to see:

- ``# mpi-operator-hook: hostfile order pending, 2 of 4 hosts bound to nodes``: hosts in index order;
- ``# mpi-operator-hook: hostfile ordered by node labels a, b``: final, hosts sorted by their nodes;
- with ``runLauncherAsWorker``, the final line ends ``; launcher Pod <pod>``: the launcher took its place by
  that Pod's node, so only that Pod may start ``mpirun`` on it.

Every MPI skips a ``#`` line in a hostfile. The order table, the key ``hostfile-order``, shows each line's
node and its values of the order labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.api.hostfile_order_annotations import MAX_TABLE_BYTES

MARK = "# mpi-operator-hook: hostfile order"
PENDING = f"{MARK} pending"
FINAL = f"{MARK}ed by node labels"
LAUNCHER_POD = "; launcher Pod "
ORDER_KEY = "hostfile-order"
# A label a node does not have, or the node of a host not bound yet.
MISSING = "-"


def cell(text: str) -> str:
    """A node name, label value or Pod name as the ConfigMap may show it: what the apiserver allows in them
    passes; anything else (a request is untrusted input) becomes ``?``, never a line break or a space."""
    return _NOT_A_NAME.sub("?", text)


_NOT_A_NAME = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class Placement:
    """One host of the hostfile and where it runs: bound once its Pod has a node."""

    host: str
    # "" until the scheduler binds its Pod.
    node: str
    # The node's values of the order labels, in their order (None: the node lacks it, or is unknown).
    values: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class HostfileOrder:
    """The hosts of an ordered job's hostfile, placed: pending until every host is bound, then final."""

    # The order labels, coarsest first.
    labels: tuple[str, ...]
    # As the hostfile lists them: sorted by node once every host is bound (final), index order until then.
    placements: tuple[Placement, ...]
    # runLauncherAsWorker: the launcher Pod whose node placed the launcher ("" otherwise).
    launcher_pod: str = ""

    @property
    def bound(self) -> int:
        return sum(1 for p in self.placements if p.node)

    @property
    def final(self) -> bool:
        return self.bound == len(self.placements)

    @property
    def hosts(self) -> list[str]:
        return [p.host for p in self.placements]

    def header(self) -> str:
        """The order header: the hostfile's first line (``launcher_wait`` reads it)."""
        if not self.final:
            return f"{PENDING}, {self.bound} of {len(self.placements)} hosts bound to nodes\n"
        by = ", ".join(self.labels) if self.labels else "(none: by node name)"
        tail = f"{LAUNCHER_POD}{cell(self.launcher_pod)}" if self.launcher_pod else ""
        return f"{FINAL} {by}{tail}\n"

    def table(self) -> str:
        """The order table: ``line host node <label>...``, a row per hostfile line, cut at
        ``MAX_TABLE_BYTES``."""
        lines = ["# " + " ".join(("line", "host", "node", *self.labels)) + "\n"]
        size = len(lines[0])
        for number, placement in enumerate(self.placements, 1):
            values = (cell(v) if v is not None else MISSING for v in placement.values)
            row = " ".join((str(number), placement.host, cell(placement.node) or MISSING, *values)) + "\n"
            size += len(row.encode())
            if size > MAX_TABLE_BYTES:
                lines.append(f"# {len(self.placements) - number + 1} more hosts not shown\n")
                break
            lines.append(row)
        return "".join(lines)
