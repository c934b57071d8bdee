"""An ordered job end to end: the hook's own hostfile and launcher env, real mpirun, no flag.

The job asks for ``mpi-operator-hook/hostfile-order: topology``; the fake scheduler binds its three workers to
nodes whose rack labels sort them 2, 0, 1. The hook writes that order (Open MPI: a bare line per slot) and,
for Open MPI, the sequential mapper as both versions' default; ``mpirun -n 6`` with no mapping flag must put
ranks 2i and 2i+1 on the hostfile's i-th host, for every build.
"""

from __future__ import annotations

from pathlib import Path

from app.api.hostfile_order_annotations import LABELS_ANNOTATION, ORDER_ANNOTATION
from app.children import hostfile_order_lines
from tests.mpi.builds import Build
from tests.mpi.jobs import job_for, run_job
from tests.mpi.test_mpi_hostfile_order import placed
from tests.support.hostfiles import slot_hosts
from tests.support.metacontroller import FakeMetacontroller

RACK = "example.com/rack"
BOUND = {"hello-worker-0": "node-b", "hello-worker-1": "node-c", "hello-worker-2": "node-a"}


def bind_across_racks(mc: FakeMetacontroller) -> None:
    for node, rack in (("node-a", "r1"), ("node-b", "r2"), ("node-c", "r3")):
        mc.add_node(node, {RACK: rack})
    for pod, node in BOUND.items():
        mc.bind(pod, node)


def test_the_hooks_ordered_hostfile_is_followed_without_a_flag(build: Build, hello_dir: Path) -> None:
    job = job_for(build, hello_dir, workers=3, slots=2)
    job["metadata"]["annotations"] = {ORDER_ANNOTATION: "topology", LABELS_ANNOTATION: RACK}
    outcome = run_job(build, job, placement=bind_across_racks)
    assert outcome.hostfile.startswith(f"{hostfile_order_lines.FINAL} {RACK}\n"), outcome.hostfile
    expected = ["hello-worker-2"] * 2 + ["hello-worker-0"] * 2 + ["hello-worker-1"] * 2
    assert slot_hosts(outcome.hostfile) == expected
    assert placed(outcome) == expected
