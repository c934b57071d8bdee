"""The ``mpijob`` command: ``serve`` the hook; ``render``, ``lint`` and ``convert`` MPIJob manifests offline.

Conventions for every subcommand: ``-`` reads standard input; a YAML error names FILE:LINE:COLUMN; there is
never a traceback (an unexpected failure is one line and exit code 3); colour only on a terminal (and never
with ``NO_COLOR``). Exit codes: 0 done/clean, 1 findings (lint at or above ``--fail-on``; render of an invalid
job), 2 unusable input or settings. Formatting lives here; decisions live in ``app.api.lint``,
``app.convert`` and the hook's own ``sync``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from app.cli import replay
from app.cli.exits import EXIT_INTERNAL, EXIT_OK, EXIT_UNUSABLE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpijob",
        description="MPIJob (kubeflow.org/v2beta1) sync hook for Metacontroller, and MPIJob manifest tools.",
        epilog="Exit codes: 0 ok, 1 findings or invalid job, 2 unusable input, 3 internal error.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(commands)
    _add_render(commands)
    _add_lint(commands)
    _add_convert(commands)
    replay.add_parser(commands)
    return parser


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the hook's HTTP server",
        description="Run the sync hook (settings: MPI_OPERATOR_*).",
    )
    serve.add_argument("--host", default="0.0.0.0", help="address to bind (default 0.0.0.0)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default 1)")


def _add_render(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    render = commands.add_parser(
        "render",
        help="print the objects the hook would create for each MPIJob",
        description="Print, as YAML, the Kubernetes objects a first sync creates for every MPIJob in FILE"
        " (Secret data redacted). The output can go to `kubectl apply --dry-run=client -f -`.",
    )
    render.add_argument(
        "file", metavar="FILE", help="manifest (YAML or JSON, several documents); - for stdin"
    )
    render.add_argument(
        "--status", action="store_true", help="also print each job's status, as YAML comments"
    )
    render.add_argument("-n", "--namespace", help="namespace for jobs that name none (default: default)")
    render.add_argument(
        "--cluster-domain",
        help="as the hook's MPI_OPERATOR_CLUSTER_DOMAIN (default: that variable, else empty)",
    )
    render.add_argument(
        "--gang-scheduling",
        help="as the hook's MPI_OPERATOR_GANG_SCHEDULING (default: that variable, else empty)",
    )


def _add_lint(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lint = commands.add_parser(
        "lint",
        help="find mistakes in MPIJob manifests",
        description="Check every MPIJob in the files for the mistakes that fail silently (-np vs slots,"
        " GPUs vs slots, pruned fields, ...) and for what the CRD or the hook's validation would reject.",
        epilog="Exit codes: 0 no finding at or above --fail-on, 1 some, 2 unusable input."
        " Silence a rule for one job: annotation mpijob-lint/ignore: RULE[,RULE].",
    )
    lint.add_argument("files", nargs="*", metavar="FILE", help="manifests; - for stdin")
    lint.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default="warning",
        help="lowest severity that makes the exit code 1 (default warning)",
    )
    lint.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    lint.add_argument("--list-rules", action="store_true", help="print the rules and exit")


def _add_convert(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert old MPIJobs to v2beta1, or MPIJobs to Trainer v2 TrainJobs",
        description="Convert kubeflow.org/v1alpha2 and v1 MPIJobs (mpi-operator's and training-operator's) to"
        " kubeflow.org/v2beta1, or any of them to a Kubeflow Trainer v2 TrainJob. The result goes to stdout;"
        " what could not be carried over, and why, to stderr.",
    )
    convert.add_argument("file", metavar="FILE", help="manifest; - for stdin")
    convert.add_argument(
        "--to", choices=("v2beta1", "trainjob"), default="v2beta1", help="target (default v2beta1)"
    )
    convert.add_argument(
        "--runtime",
        default=None,
        help="ClusterTrainingRuntime for --to trainjob (default mpi-distributed, Trainer's OpenMPI runtime)",
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (e.g. `| head`): nothing left to say
        return EXIT_OK
    except Exception as err:  # the promise: one line, never a traceback
        print(f"mpijob: internal error ({type(err).__name__}); please report it", file=sys.stderr)
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return _serve(args.host, args.port, args.workers)
    from app.cli import commands

    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "render": commands.render,
        "lint": commands.lint,
        "convert": commands.convert,
        "replay": replay.run,
    }
    return handlers[args.command](args)


def server_options(log_level: str) -> dict[str, Any]:
    """Production uvicorn settings, shared by ``serve`` (so by the image) and bench/http_bench.py.

    uvloop and httptools: the fastest loop and parser uvicorn has. ``limit_concurrency`` answers 503
    past 64 open requests (the body guard already queues large ones by bytes); the keep-alive outlives
    Go's idle connections less than its 90 s idle timeout, so Metacontroller reuses connections.
    Logging is configured by ``app.server.logs`` (text or JSON), not by uvicorn.
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

    from app.server import logs
    from app.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"mpijob: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    logs.configure(settings.log_level, settings.log_format)
    options = server_options(settings.log_level)
    if not settings.metrics_port:
        uvicorn.run("app.server.main:app", host=host, port=port, workers=workers, **options)
        return EXIT_OK
    if workers != 1:
        print("mpijob: MPI_OPERATOR_METRICS_PORT needs --workers 1 (a registry per process)", file=sys.stderr)
        return EXIT_UNUSABLE
    from prometheus_client import start_http_server

    from app.server.main import create_app, tune_gc

    application = create_app(settings)
    tune_gc()
    start_http_server(settings.metrics_port, host, registry=application.hook.metrics.registry)
    uvicorn.run(application, host=host, port=port, **options)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
