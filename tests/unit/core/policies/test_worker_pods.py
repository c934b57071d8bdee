"""``worker_pods``: upstream's worker list (``getOrCreateWorker``: replicas ``0..n-1``, none while suspended
or once the launcher Job is done), which workers a response returns, and what cleanPodPolicy keeps."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.types import CleanPodPolicy
from app.core.observed import count_workers
from app.core.policies import worker_pods
from app.core.policies.worker_pods import WorkerPods, listed
from tests.support.builders import mpijob
from tests.support.observed import defaulted, observed, worker, workers

# id: (suspended, launcher done, finished before, the length of upstream's worker list for 2 replicas)
LISTED = {
    "running": (False, False, False, 2),
    "suspended: none": (True, False, False, 0),
    "launcher done: none": (False, True, False, 0),
    "finished before: none": (False, False, True, 0),
}


@pytest.mark.parametrize(("suspended", "done", "finished", "want"), LISTED.values(), ids=LISTED.keys())
def test_upstreams_worker_list(suspended: bool, done: bool, finished: bool, want: int) -> None:
    assert listed(defaulted(), suspended=suspended, launcher_done=done, finished_before=finished) == want


RUNNING_0, RUNNING_1 = "pi-worker-0", "pi-worker-1"

# id: (replicas, existing workers by phase, listed, hold, the indices returned, those Running (the hostfile))
RETURNED: dict[str, tuple[int, dict[int, Any], int, bool, tuple[int, ...], tuple[str, ...]]] = {
    "a new job: every listed worker, to create": (2, {}, 2, False, (0, 1), ()),
    "running: the hostfile names the Running ones": (
        2,
        workers("Running", "Pending"),
        2,
        False,
        (0, 1),
        (RUNNING_0,),
    ),
    "scaled up: the new index is created": (
        3,
        workers("Running", "Running"),
        3,
        False,
        (0, 1, 2),
        (RUNNING_0, RUNNING_1),
    ),
    "scaled down: the surplus worker is left out (deleted)": (
        1,
        workers("Running", "Running"),
        1,
        False,
        (0,),
        (RUNNING_0,),
    ),
    "suspended: none (deleted)": (2, workers("Running", "Running"), 0, False, (), ()),
    "hold: none created, those that exist kept": (2, {1: worker(1)}, 2, True, (1,), (RUNNING_1,)),
    "hold: a surplus worker still goes": (1, workers("Running", "Running"), 1, True, (0,), (RUNNING_0,)),
}


@pytest.mark.parametrize(
    ("replicas", "pods", "n", "hold", "indices", "running"), RETURNED.values(), ids=RETURNED.keys()
)
def test_the_workers_a_response_returns(
    replicas: int,
    pods: dict[int, Any],
    n: int,
    hold: bool,
    indices: tuple[int, ...],
    running: tuple[str, ...],
) -> None:
    job = defaulted(mpijob().workers(replicas))
    seen = observed(None, pods)
    counts = count_workers(seen, n)
    decided = worker_pods.decide(job, seen, counts, hold=hold, cleaning=None, finished_before=False)
    assert decided == WorkerPods(counts, indices, running)


# id: (cleanPodPolicy acting now, the indices a finished job keeps of Succeeded, Running, Failed, Pending)
AFTER_FINISH = {
    "cleanPodPolicy not acting: all kept": (None, (0, 1, 2, 3)),
    "Running: the running and pending go": (CleanPodPolicy.RUNNING, (0, 2)),
    "All: every worker goes": (CleanPodPolicy.ALL, ()),
}


@pytest.mark.parametrize(("cleaning", "kept"), AFTER_FINISH.values(), ids=AFTER_FINISH.keys())
def test_what_a_finished_job_keeps(cleaning: CleanPodPolicy | None, kept: tuple[int, ...]) -> None:
    job = defaulted(mpijob().workers(4))
    seen = observed(None, workers("Succeeded", "Running", "Failed", "Pending"))
    counts = count_workers(seen, 0)
    decided = worker_pods.decide(job, seen, counts, hold=False, cleaning=cleaning, finished_before=True)
    assert decided.indices == kept


# id: (phases of workers 0..n-1 (None: missing), listed, the counts: active, succeeded, failed, evicted)
COUNTS: dict[str, tuple[list[Any], int, tuple[int, int, int, int]]] = {
    "all running": (["Running", "Running"], 2, (2, 0, 0, 0)),
    "one pending, one missing": (["Pending", None], 2, (0, 0, 0, 0)),
    "succeeded and failed": (["Succeeded", "Failed"], 2, (0, 1, 1, 0)),
    "an evicted worker is failed and evicted": ([{"reason": "Evicted"}, "Running"], 2, (1, 0, 1, 1)),
    "only the listed count": (["Running", "Failed"], 1, (1, 0, 0, 0)),
}


@pytest.mark.parametrize(("phases", "n", "want"), COUNTS.values(), ids=COUNTS.keys())
def test_the_worker_replica_status_counts(phases: list[Any], n: int, want: tuple[int, int, int, int]) -> None:
    pods = {}
    for index, phase in enumerate(phases):
        if isinstance(phase, dict):
            pods[index] = worker(index, "Failed", **phase)
        elif phase is not None:
            pods[index] = worker(index, phase)
    counts = count_workers(observed(None, pods), n)
    assert (counts.listed, counts.active, counts.succeeded, counts.failed, counts.evicted) == (n, *want)
