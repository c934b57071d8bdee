"""The FastAPI shell: decode, call the pure core, encode. Nothing here decides anything about a job.

``/sync`` and ``/customize`` always answer 200 for a well-formed Metacontroller request (an invalid
MPIJob is reported in its status) and 400 with a short message otherwise. Should the core ever raise,
the answer is a 503 without details: Metacontroller then changes nothing and retries with backoff.
Request bodies are never echoed or logged: they carry the SSH Secret.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

import orjson
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app.core.customize import customize
from app.core.sync import SyncResult, sync
from app.kube.keys import KeySource
from app.kube.request import RequestError, decode_request
from app.metrics import Metrics
from app.settings import Settings, load_settings

log = logging.getLogger("mpi_operator_hook")

MAX_BODY_BYTES = 512 * 1024 * 1024
INTERNAL_ERROR = "internal error in the {hook} hook; see the hook's logs"

router = APIRouter()
T = TypeVar("T")


@dataclass(frozen=True)
class Hook:
    """What the handlers share: settings, key material and metrics (one per app, in ``app.state``)."""

    settings: Settings
    keys: KeySource
    metrics: Metrics

    def answer_sync(self, body: bytes) -> tuple[SyncResult, bytes]:
        request = decode_request(body)
        now = datetime.now(UTC)
        result = sync(
            request,
            now=now,
            keys=self.keys,
            cluster_domain=self.settings.cluster_domain,
            annotation_budget=self.settings.annotation_budget,
        )
        return result, orjson.dumps(result.response())


def create_app(settings: Settings | None = None, keys: KeySource | None = None) -> FastAPI:
    settings = settings or load_settings()
    if not logging.getLogger().handlers:
        logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    log.setLevel(settings.log_level)
    if settings.gang_scheduling:
        log.warning(
            "MPI_OPERATOR_GANG_SCHEDULING=%s is accepted but not acted on yet: no PodGroups are created",
            settings.gang_scheduling,
        )
    app = FastAPI(title="mpi-operator-hook", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.hook = Hook(settings, keys or settings.key_source(), Metrics())
    app.include_router(router)
    return app


def _hook(request: Request) -> Hook:
    hook: Hook = request.app.state.hook
    return hook


@router.post("/sync")
async def sync_hook(request: Request) -> Response:
    hook = _hook(request)
    started = time.perf_counter()
    answer = await _answer(request, "sync", lambda body: hook.answer_sync(body))
    if isinstance(answer, Response):
        return answer
    result, payload = answer
    elapsed = time.perf_counter() - started
    hook.metrics.record_sync(result, elapsed)
    who = f"{result.namespace}/{result.name}"
    for event in result.events:
        log.info("event job=%s type=%s reason=%s message=%s", who, event.type, event.reason, event.message)
    log.debug("sync job=%s children=%d seconds=%.4f", who, len(result.children), elapsed)
    return Response(payload, media_type="application/json")


@router.post("/customize")
async def customize_hook(request: Request) -> Response:
    hook = _hook(request)
    answer = await _answer(request, "customize", lambda body: orjson.dumps(customize(body)))
    if isinstance(answer, Response):
        return answer
    hook.metrics.requests.labels("customize", "ok").inc()
    return Response(answer, media_type="application/json")


async def _answer(request: Request, name: str, handle: Callable[[bytes], T]) -> T | Response:
    """Read the body and run ``handle`` off the event loop; a bad request is a 4xx, a bug a bare 503."""
    metrics = _hook(request).metrics
    if _too_large(request):
        return _error("request body too large", 413)
    body = await request.body()
    try:
        return await run_in_threadpool(handle, body)
    except RequestError as err:
        metrics.requests.labels(name, "bad_request").inc()
        return _error(str(err), 400)
    except Exception:
        # A bug of ours: Metacontroller changes nothing on a non-200 and retries with backoff.
        log.exception("%s failed unexpectedly (request body not logged)", name)
        metrics.requests.labels(name, "error").inc()
        return _error(INTERNAL_ERROR.format(hook=name), 503)


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz() -> dict[str, str]:
    return {"status": "ready"}


@router.get("/metrics")
def metrics_endpoint(request: Request) -> Response:
    return Response(generate_latest(_hook(request).metrics.registry), media_type=CONTENT_TYPE_LATEST)


def _error(message: str, status_code: int) -> JSONResponse:
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
