"""The ``mpijob`` command: ``serve`` runs the hook; ``render`` previews what a job would create."""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
import yaml


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mpijob", description="MPIJob sync hook for Metacontroller")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the hook's HTTP server")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument(
        "--workers", type=int, default=1, help="uvicorn worker processes (1 per pod; scale with replicas)"
    )
    render = commands.add_parser("render", help="print the children and status a first sync would produce")
    render.add_argument("file", help="MPIJob manifest (YAML or JSON); - for standard input")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args.host, args.port, args.workers)
    return _render(args.file)


def server_options(log_level: str) -> dict[str, Any]:
    """Production uvicorn settings, shared by ``serve`` (so by the image) and bench/http_bench.py.

    uvloop and httptools: the fastest loop and parser uvicorn has. ``limit_concurrency`` answers 503
    past 64 open requests (the body guard already queues large ones by bytes); the keep-alive outlives
    Go's idle connections less than its 90 s idle timeout, so Metacontroller reuses connections.
    Logging is configured by ``app.logs`` (text or JSON), not by uvicorn.
    """
    return {
        "loop": "uvloop",
        "http": "httptools",
        "limit_concurrency": 64,
        "timeout_keep_alive": 75,
        "log_config": None,
        "log_level": log_level.lower(),
    }


def _serve(host: str, port: int, workers: int) -> int:
    import uvicorn

    from app import logs
    from app.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"mpijob: {err}", file=sys.stderr)
        return 2
    logs.configure(settings.log_level, settings.log_format)
    options = server_options(settings.log_level)
    if not settings.metrics_port:
        uvicorn.run("app.main:app", host=host, port=port, workers=workers, **options)
        return 0
    if workers != 1:
        print("mpijob: MPI_OPERATOR_METRICS_PORT needs --workers 1 (a registry per process)", file=sys.stderr)
        return 2
    from prometheus_client import start_http_server

    from app.main import create_app

    application = create_app(settings)
    start_http_server(settings.metrics_port, host, registry=application.state.hook.metrics.registry)
    uvicorn.run(application, host=host, port=port, **options)
    return 0


def _render(path: str) -> int:
    from app.core.sync import sync
    from app.kube.request import RequestError, decode_request
    from app.settings import SettingsError, load_settings

    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
    except OSError as err:
        print(f"mpijob: cannot read {path}: {err.strerror}", file=sys.stderr)
        return 2
    try:
        settings = load_settings()
        job = yaml.safe_load(text)
        if not isinstance(job, dict):
            raise RequestError("the file holds no MPIJob object")
        if not isinstance(job.get("metadata"), dict):
            job["metadata"] = {}
        metadata = job["metadata"]
        metadata.setdefault("namespace", "default")
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("generation", 1)
        body = orjson.dumps({"controller": {}, "parent": job, "children": {}, "related": {}})
        result = sync(
            decode_request(body),
            now=datetime.now(UTC),
            keys=settings.key_source(),
            cluster_domain=settings.cluster_domain,
            annotation_budget=settings.annotation_budget,
        )
    except (RequestError, SettingsError, yaml.YAMLError) as err:
        print(f"mpijob: {err}", file=sys.stderr)
        return 2
    documents = [_redact(child) for child in result.children]
    documents.append({"status": result.status})
    print(yaml.safe_dump_all(documents, sort_keys=False), end="")
    return 0


def _redact(child: dict[str, Any]) -> dict[str, Any]:
    """A preview must not print a private key."""
    if child.get("kind") == "Secret":
        return {**child, "data": {key: "<redacted>" for key in child.get("data", {})}}
    return child


if __name__ == "__main__":
    sys.exit(main())
