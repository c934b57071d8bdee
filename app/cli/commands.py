"""What ``mpijob lint`` and ``convert`` do and print (``render``: ``app.cli.render``), and what the three
share: the MPIJobs of a file, errors on stderr. YAML goes to stdout, the rest to stderr.

``lint`` prints ``app.api.lint`` findings with file and line; ``convert`` prints ``app.convert.mpijob``
results and their notes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from app.api.lint import RULES, SEVERITIES, Finding, Severity, lint_manifest
from app.api.types import KIND
from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE
from app.cli.yamlio import dump_all, read_text, source_name
from app.kube.yamltext import Document, InputError, iter_documents, load_documents

if TYPE_CHECKING:
    from app.cli.runtimes import Runtimes


def error(message: str) -> None:
    print(f"mpijob: {message}", file=sys.stderr)


def job_name(job: dict[str, Any]) -> str:
    metadata = job.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return str(name or "<no name>")


def documents(path: str) -> list[Document]:
    return load_documents(read_text(path), source_name(path))


def mpijobs(documents: Iterable[Document], source: str, verb: str) -> list[Document]:
    return list(_each_mpijob(documents, source, verb))


def _each_mpijob(documents: Iterable[Document], source: str, verb: str) -> Iterator[Document]:
    """The MPIJob documents; the others are named on stderr (never silently ignored)."""
    found = False
    for doc in documents:
        data = doc.data
        if isinstance(data, dict) and data.get("kind") == KIND:
            found = True
            yield doc
        else:
            kind = data.get("kind", "object without kind") if isinstance(data, dict) else type(data).__name__
            error(f"{source}: document {doc.index + 1} ({kind}) is not an MPIJob: not {verb}")
    if not found:
        raise InputError(f"{source}: no MPIJob in it")


# --- lint ------------------------------------------------------------------------------------------------

_COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def lint(args: argparse.Namespace) -> int:
    if args.list_rules:
        for rule, description in RULES.items():
            print(f"{rule:26} {SEVERITIES[rule].value:8} {description}")
        return EXIT_OK
    if not args.files:
        error("lint: give at least one FILE (- for standard input)")
        return EXIT_UNUSABLE
    results: list[_Located] = []
    jobs, unusable = 0, False
    for path in args.files:
        source = source_name(path)
        try:
            # One document at a time: only the findings are kept, not thousands of jobs' node trees.
            for doc in _each_mpijob(iter_documents(read_text(path), source), source, "linted"):
                jobs += 1
                name = job_name(doc.data)
                results += [_Located(source, doc.line_of(f.path), name, f) for f in lint_manifest(doc.data)]
        except InputError as err:
            error(str(err))
            unusable = True
    if unusable:  # only the errors: a summary of the other files would read as a verdict on this one
        return EXIT_UNUSABLE
    if args.output == "json":
        print(json.dumps({"jobs": jobs, "findings": [_as_json(r) for r in results]}, indent=2))
    else:
        _print_text(results, jobs)
    threshold = None if args.fail_on == "never" else Severity(args.fail_on).rank
    failing = threshold is not None and any(r.finding.severity.rank >= threshold for r in results)
    return EXIT_FINDINGS if failing else EXIT_OK


class _Located(NamedTuple):
    """A finding with where it is: what lint keeps of a job once it has been linted."""

    source: str
    line: int | None
    job: str
    finding: Finding


def _as_json(result: _Located) -> dict[str, Any]:
    return {"file": result.source, "line": result.line, "job": result.job, **result.finding.as_dict()}


def _print_text(results: list[_Located], jobs: int) -> None:
    colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    for source, line, job, finding in results:
        severity = finding.severity.value
        if colour:
            severity = f"\033[{_COLOURS[finding.severity]}m{severity}\033[0m"
        where = f"{source}:{line}" if line else source
        print(f"{where}: {severity} [{finding.rule}] {finding.path} (MPIJob {job})")
        print(f"    {finding.message}")
        print(f"    fix: {finding.fix}")
    counts = {s: sum(1 for r in results if r.finding.severity is s) for s in Severity}
    summary = (
        ", ".join(f"{n} {s.value}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no findings"
    )
    print(f"{jobs} MPIJob{'s' if jobs != 1 else ''}: {summary}", file=sys.stderr)


# --- convert ---------------------------------------------------------------------------------------------


def convert(args: argparse.Namespace) -> int:
    from app.cli.runtimes import Runtimes

    trainjob_only = (args.runtime, args.gang_scheduling, args.namespace, args.kubeconfig, args.context)
    if any(trainjob_only) and args.to != "trainjob":
        error("--runtime, --gang-scheduling, -n, --kubeconfig and --context go with --to trainjob")
        return EXIT_UNUSABLE
    runtimes = Runtimes()
    try:
        runtimes = Runtimes.from_args(args)
        jobs = mpijobs(documents(args.file), source_name(args.file), "converted")
        out = _converted(jobs, runtimes, args)
    except InputError as err:
        error(str(err))
        return EXIT_UNUSABLE
    finally:
        runtimes.close()
    if out is None:
        return EXIT_UNUSABLE
    sys.stdout.write(dump_all(out))
    return EXIT_OK


def _converted(
    jobs: list[Document], runtimes: Runtimes, args: argparse.Namespace
) -> list[dict[str, Any]] | None:
    """Every job converted, its notes on stderr; ``None`` when one cannot be (why on stderr)."""
    from app.convert.conversion import ConvertError
    from app.convert.mpijob import to_v2beta1
    from app.convert.trainjob import Target, to_trainjob

    out = []
    for doc in jobs:
        try:
            if args.to == "trainjob":
                result = to_trainjob(doc.data, Target(runtimes.for_job(doc.data), args.gang_scheduling))
            else:
                result = to_v2beta1(doc.data)
        except ConvertError as err:
            error(f"{doc.source}: document {doc.index + 1}: {err}")
            return None
        for note in result.notes:
            print(f"mpijob convert: {job_name(doc.data)}: {note}", file=sys.stderr)
        out += [*result.prerequisites, result.obj]
    return out
