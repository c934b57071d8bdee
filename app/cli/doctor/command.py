"""``mpijob doctor NAME``: read one MPIJob and what it owns, and name the first problem, with its evidence
and its fix. Also ``kubectl mpijob doctor NAME`` (the ``kubectl-mpijob`` entry point is the same program).

Exit codes: 0 nothing wrong (the job's stage and what it waits for), 1 a problem named, 2 the cluster
cannot be read (which permission is missing) or unusable arguments.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.arguments import namespace_name
from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE

if TYPE_CHECKING:
    from app.cli.doctor.checks import Diagnosis
    from app.cli.doctor.snapshot import Snapshot

# The modules that read the cluster are imported when doctor runs: building the parser must stay cheap.
# A file for --load: at most 10 pages of Pods and the rest, trimmed (no managedFields) as --save writes them.
SNAPSHOT_BYTES = 256 * 1024 * 1024
MISSING_PERMISSION_FIX = (
    "it needs get and list on the job's objects in the namespace; the Role in docs/troubleshooting.md grants"
    " exactly that"
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="say why an MPIJob in the cluster is stuck or failed",
        description="Read an MPIJob, its launcher Job and Pods, workers, Service, Secret (metadata only),"
        " ConfigMap, PodGroup, their Events and the launcher's logs, with your kubeconfig and read-only"
        " requests, and print the first problem of a fixed list (mpijob doctor --list-checks), with its"
        " evidence and its fix.",
        epilog="Exit codes: 0 nothing wrong, 1 a problem named, 2 the cluster cannot be read (the missing"
        " permission is named) or unusable arguments.",
    )
    doctor.add_argument("name", metavar="NAME", nargs="?", help="the MPIJob's name")
    add_cluster_arguments(doctor, "its namespace (default: the context's, else default)")
    doctor.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    doctor.add_argument("--save", metavar="FILE", help="also write what was read to FILE, as JSON")
    doctor.add_argument("--load", metavar="FILE", help="judge what --save wrote instead of reading a cluster")
    doctor.add_argument("--list-checks", action="store_true", help="print the checks, in order, and exit")


def add_cluster_arguments(parser: argparse.ArgumentParser, namespace_help: str) -> None:
    """-n, --kubeconfig and --context, as kubectl has them: for every command that reads the cluster."""
    parser.add_argument("-n", "--namespace", type=namespace_name, help=namespace_help)
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: its current-context)")


def run(args: argparse.Namespace) -> int:
    from app.cli.doctor.checks import CHECKS, diagnose
    from app.cluster.kubeconfig import KubeconfigError
    from app.cluster.reads import CannotRead

    if args.list_checks:
        for entry in CHECKS:
            print(f"{entry.id:28} {entry.finds}")
        return EXIT_OK
    try:
        snap = _snapshot(args)
        if args.save:
            Path(args.save).write_text(json.dumps(snap.to_json(), indent=1, sort_keys=True) + "\n")
    except (CannotRead, KubeconfigError, OSError, ValueError) as err:
        _cannot_read(args, err)
        return EXIT_UNUSABLE
    diagnosis = _printable(diagnose(snap))
    if args.output == "json":
        print(json.dumps(diagnosis.as_dict(), indent=2))
    else:
        _print_text(diagnosis)
    return EXIT_OK if diagnosis.problem is None else EXIT_FINDINGS


def _snapshot(args: argparse.Namespace) -> Snapshot:
    from app.cli.doctor.gather import gather
    from app.cli.doctor.snapshot import Snapshot
    from app.cluster.kubeconfig import load
    from app.cluster.reads import Reader
    from app.cluster.untrusted import parse_json, read_file
    from app.kube.depth import MPIJOB_MAX_DEPTH

    if args.load:
        raw = read_file(Path(args.load), SNAPSHOT_BYTES, "--load")
        # A snapshot holds the MPIJob one level below its top: the hook's limit, plus that level.
        data = parse_json(raw, f"--load {args.load}", MPIJOB_MAX_DEPTH + 1)
        return Snapshot.from_json(data, f"--load {args.load}: not a snapshot written by --save")
    if not args.name:
        raise ValueError("give the MPIJob's NAME")
    connection = load(args.kubeconfig, args.context)
    reader = Reader(connection)
    try:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return gather(reader, args.namespace or connection.namespace, args.name, now)
    finally:
        reader.close()


def _cannot_read(args: argparse.Namespace, err: Exception) -> None:
    """One line, what is wrong and what to do (``complaints``); with ``-o json`` the error on stdout too."""
    from app.cli.complaints import complain
    from app.cli.terminal import printable

    permission = printable(getattr(err, "permission", ""))
    if args.output == "json":
        print(json.dumps({"error": printable(err), "permission": permission or None}, indent=2))
    complain("doctor", printable(err), MISSING_PERMISSION_FIX if permission else getattr(err, "fix", ""))


def _printable(diagnosis: Diagnosis) -> Diagnosis:
    """Every string of the verdict as one safe line: most quote the server (messages, Events, logs)."""
    from app.cli.terminal import printable

    problem = diagnosis.problem
    if problem is not None:
        problem = replace(
            problem,
            summary=printable(problem.summary),
            evidence=tuple(printable(line) for line in problem.evidence),
            fix=printable(problem.fix),
        )
    return replace(
        diagnosis,
        job=printable(diagnosis.job),
        stage=printable(diagnosis.stage),
        waiting_for=printable(diagnosis.waiting_for),
        problem=problem,
    )


def _print_text(diagnosis: Diagnosis) -> None:
    problem = diagnosis.problem
    stage = diagnosis.stage or "no conditions"
    if problem is None:
        print(f"healthy: MPIJob {diagnosis.job} is {stage}; waiting for {diagnosis.waiting_for}")
        return
    print(f"{problem.check}: {problem.summary}")
    print(f"  job: MPIJob {diagnosis.job}, stage {stage}")
    for line in problem.evidence:
        print(f"  evidence: {line}")
    print(f"  fix: {problem.fix}")
