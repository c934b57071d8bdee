"""How long jobs wait and run (``app.core.timings``), driven through the fake Metacontroller: each phase is
measured once, when its transition is decided, from the status's own timestamps; then the histograms the
shell observes them into."""

from __future__ import annotations

import pytest

from app.core.sync import Outcome, SyncResult
from app.core.timings import Phase, Timing
from app.server.metrics import Metrics
from tests.support.builders import mpijob
from tests.support.metacontroller import FakeMetacontroller
from tests.unit.core.policies.test_failure_policy import job, run_attempt, started


def measured(mc: FakeMetacontroller) -> list[tuple[str, float, str]]:
    return [(t.phase.value, t.seconds, t.outcome) for t in mc.timings]


def test_a_queued_job_is_measured_queued_then_started_then_run() -> None:
    mc = FakeMetacontroller()
    mc.apply_mpijob(mpijob("pi").workers(2).suspend().build())
    mc.sync_until_steady()
    mc.advance(30)  # waits for admission
    mc.edit_spec("runPolicy.suspend", False)
    mc.sync_until_steady()
    mc.advance(12)  # Pods start
    mc.workers_running()
    mc.start_launcher_pod()
    mc.sync_until_steady()
    mc.advance(100)  # mpirun runs
    mc.finish_launcher("Complete")
    mc.sync_until_steady()
    assert measured(mc) == [("queued", 30.0, ""), ("startup", 12.0, ""), ("run", 100.0, "succeeded")]


def test_a_failed_job_is_measured_with_its_outcome() -> None:
    mc = started(None)  # created at t=0, Running at t=10
    mc.advance(45)
    mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    mc.sync_until_steady()
    assert measured(mc) == [("startup", 10.0, ""), ("run", 45.0, "failed")]


def test_a_job_that_never_ran_has_no_run_and_a_restart_is_no_start() -> None:
    never = FakeMetacontroller()
    never.apply_mpijob(job(None))
    never.sync_until_steady()
    never.advance(5)
    never.finish_launcher("Complete")
    never.sync_until_steady()
    assert measured(never) == []

    restarted = started({"maxRestarts": 2})
    restarted.advance(5)
    restarted.container_exits("pi-worker-1", 137, "OOMKilled")
    restarted.sync_until_steady()
    restarted.finish_deletions()
    restarted.sync_until_steady()
    run_attempt(restarted)  # the next attempt runs at t=25
    restarted.advance(20)
    restarted.finish_launcher("Complete")
    restarted.sync_until_steady()
    assert measured(restarted) == [("startup", 10.0, ""), ("run", 20.0, "succeeded")]


def test_a_resumed_job_starts_again_from_its_resume() -> None:
    mc = started(None)
    mc.advance(20)
    mc.edit_spec("runPolicy.suspend", True)
    mc.sync_until_steady()
    for pod in mc.launcher_pods():  # the garbage collector follows the deleted launcher Job
        mc.delete("Pod", pod["metadata"]["name"])
    mc.advance(60)
    mc.edit_spec("runPolicy.suspend", False)
    mc.sync_until_steady()
    mc.advance(7)
    mc.workers_running()
    mc.start_launcher_pod()
    mc.sync_until_steady()
    assert measured(mc) == [("startup", 10.0, ""), ("startup", 7.0, "")]  # never queued: it had started


def test_a_sync_whose_status_write_was_lost_measures_the_transition_again() -> None:
    """The double count docs/operations.md bounds: a transition decided twice is measured twice, the second
    time as late as the sync that decided it again."""
    mc = FakeMetacontroller()
    mc.apply_mpijob(job(None))
    mc.sync_until_steady()
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    mc.sync(lose_status=True)
    mc.advance(3)  # the next sync still sees the old status, three seconds later
    mc.sync_until_steady()
    assert measured(mc) == [("startup", 10.0, ""), ("startup", 13.0, "")]


@pytest.mark.parametrize(
    ("timing", "series"),
    [
        (Timing(Phase.QUEUED, 30.0), ("mpi_operator_hook_job_queued_seconds", {})),
        (Timing(Phase.STARTUP, 12.0), ("mpi_operator_hook_job_startup_seconds", {})),
        (Timing(Phase.RUN, 100.0, "failed"), ("mpi_operator_hook_job_run_seconds", {"outcome": "failed"})),
    ],
)
def test_each_timing_is_observed_in_its_histogram(timing: Timing, series: tuple[str, dict[str, str]]) -> None:
    metrics = Metrics()
    metrics.record_sync(SyncResult({}, [], Outcome.SYNCED, "ns", "pi", timings=(timing,)), 0.001)
    name, labels = series
    registry = metrics.registry
    assert registry.get_sample_value(f"{name}_count", labels) == 1
    assert registry.get_sample_value(f"{name}_sum", labels) == timing.seconds
    assert registry.get_sample_value(f"{name}_bucket", {**labels, "le": "30.0"}) == (timing.seconds <= 30)
