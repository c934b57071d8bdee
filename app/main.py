"""The FastAPI shell: decode, call the pure core, encode. Nothing here decides anything about a job.

``/sync`` and ``/customize`` always answer 200 for a well-formed Metacontroller request (an invalid
MPIJob is reported in its status) and 400 with a short message otherwise. Should the core ever raise,
the answer is a 503 without details: Metacontroller then changes nothing and retries with backoff.
Request bodies are never echoed or logged: they carry the SSH Secret.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app.core.customize import customize
from app.core.keys import KeySource
from app.core.request import RequestError, decode_request
from app.core.sync import SyncResult, sync
from app.metrics import Metrics
from app.settings import Settings, load_settings

log = logging.getLogger("mpi_operator_hook")

MAX_BODY_BYTES = 512 * 1024 * 1024


def create_app(settings: Settings | None = None, keys: KeySource | None = None) -> FastAPI:
    settings = settings or load_settings()
    keys = keys or settings.key_source()
    if not logging.getLogger().handlers:
        logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    log.setLevel(settings.log_level)
    if settings.gang_scheduling:
        log.warning(
            "MPI_OPERATOR_GANG_SCHEDULING=%s is accepted but not acted on yet: no PodGroups are created",
            settings.gang_scheduling,
        )
    metrics = Metrics()
    app = FastAPI(title="mpi-operator-hook", docs_url=None, redoc_url=None, openapi_url=None)

    def answer_sync(body: bytes) -> tuple[SyncResult, bytes]:
        request = decode_request(body)
        result = sync(request, now=datetime.now(UTC), keys=keys, settings=settings)
        return result, orjson.dumps(result.response())

    @app.post("/sync")
    async def sync_hook(request: Request) -> Response:
        started = time.perf_counter()
        if _too_large(request):
            return _bad_request("request body too large", 413)
        body = await request.body()
        try:
            result, payload = await run_in_threadpool(answer_sync, body)
        except RequestError as err:
            metrics.requests.labels("sync", "bad_request").inc()
            return _bad_request(str(err))
        except Exception:
            # A bug of ours: Metacontroller changes nothing on a non-200 and retries with backoff.
            log.exception("sync failed unexpectedly (request body not logged)")
            metrics.requests.labels("sync", "error").inc()
            return JSONResponse({"error": "internal error in the sync hook; see the hook's logs"}, 503)
        elapsed = time.perf_counter() - started
        metrics.sync_seconds.labels("sync").observe(elapsed)
        outcome = "invalid_job" if any(e.reason == "ValidationError" for e in result.events) else "ok"
        metrics.requests.labels("sync", outcome).inc()
        launcher = next((c["metadata"]["name"] for c in result.children if c.get("kind") == "Job"), None)
        metrics.record_events([e.reason for e in result.events], launcher, result.job.partition("/")[0])
        for event in result.events:
            log.info(
                "event job=%s type=%s reason=%s message=%s",
                result.job,
                event.type,
                event.reason,
                event.message,
            )
        log.debug("sync job=%s children=%d seconds=%.4f", result.job, len(result.children), elapsed)
        return Response(payload, media_type="application/json")

    @app.post("/customize")
    async def customize_hook(request: Request) -> Response:
        if _too_large(request):
            return _bad_request("request body too large", 413)
        body = await request.body()
        try:
            payload = orjson.dumps(customize(body))
        except RequestError as err:
            metrics.requests.labels("customize", "bad_request").inc()
            return _bad_request(str(err))
        metrics.requests.labels("customize", "ok").inc()
        return Response(payload, media_type="application/json")

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> dict[str, str]:
        return {"status": "ready"}

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def _bad_request(message: str, status_code: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status_code)


def _too_large(request: Request) -> bool:
    length = request.headers.get("content-length", "")
    return length.isdigit() and int(length) > MAX_BODY_BYTES


def __getattr__(name: str) -> FastAPI:
    """``app.main:app`` for uvicorn, built on first use so importing this module never reads settings."""
    if name == "app":
        application = create_app()
        globals()["app"] = application
        return application
    raise AttributeError(name)
