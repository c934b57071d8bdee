"""``launcher_creation``: upstream's ``launcherCreationPolicy`` (``AtStartup`` with the workers,
``WaitForWorkersReady`` once every listed worker is Ready), our suspended job without a launcher Job and our
hold while the job finishes or restarts (docs/compatibility.md), and #608's pending launcher."""

from __future__ import annotations

from typing import Any

import pytest

from app.core.policies import launcher_creation
from tests.support.builders import MPIJobBuilder, mpijob
from tests.support.observed import defaulted, launcher_job, observed, worker

AT_STARTUP, WAIT = mpijob(), mpijob().wait_for_workers()
READY = {0: worker(0, ready=True), 1: worker(1, ready=True)}
HALF_READY = {0: worker(0, ready=True), 1: worker(1)}
ONE_MISSING = {0: worker(0, ready=True)}
RUNNING, DONE = launcher_job(ready=1), launcher_job(complete=True)

# id: (job, launcher Job, workers, suspended, hold, the response has the launcher Job)
CASES: dict[str, tuple[MPIJobBuilder, Any, dict[int, Any], bool, bool, bool]] = {
    "AtStartup: created with the workers": (AT_STARTUP, None, {}, False, False, True),
    "WaitForWorkersReady: not before every worker is Ready": (WAIT, None, HALF_READY, False, False, False),
    "WaitForWorkersReady: not while a worker is missing": (WAIT, None, ONE_MISSING, False, False, False),
    "WaitForWorkersReady: once every worker is Ready": (WAIT, None, READY, False, False, True),
    "an existing launcher Job is kept": (WAIT, RUNNING, HALF_READY, False, False, True),
    "suspended: none, an existing one is deleted": (AT_STARTUP, RUNNING, READY, True, False, False),
    "hold: none created": (AT_STARTUP, None, READY, False, True, False),
    "hold: an existing one is kept": (AT_STARTUP, RUNNING, READY, False, True, True),
}


@pytest.mark.parametrize(
    ("builder", "launcher", "pods", "suspended", "hold", "keep"), CASES.values(), ids=CASES.keys()
)
def test_whether_the_response_has_the_launcher_job(
    builder: MPIJobBuilder, launcher: Any, pods: dict[int, Any], suspended: bool, hold: bool, keep: bool
) -> None:
    seen = observed(launcher, pods)
    decided = launcher_creation.decide(
        defaulted(builder), seen, 2, finished_before=False, suspended=suspended, hold=hold
    )
    assert decided.keep == keep
    # Upstream #608: a PodGroup counts no launcher Job that neither exists nor is created now.
    assert decided.pending == (not keep)
    assert decided.state == seen.launcher_job_state


# id: (launcher Job of a finished job, kept)
FINISHED = {
    "done: kept for its logs until its TTL": (DONE, True),
    "still running (an eviction ended the job): deleted": (RUNNING, False),
    "gone (its TTL): not created again": (None, False),
}


@pytest.mark.parametrize(("launcher", "keep"), FINISHED.values(), ids=FINISHED.keys())
def test_a_finished_job_never_creates_a_launcher_job(launcher: Any, keep: bool) -> None:
    decided = launcher_creation.decide(
        defaulted(), observed(launcher, READY), 0, finished_before=True, suspended=False, hold=False
    )
    assert (decided.keep, decided.pending) == (keep, False)
