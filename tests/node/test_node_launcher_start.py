"""The launcher's first attempt succeeds: one MPIJob applied, run to Succeeded, deleted and applied again
under the same name, with the default ``launcherCreationPolicy: AtStartup``.

The first run meets a cold cluster DNS, the later ones the records of the previous job of that name (its
Pods still terminating). Without the launcher waiting for its workers, most runs restarted the launcher
(docs/testing.md, "Real-node tests"). ``MPI_HOOK_NODE_REPEATS`` sets the number of runs (default 10).
"""

from __future__ import annotations

import os

import pytest

from tests.node import repeats, runs
from tests.node.conftest import RealNode

REPEATS = int(os.environ.get("MPI_HOOK_NODE_REPEATS", "10"))


def test_the_launcher_never_restarts_over_repeated_runs(
    real_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    job = runs.example("pi.yaml", "pi")
    label = "pi (Open MPI 4), same name, AtStartup"
    done = repeats.repeat(real_node.kube, ns, job, REPEATS, label)
    summary = repeats.summary(label, done)
    print(summary)
    record_property("e2e_summary", summary.splitlines()[0])
    assert not [r for r in done if r.restarts], summary
    for r in done:
        assert r.job_failed == 0, summary
