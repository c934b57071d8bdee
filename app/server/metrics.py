"""Prometheus collectors, in one place: upstream's job counters plus the hook's own request metrics.

The counters move when a sync reports the matching transition (``Event``); Metacontroller may repeat a
sync whose status write lagged, so treat them as upstream does its own: approximate, monotonic.

Cardinality stays bounded: ``mpi_operator_job_info`` has a series only for jobs this replica synced
within ``job_info_ttl`` seconds that still have a launcher and have not finished, and at most
``job_info_max_series`` of them (a flood of jobs drops the least recently synced first); every other label
set is a fixed small set (hook, outcome, error kind). With several hook replicas each reports the jobs it
served, so a job may appear on more than one replica: aggregate with ``max by (namespace, launcher)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.core.intents import Milestone
from app.core.sync import Outcome, SyncResult
from app.core.timings import Phase
from app.kube import names
from app.server.connection_policy import CLOSE_REASONS
from app.server.memo import ParentMemo

# 1 KiB .. 256 MiB by powers of four: a 1-worker sync is ~10 KB, a 4,096-worker one ~30 MB.
SIZE_BUCKETS = tuple(float(1024 * 4**i) for i in range(10))
ERROR_KINDS = ("unauthorized", "too_large", "busy", "read_timeout", "disconnected", "bad_request", "internal")
UNAUTHORIZED_REASONS = ("missing", "malformed", "wrong")
HOOKS = ("sync", "customize")
EVENT_RESULTS = ("posted", "duplicate", "failed", "dropped", "rate_limited")
RECORD_RESULTS = ("written", "pruned", "skipped", "failed")
# Why the server closed a connection before its request was answered (app/server/connections.py).
# A second to a week: a job starts in seconds to hours (a queue, a scale-up) and runs minutes to days.
JOB_BUCKETS = (
    1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400, 259200, 604800
)  # fmt: skip
RUN_OUTCOMES = ("succeeded", "failed")


class Metrics:
    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        job_info_ttl: float = 7200.0,
        job_info_max_series: int = 5000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry or CollectorRegistry()
        self.job_info_ttl = job_info_ttl
        self.job_info_max_series = job_info_max_series
        self._clock = clock
        # Least recently synced first (a sync moves its job to the end): the order the bound drops them in.
        self._job_seen: dict[tuple[str, str], float] = {}
        self._add_job_collectors()
        self._add_timing_collectors()
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
        self._add_background_collectors()
        self._add_transport_collectors()
        self._add_connection_collectors()
        # Label lookups cost more than a small sync's other metrics together: bind the fixed ones once.
        self._sync_seconds = self.sync_seconds.labels("sync")
        self._sync_outcomes = {o.value: self.requests.labels("sync", o.value) for o in Outcome}
        self.request_size = {hook: self.request_bytes.labels(hook) for hook in HOOKS}
        self.response_size = {hook: self.response_bytes.labels(hook) for hook in HOOKS}

    def _add_background_collectors(self) -> None:
        """What the shell does off the sync's path: posting Events, recording requests."""
        self.events = Counter(
            "mpi_operator_hook_events",
            "Kubernetes Events about MPIJobs by result: " + ", ".join(EVENT_RESULTS),
            ["result"],
            registry=self.registry,
        )
        self._events = {result: self.events.labels(result) for result in EVENT_RESULTS}
        self.recorded = Counter(
            "mpi_operator_hook_recorded_requests",
            f"Requests recorded to MPI_OPERATOR_RECORD_DIR by result: {', '.join(RECORD_RESULTS)}"
            " (pruned: an old record deleted to make room)",
            ["result"],
            registry=self.registry,
        )
        self._recorded = {result: self.recorded.labels(result) for result in RECORD_RESULTS}

    def _add_job_collectors(self) -> None:
        """What happens to MPIJobs: upstream's counters and ``mpi_operator_job_info``, and our restarts."""
        self.jobs_created = Counter(
            "mpi_operator_jobs_created", "Counts number of MPI jobs created", registry=self.registry
        )
        self.jobs_successful = Counter(
            "mpi_operator_jobs_successful", "Counts number of MPI jobs successful", registry=self.registry
        )
        self.jobs_failed = Counter(
            "mpi_operator_jobs_failed", "Counts number of MPI jobs failed", registry=self.registry
        )
        # Ours: the failure policy's restarts, by the Restarting condition's reason (a small fixed set:
        # WorkerOOMKilled, WorkerEvicted, WorkerDisrupted, WorkerDeadlineExceeded, WorkerError, Launcher...).
        self.job_restarts = Counter(
            "mpi_operator_hook_job_restarts",
            "MPIJob restarts by the failure policy, by reason",
            ["reason"],
            registry=self.registry,
        )
        self.job_info = Gauge(
            "mpi_operator_job_info",
            "Information about MPIJob",
            ["launcher", "namespace"],
            registry=self.registry,
        )
        self.job_info_dropped = Counter(
            "mpi_operator_hook_job_info_dropped_series",
            "mpi_operator_job_info series dropped for the bound on series (the least recently synced job)",
            registry=self.registry,
        )

    def _add_timing_collectors(self) -> None:
        """How long jobs wait and run (``app.core.timings``): no namespace, no job: a fixed set of series."""
        self.job_queued = Histogram(
            "mpi_operator_hook_job_queued_seconds",
            "Time from an MPIJob's creation to its first resume, for jobs created suspended (a queue)",
            buckets=JOB_BUCKETS,
            registry=self.registry,
        )
        self.job_startup = Histogram(
            "mpi_operator_hook_job_startup_seconds",
            "Time from an MPIJob's startTime (creation or resume) to Running",
            buckets=JOB_BUCKETS,
            registry=self.registry,
        )
        self.job_run = Histogram(
            "mpi_operator_hook_job_run_seconds",
            "Time from an MPIJob's Running to its completion, by outcome: " + ", ".join(RUN_OUTCOMES),
            ["outcome"],
            buckets=JOB_BUCKETS,
            registry=self.registry,
        )
        self._phases = {
            (Phase.QUEUED, ""): self.job_queued,
            (Phase.STARTUP, ""): self.job_startup,
            **{(Phase.RUN, outcome): self.job_run.labels(outcome) for outcome in RUN_OUTCOMES},
        }

    def _add_transport_collectors(self) -> None:
        """Sizes, refusals, the memory budget and the process: what the guard and the endpoints see."""
        ProcessCollector(registry=self.registry)  # process_resident_memory_bytes, against the memory limit
        self.request_bytes = Histogram(
            "mpi_operator_hook_request_size_bytes",
            "Size of hook request bodies that were read whole",
            ["hook"],
            buckets=SIZE_BUCKETS,
            registry=self.registry,
        )
        self.response_bytes = Histogram(
            "mpi_operator_hook_response_size_bytes",
            "Size of 200 response bodies",
            ["hook"],
            buckets=SIZE_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "mpi_operator_hook_errors",
            "Hook requests not answered 200, by kind: " + ", ".join(ERROR_KINDS),
            ["hook", "kind"],
            registry=self.registry,
        )
        self.in_flight_bytes = Gauge(
            "mpi_operator_hook_in_flight_request_bytes",
            "Request bytes admitted and not yet answered (the memory budget in use)",
            registry=self.registry,
        )
        self.unauthorized = Counter(
            "mpi_operator_hook_unauthorized_requests",
            "Hook requests refused 401, by reason: " + ", ".join(UNAUTHORIZED_REASONS),
            ["hook", "reason"],
            registry=self.registry,
        )
        for hook in HOOKS:
            for kind in ERROR_KINDS:
                self.errors.labels(hook, kind)  # every series exists from the start, at 0
            for reason in UNAUTHORIZED_REASONS:
                self.unauthorized.labels(hook, reason)

    def _add_connection_collectors(self) -> None:
        """Connections open and closed by a limit: what a client without the token can cost the hook."""
        self.open_connections = Gauge(
            "mpi_operator_hook_open_connections",
            "Connections open to the hook's port (capped by MPI_OPERATOR_MAX_CONNECTIONS)",
            registry=self.registry,
        )
        self.closed_connections = Counter(
            "mpi_operator_hook_connections_closed",
            "Connections closed by a limit before their request was answered, by reason: "
            + ", ".join(CLOSE_REASONS),
            ["reason"],
            registry=self.registry,
        )
        self._closed_by = {r: self.closed_connections.labels(r) for r in CLOSE_REASONS}

    def connection_closed(self, reason: str) -> None:
        self._closed_by[reason].inc()

    def watch_memo(self, memo: ParentMemo[Any]) -> None:
        """Export the parent memo's lookups and size: its hit rate says whether its bounds fit the jobs."""
        self.registry.register(_MemoCollector(memo))

    def event(self, result: str) -> None:
        """Count one Event: posted, duplicate (409: already posted), failed, dropped (queue full) or
        rate_limited (over a namespace's or the total budget)."""
        self._events[result].inc()

    def record(self, result: str) -> None:
        """Count one recorder outcome: written, pruned, skipped (queue full, too large) or failed (I/O)."""
        self._recorded[result].inc()

    def error(self, hook: str, kind: str) -> None:
        self.errors.labels(hook if hook in HOOKS else "other", kind).inc()

    def refused_caller(self, hook: str, reason: str) -> None:
        """Count one 401 by why the caller was refused (missing, malformed or wrong credential)."""
        self.unauthorized.labels(hook if hook in HOOKS else "other", reason).inc()

    def record_sync(self, result: SyncResult, seconds: float) -> None:
        """Count one answered sync: its outcome, the milestones its Events mark, the job's launcher."""
        self._sync_seconds.observe(seconds)
        self._sync_outcomes[result.outcome.value].inc()
        for event in result.events:
            if event.milestone == Milestone.CREATED:
                self.jobs_created.inc()
            elif event.milestone == Milestone.SUCCEEDED:
                self.jobs_successful.inc()
            elif event.milestone == Milestone.FAILED:
                self.jobs_failed.inc()
            elif event.milestone == Milestone.RESTARTED:
                self.job_restarts.labels(event.reason).inc()
        for timing in result.timings:
            self._phases[(timing.phase, timing.outcome)].observe(timing.seconds)
        self._record_job(result)

    def _record_job(self, result: SyncResult) -> None:
        """One series per live job: set while it has a launcher and is not finished, dropped after; past
        ``job_info_max_series`` the least recently synced job's series goes."""
        launcher = result.launcher_job
        key = (launcher or names.launcher_name(result.name), result.namespace)
        seen = self._job_seen.pop(key, None)
        if launcher is None or result.writes_finished:
            if seen is not None:
                self.job_info.remove(*key)
            return
        if seen is None:
            self.job_info.labels(launcher=launcher, namespace=result.namespace).set(1)
        self._job_seen[key] = self._clock()
        while len(self._job_seen) > self.job_info_max_series:
            oldest = next(iter(self._job_seen))
            del self._job_seen[oldest]
            self.job_info.remove(*oldest)
            self.job_info_dropped.inc()

    def expire(self) -> None:
        """Drop series of jobs not synced for ``job_info_ttl`` (deleted jobs are never synced again)."""
        oldest = self._clock() - self.job_info_ttl
        for key, seen in list(self._job_seen.items()):
            if seen < oldest:
                del self._job_seen[key]
                self.job_info.remove(*key)


class _MemoCollector(Collector):
    """Reads the memo's own counters at scrape time (no work per sync)."""

    def __init__(self, memo: ParentMemo[Any]) -> None:
        self._memo = memo

    def collect(self) -> Iterator[Metric]:
        lookups = CounterMetricFamily(
            "mpi_operator_hook_parent_memo_lookups",
            "Parent verdicts looked up in the memo, by result (hit, miss)",
            labels=["result"],
        )
        lookups.add_metric(["hit"], self._memo.hits)
        lookups.add_metric(["miss"], self._memo.misses)
        yield lookups
        yield GaugeMetricFamily(
            "mpi_operator_hook_parent_memo_entries", "Parent verdicts the memo holds", value=len(self._memo)
        )
