"""Prometheus collectors, in one place: upstream's job counters plus the hook's own request metrics.

The counters move when a sync reports the matching transition (``Event``); Metacontroller may repeat a
sync whose status write lagged, so treat them as upstream does its own: approximate, monotonic.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app.core.status import Milestone
from app.core.sync import SyncResult


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.jobs_created = Counter(
            "mpi_operator_jobs_created", "Counts number of MPI jobs created", registry=self.registry
        )
        self.jobs_successful = Counter(
            "mpi_operator_jobs_successful", "Counts number of MPI jobs successful", registry=self.registry
        )
        self.jobs_failed = Counter(
            "mpi_operator_jobs_failed", "Counts number of MPI jobs failed", registry=self.registry
        )
        self.job_info = Gauge(
            "mpi_operator_job_info",
            "Information about MPIJob",
            ["launcher", "namespace"],
            registry=self.registry,
        )
        self.sync_seconds = Histogram(
            "mpi_operator_hook_sync_duration_seconds",
            "Time to answer one hook request, decode to encode",
            ["hook"],
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.requests = Counter(
            "mpi_operator_hook_requests",
            "Hook requests by hook and outcome (ok, invalid_job, left_alone, bad_request, error)",
            ["hook", "outcome"],
            registry=self.registry,
        )

    def record_sync(self, result: SyncResult, seconds: float) -> None:
        """Count one answered sync: its outcome, the milestones its Events mark, the job's launcher."""
        self.sync_seconds.labels("sync").observe(seconds)
        self.requests.labels("sync", result.outcome.value).inc()
        for event in result.events:
            if event.milestone == Milestone.CREATED:
                self.jobs_created.inc()
            elif event.milestone == Milestone.SUCCEEDED:
                self.jobs_successful.inc()
            elif event.milestone == Milestone.FAILED:
                self.jobs_failed.inc()
        launcher = result.launcher
        if launcher is not None:
            self.job_info.labels(launcher=launcher, namespace=result.namespace).set(1)
