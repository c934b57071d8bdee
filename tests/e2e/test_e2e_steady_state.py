"""No write loops: once a job settles, syncs change nothing. Every child's resourceVersion and the MPIJob's
status stay as they are over several syncs, for a running and for a finished job. The counts are printed.
"""

from __future__ import annotations

from typing import Any

from tests.e2e import jobs
from tests.e2e.conftest import E2E
from tests.e2e.kube import finish_pod

SYNCS = 5


def test_settled_jobs_cause_no_writes(e2e: E2E, ns: str, capsys: Any) -> None:
    kube = e2e.kube
    jobs.start_running(kube, ns, "running")
    finish_pod(kube, jobs.start_running(kube, ns, "finished", runPolicy={"cleanPodPolicy": "None"}), 0)
    jobs.wait_condition(kube, ns, "finished", "Succeeded")
    # Each job is poked through one of its workers (an annotation: a child event, so a sync of that job).
    pods = {"running": "running-worker-0", "finished": "finished-worker-0"}
    settled = e2e.settle(ns, pods)
    syncs = {name: e2e.hook.syncs(ns, name) for name in pods}
    for _ in range(SYNCS):
        for name, pod in pods.items():
            e2e.poke(ns, name, "pods", pod)
    after = jobs.versions(kube, ns, set(pods.values()))
    counted = {name: e2e.hook.syncs(ns, name) - syncs[name] for name in pods}
    changed = {k: (settled[k], after.get(k)) for k in settled if settled[k] != after.get(k)}
    with capsys.disabled():
        print(
            f"\nsteady state: syncs {counted}, objects watched {len(settled)}, resourceVersions changed "
            f"{len(changed)}"
        )
    assert all(n >= SYNCS for n in counted.values())
    assert changed == {}
