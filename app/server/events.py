"""Kubernetes Events about MPIJobs, posted by the shell, best effort: ``kubectl describe mpijob`` shows them.

The pure ``sync`` says which Events a sync's transitions announce (``SyncResult.events``); ``sync_endpoint``
hands them to ``EventRecorder.record``, which only puts them on a bounded queue and returns (full, or over the
namespace's or the total rate budget of ``app/server/ratelimit.py``: the Event is dropped and counted), so
posting never delays a sync and no flood of syncs becomes a flood of Events. A background task, started and
stopped with the app, posts each as a core/v1 Event about the MPIJob (``POST /api/v1/namespaces/{ns}/events``)
from upstream's recorder component, ``mpi-job-controller``.

One Event per transition, never aggregated (``count`` stays 1): its name is the job's name and a hash of the
job's uid and the Event's key, which is the same for every sync that decides the same transition. A repeated
sync, or another replica posting the same transition, gets 409 AlreadyExists: counted as a duplicate, not an
error, never retried. The POST goes through ``app/cluster/posts.py``: 5xx answers and connection errors are
retried a few times with backoff, and the token file is read again when it changes (bound tokens rotate:
``app.cluster.tokens.TokenFile``); anything else (403: RBAC, 404: the namespace is gone) is counted as
failed and logged at warning with the Event's reason, never its message or the answer's body.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
import orjson

from app.cluster.connection import Connection
from app.cluster.posts import Poster, Posting
from app.core.intents import Event
from app.core.messages import truncate
from app.core.sync import SyncResult
from app.kube.in_cluster import EventsAccess
from app.server import logs
from app.server.ratelimit import EventBudget

log = logging.getLogger("mpi_operator_hook.events")

# Upstream's recorder: NewRecorder(scheme, EventSource{Component: controllerAgentName}), and
# controllerAgentName = "mpi-job-controller" (v2/pkg/controller/mpi_job_controller.go).
COMPONENT = "mpi-job-controller"
INVOLVED_API_VERSION = "kubeflow.org/v2beta1"
INVOLVED_KIND = "MPIJob"
MAX_NAME_CHARS = 253
HASH_CHARS = 16
MAX_INSTANCE_CHARS = 128
DRAIN_SECONDS = 5.0
LIMITED_LOG_SECONDS = 60.0
_POSTING = Posting()


@dataclass(frozen=True, slots=True)
class Pending:
    """One Event waiting to be posted: about which job, and when its sync decided it."""

    namespace: str
    job: str
    uid: str
    event: Event
    at: datetime


def event_name(namespace: str, job: str, uid: str, key: str) -> str:
    """``<job>.<16 hex digits>``: the same for the same transition of the same job, whoever posts it; a valid
    DNS subdomain of at most 253 characters (a job's name is one)."""
    identity = uid or f"{namespace}/{job}"
    digest = hashlib.sha256(f"{identity}\n{key}".encode()).hexdigest()[:HASH_CHARS]
    prefix = job[: MAX_NAME_CHARS - 1 - HASH_CHARS].rstrip(".-")
    return f"{prefix}.{digest}" if prefix else digest


def _timestamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def event_body(item: Pending, instance: str) -> dict[str, Any]:
    """The core/v1 Event, as client-go's recorder writes one: first and last timestamps, count 1, source
    and reporting component (no ``eventTime``, which would make ``action`` required)."""
    event = item.event
    key = event.key or f"{event.type}/{event.reason}/{event.message}"
    involved = {
        "apiVersion": INVOLVED_API_VERSION,
        "kind": INVOLVED_KIND,
        "namespace": item.namespace,
        "name": item.job,
    }
    if item.uid:
        involved["uid"] = item.uid
    stamp = _timestamp(item.at)
    name = event_name(item.namespace, item.job, item.uid, key)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": item.namespace},
        "involvedObject": involved,
        "type": event.type,
        "reason": event.reason,
        "message": truncate(event.message),
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
    }


def _instance() -> str:
    return socket.gethostname()[:MAX_INSTANCE_CHARS] or COMPONENT


@dataclass(frozen=True)
class Bounds:
    """How many Events may wait to be posted, and the rate budget they are admitted by (None: no budget)."""

    queue_size: int = 1000
    budget: EventBudget | None = None


class EventRecorder:
    """Takes Events from syncs without waiting and posts them in the background (``start``/``stop``)."""

    def __init__(
        self,
        access: EventsAccess,
        count: Callable[[str], None],
        *,
        bounds: Bounds = Bounds(),
        instance: str = "",
        transport: httpx.AsyncBaseTransport | None = None,
        posting: Posting = _POSTING,
    ) -> None:
        self.access = access
        self._count = count
        self._queue: asyncio.Queue[Pending] = asyncio.Queue(maxsize=bounds.queue_size)
        self._instance = instance or _instance()
        self._posting, self._transport = posting, transport
        self._poster: Poster | None = None
        self._task: asyncio.Task[None] | None = None
        self._dropping = False
        self._budget = bounds.budget
        self._limited_log = logs.Throttle(LIMITED_LOG_SECONDS)

    def record(self, result: SyncResult, at: datetime) -> None:
        """Queue the result's Events; never waits. Over the rate budget or with the queue full they are
        dropped (counted; logged once per run of drops, or once per minute when rate-limited)."""
        if not result.namespace or not result.name:
            return
        for event in result.events:
            if self._budget is not None and not self._budget.admit(result.namespace):
                self._count("rate_limited")
                held = self._limited_log.admit()
                if held is not None:
                    fields = {"namespace": result.namespace, "reason": event.reason, "since_last": held}
                    logs.event(log, logging.WARNING, "events over the rate budget: dropping", **fields)
                continue
            try:
                self._queue.put_nowait(Pending(result.namespace, result.name, result.uid, event, at))
            except asyncio.QueueFull:
                self._count("dropped")
                if not self._dropping:
                    self._dropping = True
                    logs.event(log, logging.WARNING, "event queue full: dropping events", reason=event.reason)
            else:
                self._dropping = False

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def start(self) -> None:
        self._poster = Poster(_connection(self.access), self._posting, self._transport)
        self._poster.start()
        self._task = asyncio.create_task(self._run(), name="event-recorder")

    async def drain(self) -> None:
        """Wait until every queued Event has been posted or given up on."""
        await self._queue.join()

    async def stop(self, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Post what is queued for up to ``drain_seconds``, then stop; whatever is left is lost."""
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.drain(), drain_seconds)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._poster is not None:
            await self._poster.close()
            self._poster = None

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                self._count(await self._post(item))
            except Exception:  # a bug of ours: the next Event still gets its turn
                log.exception("posting an event failed unexpectedly")
                self._count("failed")
            finally:
                self._queue.task_done()

    async def _post(self, item: Pending) -> str:
        """Post one Event (retried by the poster); its result for the metric."""
        assert self._poster is not None
        body = orjson.dumps(event_body(item, self._instance))
        posted = await self._poster.post(f"/api/v1/namespaces/{quote(item.namespace, safe='')}/events", body)
        if posted.status is not None and posted.status < 300:
            return "posted"
        if posted.status == 409:
            return "duplicate"
        return self._failed(item, posted.problem)

    def _failed(self, item: Pending, problem: str) -> str:
        logs.event(
            log,
            logging.WARNING,
            "event not posted",
            namespace=item.namespace,
            job=item.job,
            reason=item.event.reason,
            problem=problem,
        )
        return "failed"


def _connection(access: EventsAccess) -> Connection:
    """The hook's own connection: the service account's token file, the cluster's CA (or the system's)."""
    ca = access.ca_file
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(ca)) if ca else True
    return Connection(access.server, "in-cluster", "", verify, token_file=access.token_file)
