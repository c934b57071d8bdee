"""Time to start and time to run on the real node: after a job finishes, the hook's histograms hold the
values its status's own timestamps give (measured by whichever replica decided each transition)."""

from __future__ import annotations

from datetime import datetime

from tests.e2e import jobs
from tests.node import runs
from tests.node.conftest import RealNode
from tests.node.hookpods import hook_metric

STARTUP = "mpi_operator_hook_job_startup_seconds"
RUN = 'mpi_operator_hook_job_run_seconds_{}{{outcome="succeeded"}}'


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _observed(real_node: RealNode) -> dict[str, float]:
    kube = real_node.kube
    return {
        "startup_count": hook_metric(kube, f"{STARTUP}_count"),
        "startup_sum": hook_metric(kube, f"{STARTUP}_sum"),
        "run_count": hook_metric(kube, RUN.format("count")),
        "run_sum": hook_metric(kube, RUN.format("sum")),
    }


def test_a_finished_job_is_in_the_startup_and_run_histograms(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    before = _observed(real_node)
    runs.apply(kube, ns, runs.example("pi.yaml", "pi", cpu="300m"))
    status = runs.succeeded(kube, ns, "pi")["status"]
    running = jobs.conditions({"status": status})["Running"]["lastTransitionTime"]
    expected = {
        "startup": _seconds(status["startTime"], running),
        "run": _seconds(running, status["completionTime"]),
    }
    after = _observed(real_node)
    for phase, value in expected.items():
        count = after[f"{phase}_count"] - before[f"{phase}_count"]
        excess = after[f"{phase}_sum"] - before[f"{phase}_sum"] - value * count
        assert count >= 1, f"{phase}: not observed"
        # A transition decided again is measured again, as late as the sync that did it: never earlier.
        assert 0 <= excess <= 2 * (count - 1), (phase, value, count, excess)
