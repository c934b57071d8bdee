"""The MPICH example as non-root finishes every run: ``examples/pi/pi-mpich.yaml`` (``mpiuser``, sshd on
2222, the key at ``/home/mpiuser/.ssh``) applied, run to Succeeded, deleted and applied again under the same
name.

An MPICH 4.0 image (Debian bookworm's 4.0.2, ch4:ucx) never finished about one run in four: every rank had
printed, then rank 0 waited in ``MPI_Finalize`` for rank 1, which sat in a PMI barrier
(docs/troubleshooting.md, "The job never finishes"; measured in docs/testing.md). The image here has
MPICH 4.2, which no longer has that barrier. ``MPI_HOOK_NODE_MPICH_REPEATS`` sets the number of runs
(default 5).
"""

from __future__ import annotations

import os

import pytest

from tests.e2e import jobs
from tests.node import repeats, runs
from tests.node.conftest import RealNode

REPEATS = int(os.environ.get("MPI_HOOK_NODE_MPICH_REPEATS", "5"))


def test_mpich_example_as_non_root_finishes_every_run(
    real_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    job = runs.example("pi-mpich.yaml", "pi")
    job["spec"]["runPolicy"].pop("ttlSecondsAfterFinished", None)  # the last run's log is read below
    label = "pi-mpich (MPICH 4.2, mpiuser), same name"
    done = repeats.repeat(real_node.kube, ns, job, REPEATS, label)
    summary = repeats.summary(label, done)
    print(summary)
    record_property("e2e_summary", summary.splitlines()[0])
    assert not [r for r in done if r.restarts], summary
    placed = runs.assert_ran_on_hostfile(real_node.kube, ns, "pi", 2)
    assert sorted(placed.values()) == ["pi-worker-0", "pi-worker-1"]
    for pod in jobs.launcher_pods(real_node.kube, ns, "pi"):
        assert pod["spec"]["containers"][0]["securityContext"]["runAsUser"] == 1000
