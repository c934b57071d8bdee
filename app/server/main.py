"""The FastAPI shell: decode, call the pure core, encode. Nothing here decides anything about a job.

``/sync`` and ``/customize`` always answer 200 for a well-formed Metacontroller request (an invalid
MPIJob is reported in its status) and 400 with a short message otherwise. Should the core ever raise,
the answer is a 503 without details: Metacontroller then changes nothing and retries with backoff.
Request bodies are never echoed or logged: they carry the SSH Secret. ``guard.BodyGuard`` reads each
hook body under its cap, timeout and memory budget (README, Operations) and calls ``sync_endpoint`` or
``customize_endpoint`` with it; FastAPI serves only the probes and ``/metrics``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import orjson
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app.core.customize import customize
from app.core.sync import SyncResult, Verdict, sync
from app.kube.keys import KeySource
from app.kube.request import RequestError, decode_request
from app.server import logs
from app.server.auth import Authenticator, CallerCredential, caller_credential
from app.server.budget import ByteBudget
from app.server.connection_policy import ConnectionLimits, ConnectionPolicy
from app.server.events import Bounds, EventRecorder
from app.server.guard import ASGIApp, Authenticate, BodyGuard, Endpoint, Limits, Receive, Scope, Send
from app.server.memo import ParentMemo, remember
from app.server.metrics import Metrics
from app.server.ratelimit import Budget, EventBudget
from app.server.record import RequestRecorder
from app.settings import Settings, load_settings

log = logging.getLogger("mpi_operator_hook")

INTERNAL_ERROR = "internal error in the {hook} hook; see the hook's logs"
# Smaller bodies (up to ~140 workers) are answered on the event loop, about a millisecond of work at most:
# a thread hop would cost a third of it. Larger ones run in a worker thread so /healthz stays responsive.
INLINE_BODY_BYTES = 1024 * 1024

router = APIRouter()
T = TypeVar("T")


@dataclass(frozen=True)
class Hook:
    """What the handlers share: settings, key material, metrics, the parents' verdicts, the caller token
    (None: any caller, on purpose) and, when Events are on, their recorder (one per app)."""

    settings: Settings
    keys: KeySource
    metrics: Metrics
    memo: ParentMemo[Verdict] = field(default_factory=ParentMemo)
    events: EventRecorder | None = None
    recorder: RequestRecorder | None = None
    credential: CallerCredential | None = None

    def answer_sync(self, body: bytes) -> tuple[SyncResult, bytes]:
        request = decode_request(body)
        now = datetime.now(UTC)
        config = self.settings.sync_config
        result = sync(request, now=now, keys=self.keys, config=config, judge=remember(self.memo))
        return result, orjson.dumps(result.response())


@dataclass(frozen=True)
class HookApp:
    """The ASGI app uvicorn serves. ``BodyGuard`` stands in front of everything and answers the hooks
    itself (behind FastAPI's middleware stack a small sync cost a third more); FastAPI serves only the
    probes and ``/metrics``."""

    hook: Hook
    asgi: ASGIApp
    # The connection limits of the server that serves this app (``connections.GuardedProtocol`` finds it).
    connection_policy: ConnectionPolicy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.asgi(scope, receive, send)


def create_app(settings: Settings | None = None, keys: KeySource | None = None) -> HookApp:
    """The one way the hook's app is built (``serve``, and ``app.server.main:app`` for uvicorn's workers).
    ``SettingsError`` for a setting or file that cannot be used, before anything is logged or started."""
    settings = settings or load_settings()
    credential = caller_credential(settings)
    if not logging.getLogger().handlers:
        logs.configure(settings.log_level, settings.log_format)
    log.setLevel(settings.log_level)
    _announce(settings, credential)
    if settings.gang_scheduling:
        logs.event(
            log,
            logging.INFO,
            "gang scheduling: one PodGroup per MPIJob (the overlay declares the child)",
            value=settings.gang_scheduling,
        )
    metrics = Metrics(
        job_info_ttl=settings.job_info_ttl_seconds, job_info_max_series=settings.job_info_max_series
    )
    hook = Hook(
        settings,
        keys or settings.keys,
        metrics,
        events=_recorder(settings, metrics),
        recorder=_request_recorder(settings, metrics),
        credential=credential,
    )
    metrics.watch_memo(hook.memo)
    web = FastAPI(
        title="mpi-operator-hook", docs_url=None, redoc_url=None, openapi_url=None, lifespan=_lifespan
    )
    web.state.hook = hook
    web.include_router(router)
    # One memory budget for the bodies the guard reads and the requests a client pipelines.
    budget = ByteBudget(settings.memory_budget_bytes, metrics.in_flight_bytes.set)
    return HookApp(hook, _guard(web, hook, budget), _connection_policy(settings, metrics, budget))


def _connection_policy(settings: Settings, metrics: Metrics, budget: ByteBudget) -> ConnectionPolicy:
    return ConnectionPolicy(
        ConnectionLimits.of(settings),
        on_refuse=metrics.connection_closed,
        on_open=metrics.open_connections.set,
        budget=budget,
    )


def _guard(web: FastAPI, hook: Hook, budget: ByteBudget) -> BodyGuard:
    """The body guard in front of everything: who may call, the limits, and the hooks it answers itself."""
    settings, metrics = hook.settings, hook.metrics
    limits = Limits(
        max_body_bytes=settings.max_body_bytes,
        admission_wait_seconds=settings.admission_wait_seconds,
        read_timeout_seconds=settings.read_timeout_seconds,
    )
    return BodyGuard(
        web,
        limits=limits,
        endpoints=_endpoints(hook),
        budget=budget,
        on_reject=metrics.error,
        authenticate=_authenticator(hook),
    )


def _endpoints(hook: Hook) -> dict[str, Endpoint]:
    """The hooks the guard answers itself, recorded for ``mpijob replay`` when recording is on."""
    endpoints: dict[str, Endpoint] = {
        "/sync": functools.partial(sync_endpoint, hook),
        "/customize": functools.partial(customize_endpoint, hook),
    }
    if hook.recorder is not None:
        endpoints = {path: hook.recorder.wrap(path.lstrip("/"), e) for path, e in endpoints.items()}
    return endpoints


def _announce(settings: Settings, credential: CallerCredential | None) -> None:
    """Who may call: the token's file, or anyone, on purpose only, and said loudly."""
    if credential is None:
        log.warning(
            "CALLER AUTHENTICATION IS OFF (MPI_OPERATOR_CALLER_AUTH=off): anyone who can reach this port can"
            " call /sync and /customize and make the hook post Events. For local use only."
        )
        return
    logs.event(log, logging.INFO, "callers must send the token of", file=str(settings.caller_token_file))


def _authenticator(hook: Hook) -> Authenticate | None:
    """The guard's check of each caller against the token, counting each refusal by its reason."""
    if hook.credential is None:
        return None
    authenticator, metrics = Authenticator(hook.credential), hook.metrics

    def refusal(name: str, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        why = authenticator.refusal(headers)
        if why is not None:
            metrics.refused_caller(name, why)
        return why

    return refusal


def _recorder(settings: Settings, metrics: Metrics) -> EventRecorder | None:
    access = settings.events_access()
    if access is None:
        logs.event(log, logging.INFO, "events: off (logged only)", setting=settings.events)
        return None
    logs.event(log, logging.INFO, "events: posted to the API server", server=access.server)
    budget = EventBudget(
        Budget(settings.events_namespace_burst, settings.events_namespace_per_second),
        Budget(settings.events_total_burst, settings.events_total_per_second),
    )
    return EventRecorder(access, metrics.event, bounds=Bounds(settings.events_queue_size, budget))


def _request_recorder(settings: Settings, metrics: Metrics) -> RequestRecorder | None:
    if settings.record_dir is None:
        return None
    logs.event(
        log,
        logging.INFO,
        "recording requests (redacted)",
        directory=str(settings.record_dir),
        max_requests=settings.record_max_requests,
        max_bytes=settings.record_max_bytes,
    )
    return RequestRecorder(
        settings.record_dir,
        max_requests=settings.record_max_requests,
        max_bytes=settings.record_max_bytes,
        settings=settings.answer_settings(),
        count=metrics.record,
    )


@asynccontextmanager
async def _lifespan(web: FastAPI) -> AsyncIterator[None]:
    """Start the Event recorder's task and the caller token's watch with the server; on shutdown post what
    is queued and write what is left to record, briefly."""
    hook: Hook = web.state.hook
    if hook.events is not None:
        await hook.events.start()
    watch = asyncio.create_task(hook.credential.watch()) if hook.credential is not None else None
    try:
        yield
    finally:
        if watch is not None:
            watch.cancel()
        if hook.events is not None:
            await hook.events.stop()
        if hook.recorder is not None:
            await run_in_threadpool(hook.recorder.stop)


def _hook(request: Request) -> Hook:
    hook: Hook = request.app.state.hook
    return hook


async def sync_endpoint(hook: Hook, body: bytes) -> tuple[int, bytes]:
    """``POST /sync`` (called by ``BodyGuard`` with the body it read): status code and JSON payload."""
    started = time.perf_counter()
    answer = await _answer(hook, "sync", hook.answer_sync, body)
    if not isinstance(answer, tuple):
        return answer.status, answer.payload
    result, payload = answer
    elapsed = time.perf_counter() - started
    hook.metrics.record_sync(result, elapsed)
    hook.metrics.response_size["sync"].observe(len(payload))
    for event in result.events:
        logs.event(
            log,
            logging.INFO,
            "event",
            namespace=result.namespace,
            job=result.name,
            type=event.type,
            reason=event.reason,
            message=event.message,
        )
    if hook.events is not None and result.events:
        hook.events.record(result, datetime.now(UTC))  # queued only: posting never delays the answer
    logs.event(
        log,
        logging.DEBUG,
        "sync",
        namespace=result.namespace,
        job=result.name,
        children=len(result.children),
        seconds=round(elapsed, 4),
    )
    return 200, payload


async def customize_endpoint(hook: Hook, body: bytes) -> tuple[int, bytes]:
    """``POST /customize``: which related objects (the launcher's Pods, ...) the next sync needs."""
    config, selector = hook.settings.sync_config, hook.settings.node_selector
    answer = await _answer(hook, "customize", lambda b: orjson.dumps(customize(b, config, selector)), body)
    if not isinstance(answer, bytes):
        return answer.status, answer.payload
    hook.metrics.requests.labels("customize", "ok").inc()
    hook.metrics.response_size["customize"].observe(len(answer))
    return 200, answer


@dataclass(frozen=True)
class Failure:
    status: int
    payload: bytes


async def _answer(hook: Hook, name: str, handle: Callable[[bytes], T], body: bytes) -> T | Failure:
    """Run ``handle`` (inline when small, else in a thread); a bad request is a 4xx, a bug a bare 503."""
    metrics = hook.metrics
    metrics.request_size[name].observe(len(body))
    try:
        if len(body) < INLINE_BODY_BYTES:
            return handle(body)
        return await run_in_threadpool(handle, body)
    except RequestError as err:
        metrics.requests.labels(name, "bad_request").inc()
        metrics.error(name, "bad_request")
        logs.refused(log, name, 400, str(err))
        return Failure(400, orjson.dumps({"error": str(err)}))
    except Exception:
        # A bug of ours: Metacontroller changes nothing on a non-200 and retries with backoff.
        log.exception("%s failed unexpectedly (request body not logged)", name)
        metrics.requests.labels(name, "error").inc()
        metrics.error(name, "internal")
        return Failure(503, orjson.dumps({"error": INTERNAL_ERROR.format(hook=name)}))


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz() -> dict[str, str]:
    return {"status": "ready"}


@router.get("/metrics")
def metrics_endpoint(request: Request) -> Response:
    metrics = _hook(request).metrics
    metrics.expire()
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


# A 4,096-worker sync allocates ~200,000 container objects and frees them all, none in a reference cycle.
# At CPython's default threshold (700) the collector runs some 300 times per such sync, ~7% of its
# time, for nothing; at 50,000 a few times. Start-up objects are frozen out of every collection.
GC_THRESHOLDS = (50_000, 20, 20)


def tune_gc() -> None:
    """The serving process's collector settings (``mpijob serve`` and ``app.server.main:app``)."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def __getattr__(name: str) -> HookApp:
    """``app.server.main:app`` for uvicorn, built on first use: importing this module reads no settings."""
    if name == "app":
        application = create_app()
        tune_gc()
        globals()["app"] = application
        return application
    raise AttributeError(name)
