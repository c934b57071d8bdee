"""The ``mpijob`` command: ``serve`` the hook; ``render``, ``lint`` and ``convert`` MPIJob manifests offline;
``replay`` recorded hook requests against a hook; ``doctor`` a job in the cluster (also run by kubectl as its
plugin ``kubectl-mpijob``).

Conventions: a manifest argument (render, lint, convert and its ``--runtime``) of ``-`` reads standard input
(replay's DIR is a folder, so ``-`` is refused there); a YAML error names FILE:LINE:COLUMN; there is never a
traceback (an unexpected failure is one line and exit code 3); colour only on a terminal (and never
with ``NO_COLOR``). Exit codes: 0 done/clean, 1 findings (lint at or above ``--fail-on``; render of an invalid
job; doctor: a problem named), 2 unusable input or settings (doctor: the cluster cannot be read). Formatting
lives here; decisions live in ``app.api.lint``, ``app.convert``, the hook's own ``sync`` and the doctor's
checks.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from collections.abc import Callable
from importlib import metadata
from typing import NoReturn, cast

from app.api.types import OLD_API_VERSIONS
from app.cli import arguments, complaints, completion, replay
from app.cli.completion import SHELLS
from app.cli.doctor import command as doctor
from app.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_CANNOT_SERVE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNUSABLE,
)

PACKAGE = "mpi-operator-hook"


def package_version() -> str:
    """The installed package's version, from its metadata (pyproject.toml is the one place it is set)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, a usage error one error line naming the argument (exit code 2), as every other
    error of the command is: ``mpijob <command>: <what is wrong>: <what to do>``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNUSABLE, f"{self.prog}: {message}: see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=complaints.program(),
        description="MPIJob (kubeflow.org/v2beta1) sync hook for Metacontroller, and MPIJob manifest tools.",
        epilog="Exit codes: 0 ok, 1 findings or invalid job, 2 unusable input or arguments, 3 internal error,"
        " 4 serve could not listen.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {package_version()}")
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND"),
    )
    _add_serve(commands)
    _add_render(commands)
    _add_lint(commands)
    _add_convert(commands)
    replay.add_parser(commands)
    doctor.add_parser(commands)
    _add_completion(commands)
    return parser


def _add_completion(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print the completion script for SHELL. bash: source <(mpijob completion bash), e.g. in"
        " ~/.bashrc; zsh (with compinit): source <(mpijob completion zsh); fish: mpijob completion fish |"
        " source, or save it as ~/.config/fish/completions/mpijob.fish.",
    )
    completion.add_argument("shell", metavar="SHELL", choices=SHELLS, help=f"one of {', '.join(SHELLS)}")


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the hook's HTTP server",
        description="Run the sync hook (settings: MPI_OPERATOR_*).",
    )
    serve.add_argument(
        "--host",
        type=host_address,
        default="127.0.0.1",
        help="IP address or name to bind (default 127.0.0.1, this machine only; the image binds 0.0.0.0)",
    )
    serve.add_argument("--port", type=tcp_port, default=8080, help="TCP port, 1-65535 (default 8080)")
    serve.add_argument("--workers", type=at_least_one, default=1, help="uvicorn worker processes (default 1)")


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None


def tcp_port(text: str) -> int:
    """A TCP port: argparse reports anything else as a usage error (exit 2) before anything starts."""
    number = _whole_number(text)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a TCP port (1-65535)")
    return number


def at_least_one(text: str) -> int:
    number = _whole_number(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not at least 1")
    return number


def host_address(text: str) -> str:
    """An IP address, or a name that resolves now (uvicorn would fail on it only after logging a start)."""
    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    try:
        socket.getaddrinfo(text, None)
    except (OSError, UnicodeError):
        message = f"{text[:80]!r} is neither an IP address nor a name that resolves"
        raise argparse.ArgumentTypeError(message) from None
    return text


def _add_render(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    render = commands.add_parser(
        "render",
        help="print the objects the hook would create for each MPIJob",
        description="Print, as YAML (or JSON), the Kubernetes objects a first sync creates for every MPIJob"
        " in FILE (Secret data redacted). The output can go to `kubectl apply --dry-run=client -f -`. What"
        " the hook would say is wrong with a job (its Warning and Invalid conditions) goes to stderr.",
    )
    render.add_argument("file", metavar="FILE", help="manifest (YAML or JSON, several documents); - is stdin")
    render.add_argument("--status", action="store_true", help="also print each job's status as YAML comments")
    render.add_argument(
        "--workers-ready",
        action="store_true",
        help="render as the job will be once every worker is Ready (with a WaitForWorkersReady launcher)",
    )
    render.add_argument(
        "--nodes",
        metavar="FILE",
        help="render as if the job's Pods were bound as in FILE (what `kubectl get nodes,pods -o yaml`"
        " prints): the hostfile of a job that asks for topology order, ordered by those nodes' labels",
    )
    render.add_argument(
        "-n",
        "--namespace",
        type=arguments.namespace_name,
        help="namespace for jobs that name none (default: default)",
    )
    render.add_argument(
        "--cluster-domain",
        type=arguments.cluster_domain,
        help="as the hook's MPI_OPERATOR_CLUSTER_DOMAIN (default: that variable, else empty)",
    )
    render.add_argument(
        "--gang-scheduling",
        type=arguments.gang_scheduling,
        help="as the hook's MPI_OPERATOR_GANG_SCHEDULING (default: that variable, else empty)",
    )
    render.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="yaml (default), or json: one List"
    )


def _add_lint(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lint = commands.add_parser(
        "lint",
        help="find mistakes in MPIJob manifests",
        description="Check every MPIJob in the files for the mistakes that fail silently (-np vs slots,"
        " GPUs vs slots, pruned fields, ...) and for what the CRD or the hook's validation would reject."
        " A folder is read as kubectl apply -f reads it: its .yaml, .yml and .json files in name order.",
        epilog="Exit codes: 0 no finding at or above --fail-on, 1 some, 2 unusable input."
        " Silence a rule for one job: annotation mpijob-lint/ignore: RULE[,RULE].",
    )
    lint.add_argument("files", nargs="*", metavar="FILE", help="manifests or folders of them; - for stdin")
    lint.add_argument(
        "-R", "--recursive", action="store_true", help="read the folders' subfolders too (as kubectl's -R)"
    )
    lint.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default="warning",
        help="lowest severity that makes the exit code 1 (default warning; info: also a launcher without"
        " a command, whose entrypoint lint cannot see)",
    )
    lint.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    lint.add_argument("--list-rules", action="store_true", help="print the rules and exit")


def _add_convert(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert old MPIJobs to v2beta1, or MPIJobs to Kubeflow Trainer v2.3 TrainJobs",
        description=f"Convert MPIJobs of {', '.join(OLD_API_VERSIONS)} (mpi-operator's and"
        " training-operator's) to kubeflow.org/v2beta1, or any of them to a Kubeflow Trainer v2.3 TrainJob"
        " (after the TrainingRuntime derived from it). The result goes to stdout; what could not be carried"
        " over, and why, to stderr.",
    )
    convert.add_argument("file", metavar="FILE", help="manifest; - for stdin")
    convert.add_argument(
        "--to", choices=("v2beta1", "trainjob"), default="v2beta1", help="target (default v2beta1)"
    )
    convert.add_argument(
        "--runtime",
        metavar="FILE|NAME",
        type=arguments.runtime,
        default=None,
        help="with --to trainjob: run the jobs on this existing (Cluster)TrainingRuntime, what differs as"
        " runtimePatches: its manifest FILE (e.g. from kubectl get clustertrainingruntime NAME -o yaml) or,"
        " when no such file exists, its NAME, trainingruntime/NAME or clustertrainingruntime/NAME, read from"
        " the cluster (a plain NAME: the job's namespace's TrainingRuntime, else the ClusterTrainingRuntime);"
        " default: a TrainingRuntime derived from each job",
    )
    convert.add_argument(
        "--gang-scheduling",
        metavar="NAME",
        type=arguments.gang_scheduling,
        default="",
        help="with --to trainjob: the hook's MPI_OPERATOR_GANG_SCHEDULING the jobs ran under (volcano, or the"
        " coscheduler's scheduler name), carried as the runtime's podGroupPolicy (default: none)",
    )
    doctor.add_cluster_arguments(
        convert,
        "with --runtime NAME: the namespace to read a TrainingRuntime from for jobs that name none (default:"
        " the context's, else default)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `mpijob`: what it can do, not only what is missing
        parser.print_help(sys.stderr)
        return EXIT_UNUSABLE
    if args.command == "completion":
        sys.stdout.write(completion.script(args.shell, parser, complaints.program().split()[-1]))
        return EXIT_OK
    try:
        code = _dispatch(args)
        sys.stdout.flush()  # output still buffered meets a reader gone early here, not at interpreter exit
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): nothing left to say, and nothing more to flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as err:  # the promise: one line, never a traceback
        complaints.complain(args.command, f"internal error ({type(err).__name__})", "please report it")
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return _serve(args.host, args.port, args.workers)
    from app.cli import commands, render

    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "render": render.run,
        "lint": commands.lint,
        "convert": commands.convert,
        "replay": replay.run,
        "doctor": doctor.run,
    }
    return handlers[args.command](args)


def _serve(host: str, port: int, workers: int) -> int:
    from app.server.serve import CannotListen, serve
    from app.settings import SettingsError

    try:
        serve(host, port, workers)
    except SettingsError as err:
        complaints.complain("serve", str(err), "set each variable named as docs/operations.md#settings says")
        return EXIT_UNUSABLE
    except CannotListen as err:
        complaints.complain("serve", str(err), "stop what holds the address, or choose another --host/--port")
        return EXIT_CANNOT_SERVE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
