"""Starting the hook's server: the one place for uvicorn's production options, the open-files limit, the
metrics port and the run. ``mpijob serve`` parses its flags and calls ``serve``; bench/ starts its servers
with ``uvicorn_options``.

The app is always built by ``main.create_app``: here, once, before uvicorn starts (a setting or file that
cannot be used is a ``SettingsError`` before anything listens), and served as that object. With
``--workers`` above 1 uvicorn needs an import string: each worker process builds its own through
``app.server.main:app``, which calls ``create_app`` too.
"""

from __future__ import annotations

import resource
from typing import Any

import uvicorn

from app.server import logs
from app.server.connections import GuardedProtocol
from app.server.main import HookApp, create_app, tune_gc
from app.server.metrics_port import serve_metrics
from app.settings import Settings, SettingsError, load_settings

# File descriptors beyond the connections: the listening sockets, the Event client's, logs, the recorder.
OPEN_FILES_SPARE = 256
# uvicorn's exit code when it cannot start (a port it cannot bind).
UVICORN_STARTUP_FAILURE = 3


class CannotListen(Exception):
    """A port could not be bound; the message says which and why."""


def uvicorn_options(log_level: str) -> dict[str, Any]:
    """Production uvicorn settings, shared by ``serve`` (so by the image) and bench/.

    uvloop and httptools: the fastest loop and parser uvicorn has, in ``GuardedProtocol``, which adds the
    connection limits uvicorn lacks (header deadline and size, body deadline, pipelining bounds, a connection
    cap that evicts the longest idle connection: app/server/connections.py). No WebSocket: the protocol
    refuses every upgrade. No ``limit_concurrency``: it counted idle connections and answered everyone 503
    past 64; the body guard queues hook requests under a deadline instead. The keep-alive outlives Go's idle
    connections less than its 90 s idle timeout, so Metacontroller reuses connections. No access log: a flood
    would write a line per request; the guard logs refusals (throttled) and counts them. Logging is
    configured by ``app.server.logs`` (text or JSON), not by uvicorn.
    """
    return {
        "loop": "uvloop",
        "http": GuardedProtocol,
        "ws": "none",
        "limit_concurrency": None,
        "timeout_keep_alive": 75,
        "access_log": False,
        "log_config": None,
        "log_level": log_level.lower(),
    }


def allow_open_files(wanted: int) -> None:
    """Raise the soft limit on open files towards ``wanted`` (at most the hard limit): a default of 1,024
    would fail ``accept`` before the connection cap is reached."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def serve(host: str, port: int, workers: int) -> None:
    """Serve the hook until stopped. ``SettingsError``: a setting or file that cannot be used, before
    anything listens; ``CannotListen``: a port that cannot be bound."""
    settings = load_settings()
    if settings.metrics_port and workers != 1:
        raise SettingsError("MPI_OPERATOR_METRICS_PORT needs --workers 1 (a registry per process)")
    logs.configure(settings.log_level, settings.log_format)
    application = create_app(settings)  # with more workers, only the check: each builds its own
    allow_open_files(settings.max_connections + OPEN_FILES_SPARE)
    options = uvicorn_options(settings.log_level)
    try:
        if workers == 1:
            _serve_one(application, settings, host, port, options)
        else:
            uvicorn.run("app.server.main:app", host=host, port=port, workers=workers, **options)
    except SystemExit as exit_:
        if exit_.code != UVICORN_STARTUP_FAILURE:
            raise
        raise CannotListen(f"cannot listen on {host}:{port} (the log above says why)") from None


def _serve_one(
    application: HookApp, settings: Settings, host: str, port: int, options: dict[str, Any]
) -> None:
    tune_gc()
    if settings.metrics_port:
        try:
            serve_metrics(
                host,
                settings.metrics_port,
                application.hook.metrics.registry,
                timeout_seconds=settings.header_timeout_seconds,
                max_header_bytes=settings.max_header_bytes,
            )
        except OSError as err:
            raise CannotListen(
                f"cannot listen on {host}:{settings.metrics_port} (metrics): {err.strerror}"
            ) from None
    uvicorn.run(application, host=host, port=port, **options)
