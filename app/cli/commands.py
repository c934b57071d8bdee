"""What ``mpijob render``, ``lint`` and ``convert`` do and print: YAML to stdout, the rest to stderr.

``render`` runs the hook's own ``sync`` on a first-sync request built from the file, so what it prints is what
the hook would ask Metacontroller to create. ``lint`` prints ``app.api.lint`` findings with file and line;
``convert`` prints ``app.convert.mpijob`` results and their notes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import yaml

from app.api.lint import RULES, SEVERITIES, Finding, Severity, lint_manifest
from app.api.types import API_VERSION, KIND, OLD_API_VERSIONS
from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE
from app.cli.yamlio import (
    Document,
    InputError,
    dump_all,
    iter_documents,
    load_documents,
    read_text,
    source_name,
)
from app.kube.pod_phase import PodPhase

if TYPE_CHECKING:
    from app.cli.runtimes import Runtimes

REDACTED = "<redacted>"


def _error(message: str) -> None:
    print(f"mpijob: {message}", file=sys.stderr)


def _documents(path: str) -> list[Document]:
    return load_documents(read_text(path), source_name(path))


def _mpijobs(documents: Iterable[Document], source: str, verb: str) -> list[Document]:
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
            _error(f"{source}: document {doc.index + 1} ({kind}) is not an MPIJob: not {verb}")
    if not found:
        raise InputError(f"{source}: no MPIJob in it")


# --- render ----------------------------------------------------------------------------------------------


def render(args: argparse.Namespace) -> int:
    from app.settings import SettingsError

    try:
        settings = _render_settings(args)
        jobs = _mpijobs(_documents(args.file), source_name(args.file), "rendered")
    except (InputError, SettingsError) as err:
        _error(str(err))
        return EXIT_UNUSABLE
    for doc in jobs:
        version = doc.data.get("apiVersion")
        if version != API_VERSION:
            advice = f"no MPI operator served it; write apiVersion: {API_VERSION}"
            if version in OLD_API_VERSIONS:
                advice = f"run `mpijob convert {shlex.quote(args.file)} > new.yaml` first"
            _error(f"{doc.source}: MPIJob {_name(doc.data)} is {version!s:.40}, not {API_VERSION}: {advice}")
            return EXIT_UNUSABLE
    chunks, invalid = [], False
    for doc in jobs:
        text, ok = _render_job(doc, settings, args)
        chunks.append(text)
        invalid = invalid or not ok
    sys.stdout.write("".join(chunks))
    return EXIT_FINDINGS if invalid else EXIT_OK


def _render_settings(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from app.settings import Settings, SettingsError, load_settings

    overrides = {
        k: getattr(args, k) for k in ("cluster_domain", "gang_scheduling") if getattr(args, k) is not None
    }
    if not overrides:
        return load_settings()
    try:
        return Settings(**overrides)
    except ValidationError as err:
        problems = "; ".join(f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" for e in err.errors())
        raise SettingsError(problems) from None


def _name(job: dict[str, Any]) -> str:
    metadata = job.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return str(name or "<no name>")


def _controller(gang_scheduling: str) -> dict[str, Any]:
    """A CompositeController as the matching overlay declares it: with gang scheduling, its PodGroup child
    (and the Workload, for the Workload API)."""
    from app.kube.gang import gang_scheduler

    scheduler = gang_scheduler(gang_scheduling)
    if scheduler is None:
        return {}
    declared = [{"apiVersion": scheduler.api_version, "resource": r} for r in scheduler.resources]
    return {"spec": {"childResources": declared}}


def _sync(job: dict[str, Any], settings: Any, children: dict[str, dict[str, Any]]) -> Any:
    from app.core.sync import sync
    from app.kube.request import decode_request

    controller = _controller(settings.gang_scheduling)
    body = orjson.dumps({"controller": controller, "parent": job, "children": children, "related": {}})
    return sync(
        decode_request(body), now=datetime.now(UTC), keys=settings.key_source(), config=settings.sync_config
    )


def _first_sync(job: dict[str, Any], settings: Any, namespace: str | None) -> Any:
    """The hook's answer to Metacontroller's first request about this job (no children exist yet)."""
    job = dict(job)
    metadata = dict(job["metadata"]) if isinstance(job.get("metadata"), dict) else {}
    metadata["namespace"] = metadata.get("namespace") or namespace or "default"
    metadata.setdefault("uid", str(uuid.uuid4()))
    metadata.setdefault("generation", 1)
    job["metadata"] = metadata
    first = _sync(job, settings, {})
    return first, job


def _once_workers_ready(job: dict[str, Any], first: Any, settings: Any) -> Any:
    """The sync after the first one's children exist and every worker Pod is Ready: what a
    ``WaitForWorkersReady`` job has once its launcher is created."""
    children: dict[str, dict[str, Any]] = {}
    for child in first.children:
        child = dict(child)
        if child.get("kind") == "Pod":
            child["status"] = {
                "phase": PodPhase.RUNNING.value,
                "conditions": [{"type": "Ready", "status": "True"}],
            }
        metadata = child.get("metadata") or {}
        key = f"{child.get('kind')}.{child.get('apiVersion')}"
        children.setdefault(key, {})[f"{metadata.get('namespace')}/{metadata.get('name')}"] = child
    return _sync({**job, "status": first.status}, settings, children)


def _launcher_waits(result: Any) -> bool:
    """Workers but no launcher Job: a valid ``WaitForWorkersReady`` job before its workers are Ready (a
    suspended job has neither, an ``AtStartup`` one both)."""
    kinds = {child.get("kind") for child in result.children}
    return "Pod" in kinds and "Job" not in kinds


def _render_job(doc: Document, settings: Any, args: argparse.Namespace) -> tuple[str, bool]:
    from app.kube.request import RequestError

    try:
        result, job = _first_sync(doc.data, settings, args.namespace)
        if _launcher_waits(result) and args.workers_ready:
            result = _once_workers_ready(job, result, settings)
    except RequestError as err:
        _error(f"{doc.source}: MPIJob {_name(doc.data)}: {err}")
        return "", False
    from app.core.sync import Outcome

    if _launcher_waits(result):
        _error(
            f"{doc.source}: MPIJob {_name(doc.data)}: no launcher Job yet: launcherCreationPolicy"
            " WaitForWorkersReady creates it once every worker Pod is Ready; --workers-ready renders it"
        )
    conditions = result.status.get("conditions") or []
    invalid = result.outcome == Outcome.INVALID
    if invalid:
        message = next((c.get("message") for c in conditions if c.get("type") == "Invalid"), "")
        _error(f"{doc.source}: MPIJob {_name(doc.data)} is invalid, nothing would be created: {message}")
    summary = ", ".join(f"{c['type']}={c['status']}" for c in conditions)
    text = f"# MPIJob {result.namespace}/{result.name}: {summary}\n"
    if args.status:
        status = yaml.safe_dump({"status": result.status}, sort_keys=False)
        text += "".join(f"# {line}\n" for line in status.splitlines())
    text += dump_all([redact(child) for child in result.children])
    return text, not invalid


def redact(child: dict[str, Any]) -> dict[str, Any]:
    """A preview must not print a private key."""
    if child.get("kind") == "Secret":
        return {**child, "data": dict.fromkeys(child.get("data") or {}, REDACTED)}
    return child


# --- lint ------------------------------------------------------------------------------------------------

_COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def lint(args: argparse.Namespace) -> int:
    if args.list_rules:
        for rule, description in RULES.items():
            print(f"{rule:26} {SEVERITIES[rule].value:8} {description}")
        return EXIT_OK
    if not args.files:
        _error("lint: give at least one FILE (- for standard input)")
        return EXIT_UNUSABLE
    results: list[_Located] = []
    jobs, unusable = 0, False
    for path in args.files:
        source = source_name(path)
        try:
            # One document at a time: only the findings are kept, not thousands of jobs' node trees.
            for doc in _each_mpijob(iter_documents(read_text(path), source), source, "linted"):
                jobs += 1
                name = _name(doc.data)
                results += [_Located(source, doc.line_of(f.path), name, f) for f in lint_manifest(doc.data)]
        except InputError as err:
            _error(str(err))
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
        _error("--runtime, --gang-scheduling, -n, --kubeconfig and --context go with --to trainjob")
        return EXIT_UNUSABLE
    runtimes = Runtimes()
    try:
        runtimes = Runtimes.from_args(args)
        jobs = _mpijobs(_documents(args.file), source_name(args.file), "converted")
        out = _converted(jobs, runtimes, args)
    except InputError as err:
        _error(str(err))
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
            _error(f"{doc.source}: document {doc.index + 1}: {err}")
            return None
        for note in result.notes:
            print(f"mpijob convert: {_name(doc.data)}: {note}", file=sys.stderr)
        out += [*result.prerequisites, result.obj]
    return out
