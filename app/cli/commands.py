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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from app.api.lint import RULES, SEVERITIES, Finding, Severity, lint_manifest
from app.api.types import KIND
from app.cli.complaints import complain
from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE
from app.cli.manifest_folder import manifest_files
from app.cli.terminal import printable
from app.cli.yamlio import dump_all, read_text, source_name
from app.kube.yamltext import Document, InputError, iter_documents, load_documents

if TYPE_CHECKING:
    from app.cli.runtimes import Runtimes


def job_name(job: dict[str, Any]) -> str:
    metadata = job.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return str(name or "<no name>")


def documents(path: str) -> list[Document]:
    return load_documents(read_text(path), source_name(path))


def mpijobs(documents: Iterable[Document], source: str, verb: str, command: str) -> list[Document]:
    return list(_each_mpijob(documents, source, verb, command))


def _each_mpijob(documents: Iterable[Document], source: str, verb: str, command: str) -> Iterator[Document]:
    """The MPIJob documents; the others are named on ``command``'s error line (never silently ignored)."""
    found = False
    for doc in documents:
        data = doc.data
        if isinstance(data, dict) and data.get("kind") == KIND:
            found = True
            yield doc
            continue
        kind = data.get("kind", "object without kind") if isinstance(data, dict) else type(data).__name__
        problem = f"{source}: document {doc.index + 1} ({kind}) is not an MPIJob"
        complain(command, printable(problem), f"not {verb}")
    if not found:
        raise InputError(f"{source}: no MPIJob in it")


# --- lint ------------------------------------------------------------------------------------------------

_COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def lint(args: argparse.Namespace) -> int:
    if args.list_rules:
        _print_rules()
        return EXIT_OK
    if not args.files:
        complain("lint", "no FILE given", "give manifests: files, folders (-R: their subfolders too) or -")
        return EXIT_UNUSABLE
    linted = _Linted()
    for argument in args.files:
        for manifest in manifest_files(argument, args.recursive):
            if manifest.problem:
                complain("lint", printable(manifest.problem), manifest.fix)
                linted.unusable = True
            else:
                _lint_file(manifest.path, linted)
    if linted.unusable:  # only the errors: a summary of the other files would read as a verdict on this one
        return EXIT_UNUSABLE
    if args.output == "json":
        print(json.dumps({"jobs": linted.jobs, "findings": [_as_json(r) for r in linted.results]}, indent=2))
    else:
        _print_text(linted.results, linted.jobs)
    threshold = None if args.fail_on == "never" else Severity(args.fail_on).rank
    failing = threshold is not None and any(r.finding.severity.rank >= threshold for r in linted.results)
    return EXIT_FINDINGS if failing else EXIT_OK


def _print_rules() -> None:
    """One row per rule, its columns as wide as their longest cell."""
    width = max(len(rule) for rule in RULES)
    severity_width = max(len(severity.value) for severity in Severity)
    for rule, description in RULES.items():
        print(f"{rule:{width}}  {SEVERITIES[rule].value:{severity_width}}  {description}")


class _Located(NamedTuple):
    """A finding with where it is: what lint keeps of a job once it has been linted."""

    source: str
    line: int | None
    job: str
    namespace: str | None
    finding: Finding


@dataclass
class _Linted:
    """What lint keeps across files: the jobs counted, their findings, whether an input was unusable."""

    jobs: int = 0
    results: list[_Located] = field(default_factory=list)
    unusable: bool = False


def _lint_file(path: str, linted: _Linted) -> None:
    source = source_name(path)
    try:
        # One document at a time: only the findings are kept, not thousands of jobs' node trees.
        for doc in _each_mpijob(iter_documents(read_text(path), source), source, "linted", "lint"):
            linted.jobs += 1
            name, namespace = job_name(doc.data), _namespace(doc.data)
            for finding in lint_manifest(doc.data):
                linted.results.append(_Located(source, doc.line_of(finding.path), name, namespace, finding))
    except InputError as err:
        _unusable("lint", err)
        linted.unusable = True


def _namespace(job: dict[str, Any]) -> str | None:
    metadata = job.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return str(namespace) if namespace else None


# What to do about an input that cannot be used, by how its message starts or ends. Nothing is added where
# the message says it already: a file too large ("split it into smaller files"), a YAML error at
# FILE:LINE:COLUMN (correct it there), as every command prints them.
_INPUT_FIXES = (
    ("cannot read ", "check the path and its permissions (a file, a folder, or - for standard input)"),
    ("not UTF-8 text", "save it as UTF-8"),
    ("no MPIJob in it", "give manifests of kind MPIJob (kubectl get mpijobs -o yaml prints them)"),
)


def _unusable(command: str, err: InputError) -> None:
    problem = str(err)
    fixes = (fix for text, fix in _INPUT_FIXES if problem.startswith(text) or problem.endswith(text))
    complain(command, printable(problem), next(fixes, ""))


def _as_json(result: _Located) -> dict[str, Any]:
    where = {"file": result.source, "line": result.line, "namespace": result.namespace, "job": result.job}
    return {**where, **result.finding.as_dict()}


def _print_text(results: list[_Located], jobs: int) -> None:
    colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    for source, line, job, namespace, finding in results:
        severity = finding.severity.value
        if colour:
            severity = f"\033[{_COLOURS[finding.severity]}m{severity}\033[0m"
        where = printable(f"{source}:{line}" if line else source)
        name = printable(f"{namespace}/{job}" if namespace else job)  # as kubectl names it
        # Names, paths and messages quote the file: never an escape sequence or a line break of its own.
        print(f"{where}: {severity} [{finding.rule}] {printable(finding.path)} (MPIJob {name})")
        print(f"    {printable(finding.message)}")
        print(f"    fix: {printable(finding.fix)}")
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
        flags = "--runtime, --gang-scheduling, -n, --kubeconfig and --context"
        complain("convert", f"{flags} go with --to trainjob", "add --to trainjob, or leave them out")
        return EXIT_UNUSABLE
    runtimes = Runtimes()
    try:
        runtimes = Runtimes.from_args(args)
        jobs = mpijobs(documents(args.file), source_name(args.file), "converted", "convert")
        out = _converted(jobs, runtimes, args)
    except InputError as err:
        _unusable("convert", err)
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
            complain("convert", printable(f"{doc.source}: document {doc.index + 1}: {err}"))
            return None
        for note in result.notes:
            print(f"mpijob convert: {job_name(doc.data)}: {note}", file=sys.stderr)
        out += [*result.prerequisites, result.obj]
    return out
