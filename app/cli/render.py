"""What ``mpijob render`` does and prints: the objects to stdout (YAML, or with ``-o json`` the one ``List``
``kubectl get -o json`` prints), the rest to stderr as error lines (``app.cli.complaints``).

``render`` runs the hook's own ``sync`` on a first-sync request built from the file, so what it prints is what
the hook would ask Metacontroller to create. ``--workers-ready`` and ``--nodes`` sync again with the first
sync's children observed Ready, or bound to the nodes of ``kubectl get nodes,pods -o yaml``
(``app.cli.cluster_file``): the hook's own plan orders the hostfile then. What the hook would say is wrong
with a job (its Warning, GangSchedulingUnavailable and Invalid conditions) is an error line each, never only a
comment among the YAML: a job written ``worker:`` renders no workers, and must not look fine.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import yaml

from app.api.hostfile_order_annotations import ORDER_ANNOTATION, asks_topology_order
from app.api.types import API_VERSION, OLD_API_VERSIONS, ConditionType, LauncherCreationPolicy
from app.cli.commands import documents, job_name, mpijobs
from app.cli.complaints import complain
from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE
from app.cli.yamlio import dump_all, source_name
from app.kube.pod_phase import PodPhase
from app.kube.yamltext import Document, InputError

if TYPE_CHECKING:
    from app.cli.cluster_file import Cluster

COMMAND = "render"
REDACTED = "<redacted>"
# ``render --nodes``: the syncs after the first one until the children stop changing (hostfile ordered,
# stored, launcher created, the same again); one more than that takes.
_MAX_SYNCS = 5
# The conditions by which the hook says something is wrong with a job (each also a Warning Event), and what to
# do about each ({file}: FILE as given). GangSchedulingUnavailable's message says what to change itself.
_FIXES = {
    ConditionType.INVALID: "`mpijob lint {file}` names each field to correct, with its line",
    ConditionType.WARNING: "`mpijob lint {file}` names each finding's line",
    ConditionType.GANG_SCHEDULING_UNAVAILABLE: "",
}


class _Rendered(NamedTuple):
    """One job rendered: the comments printed before its objects in YAML, the objects (Secret data
    redacted), and whether the hook would create them (the job is not Invalid)."""

    comments: str
    children: list[dict[str, Any]]
    ok: bool


# --- render ----------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from app.cli.cluster_file import read_cluster
    from app.settings import SettingsError

    if args.output == "json" and args.status:
        complain(
            COMMAND,
            "--status prints each status as YAML comments, which JSON has no place for",
            "leave out --status, or print YAML (-o yaml)",
        )
        return EXIT_UNUSABLE
    if args.nodes == "-" and args.file == "-":
        complain(COMMAND, "FILE and --nodes cannot both be standard input (-)", "give one of them as a file")
        return EXIT_UNUSABLE
    try:
        settings = _render_settings(args)
        jobs = mpijobs(documents(args.file), source_name(args.file), "rendered", COMMAND)
        cluster = read_cluster(args.nodes) if args.nodes is not None else None
    except (InputError, SettingsError) as err:
        complain(COMMAND, str(err))
        return EXIT_UNUSABLE
    if not all(_served(doc, args.file) for doc in jobs):
        return EXIT_UNUSABLE
    rendered = [_render_job(doc, settings, args, cluster) for doc in jobs]
    if args.output == "json":  # as `kubectl get -o json` prints several objects
        items = [child for job in rendered for child in job.children]
        listed = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
        sys.stdout.write(json.dumps(listed, indent=4) + "\n")
    else:
        sys.stdout.write("".join(job.comments + dump_all(job.children) for job in rendered))
    return EXIT_OK if all(job.ok for job in rendered) else EXIT_FINDINGS


def _served(doc: Document, path: str) -> bool:
    """Whether the hook reads the job's apiVersion; if not, says what to do."""
    version = doc.data.get("apiVersion")
    if version == API_VERSION:
        return True
    where = f"{doc.source}: MPIJob {job_name(doc.data)} is {version!s:.40}, not {API_VERSION}"
    if version in OLD_API_VERSIONS:
        complain(COMMAND, where, f"run `mpijob convert {shlex.quote(path)} > new.yaml` first")
    else:
        complain(COMMAND, f"{where} (no MPI operator served it)", f"write apiVersion: {API_VERSION}")
    return False


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


def _controller(gang_scheduling: str, *, customize: bool = False) -> dict[str, Any]:
    """A CompositeController as the matching overlay declares it: with gang scheduling, its PodGroup child
    (and the Workload, for the Workload API); ``customize``: with the customize hook the deployed one has,
    through which the hook receives launcher Pods and Nodes."""
    from app.kube.gang import gang_scheduler

    spec: dict[str, Any] = {"hooks": {"customize": {"version": "v2"}}} if customize else {}
    scheduler = gang_scheduler(gang_scheduling)
    if scheduler is not None:
        spec["childResources"] = [
            {"apiVersion": scheduler.api_version, "resource": r} for r in scheduler.resources
        ]
    return {"spec": spec} if spec else {}


def _sync(
    job: dict[str, Any],
    settings: Any,
    children: dict[str, dict[str, Any]],
    related: dict[str, dict[str, Any]] | None = None,
) -> Any:
    from app.core.sync import sync
    from app.kube.request import decode_request

    controller = _controller(settings.gang_scheduling, customize=related is not None)
    body = orjson.dumps(
        {"controller": controller, "parent": job, "children": children, "related": related or {}}
    )
    return sync(decode_request(body), now=datetime.now(UTC), keys=settings.keys, config=settings.sync_config)


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
    return _sync({**job, "status": first.status}, settings, _observed(first, ready=True))


def _observed(
    result: Any, *, ready: bool, cluster: Cluster | None = None, namespace: str = ""
) -> dict[str, dict[str, Any]]:
    """A sync's children as the next sync observes them: each Pod Running and Ready with ``ready``, bound
    to the node ``cluster`` binds it to."""
    children: dict[str, dict[str, Any]] = {}
    for child in result.children:
        child = dict(child)
        metadata = child.get("metadata") or {}
        if child.get("kind") == "Pod":
            if ready:
                child["status"] = {
                    "phase": PodPhase.RUNNING.value,
                    "conditions": [{"type": "Ready", "status": "True"}],
                }
            node = cluster.node_of(namespace, str(metadata.get("name"))) if cluster is not None else ""
            if node:
                child["spec"] = {**child.get("spec", {}), "nodeName": node}
        key = f"{child.get('kind')}.{child.get('apiVersion')}"
        children.setdefault(key, {})[f"{metadata.get('namespace')}/{metadata.get('name')}"] = child
    return children


def _bound(job: dict[str, Any], first: Any, settings: Any, cluster: Cluster, *, ready: bool) -> Any:
    """The syncs after the first one, with the job's Pods bound as ``cluster`` binds them, until the
    children stop changing: the hostfile ordered (or still pending), stored, then the launcher Job."""
    namespace = job["metadata"]["namespace"]
    related = {
        "Node.v1": dict(cluster.nodes),
        "Pod.v1": {
            f"{namespace}/{pod['metadata']['name']}": pod
            for pod in cluster.launcher_pods(namespace, job["metadata"].get("name", ""))
        },
    }
    result = first
    for _ in range(_MAX_SYNCS):
        following = _sync(
            {**job, "status": result.status},
            settings,
            _observed(result, ready=ready, cluster=cluster, namespace=namespace),
            related,
        )
        if following.children == result.children:
            return following
        result = following
    return result


def _launcher_waits(result: Any) -> bool:
    """Workers but no launcher Job: a valid ``WaitForWorkersReady`` job before its workers are Ready (a
    suspended job has neither, an ``AtStartup`` one both)."""
    kinds = {child.get("kind") for child in result.children}
    return "Pod" in kinds and "Job" not in kinds


def _synced(doc: Document, settings: Any, args: argparse.Namespace, cluster: Cluster | None) -> Any:
    """The hook's answer to the first sync, then to the syncs ``--workers-ready`` and ``--nodes`` ask for;
    says why a launcher Job a ``WaitForWorkersReady`` job waits for is missing."""
    result, job = _first_sync(doc.data, settings, args.namespace)
    if cluster is not None:
        result = _bound(job, result, settings, cluster, ready=args.workers_ready)
    elif _launcher_waits(result) and args.workers_ready:
        result = _once_workers_ready(job, result, settings)
    policy = (
        (job.get("spec") or {}).get("launcherCreationPolicy") if isinstance(job.get("spec"), dict) else None
    )
    if (
        _launcher_waits(result)
        and not args.workers_ready
        and policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
    ):
        complain(
            COMMAND,
            f"{doc.source}: MPIJob {job_name(doc.data)} has no launcher Job yet (launcherCreationPolicy"
            " WaitForWorkersReady creates it once every worker Pod is Ready)",
            "--workers-ready renders it",
        )
    return result, job


def _render_job(doc: Document, settings: Any, args: argparse.Namespace, cluster: Cluster | None) -> _Rendered:
    from app.core.sync import Outcome
    from app.kube.request import RequestError

    try:
        result, job = _synced(doc, settings, args, cluster)
    except RequestError as err:
        complain(COMMAND, f"{doc.source}: MPIJob {job_name(doc.data)}: {err}")
        return _Rendered("", [], ok=False)
    conditions = result.status.get("conditions") or []
    _say_what_is_wrong(doc, conditions, args.file)
    invalid = result.outcome == Outcome.INVALID
    summary = ", ".join(f"{c['type']}={c['status']}" for c in conditions)
    text = f"# MPIJob {result.namespace}/{result.name}: {summary}\n"
    if cluster is not None and not invalid:
        text += _order_summary(doc, job, result, cluster)
    if args.status:
        status = yaml.safe_dump({"status": result.status}, sort_keys=False)
        text += "".join(f"# {line}\n" for line in status.splitlines())
    return _Rendered(text, [redact(child) for child in result.children], ok=not invalid)


def _say_what_is_wrong(doc: Document, conditions: list[dict[str, Any]], path: str) -> None:
    """Each condition by which the hook would say something is wrong with the job, as an error line: a
    ``Warning=True`` in a comment is easy to miss, and the job may not be what its author meant."""
    where = f"{doc.source}: MPIJob {job_name(doc.data)}"
    for condition in conditions:
        kind, message = condition.get("type"), condition.get("message") or ""
        if kind not in _FIXES or condition.get("status") != "True":
            continue
        fix = _FIXES[kind].format(file=shlex.quote(path))
        if kind == ConditionType.INVALID:
            complain(COMMAND, f"{where} is invalid, nothing would be created: {message}", fix)
        else:
            complain(COMMAND, f"{where}: the hook would set {kind}: {message}", fix)


def redact(child: dict[str, Any]) -> dict[str, Any]:
    """A preview must not print a private key."""
    if child.get("kind") == "Secret":
        return {**child, "data": dict.fromkeys(child.get("data") or {}, REDACTED)}
    return child


def _order_summary(doc: Document, job: dict[str, Any], result: Any, cluster: Cluster) -> str:
    """``--nodes``: the rendered order header (the hostfile's first line: where its order stands) as a comment
    on stdout; on stderr, why it is not ordered by the nodes of ``cluster``."""
    from app.children.hostfile_order_lines import MARK
    from app.kube import names

    where = f"{doc.source}: MPIJob {job_name(job)}"
    if not asks_topology_order(job["metadata"].get("annotations") or {}):
        complain(
            COMMAND,
            f"{where} keeps upstream's hostfile order, so the nodes in {cluster.source} change nothing",
            f"annotate it {ORDER_ANNOTATION}: topology to order its hostfile by them",
        )
        return ""
    config: dict[str, Any] = next((c for c in result.children if c.get("kind") == "ConfigMap"), {})
    first = str((config.get("data") or {}).get(names.HOSTFILE_KEY, "")).partition("\n")[0]
    if first.startswith(MARK):
        _say_unbound(where, job, result, cluster)
        return first + "\n"
    return ""


def _say_unbound(where: str, job: dict[str, Any], result: Any, cluster: Cluster) -> None:
    """Why the hostfile is not (yet) in the order of ``cluster``'s nodes: Pods it does not bind, Nodes it
    lacks, a launcher-as-worker without its Pod."""
    namespace = job["metadata"]["namespace"]
    pods = [str(c["metadata"]["name"]) for c in result.children if c.get("kind") == "Pod"]
    unbound = [pod for pod in pods if not cluster.node_of(namespace, pod)]
    unknown = sorted(
        {node for pod in pods if (node := cluster.node_of(namespace, pod)) not in cluster.nodes} - {""}
    )
    if unbound:
        complain(
            COMMAND,
            f"{where}: {_some(unbound)} not bound to a node in {cluster.source}, so the hostfile keeps"
            " upstream's order until every host is",
            f"bind them in {cluster.source} (spec.nodeName) to render the order",
        )
    if unknown:
        complain(
            COMMAND,
            f"{where}: {cluster.source} has no Node {_some(unknown)}, so its Pods sort as if it had no"
            " labels",
            f"add the Node to {cluster.source} (kubectl get nodes,pods -o yaml prints them all)",
        )
    if job.get("spec", {}).get("runLauncherAsWorker") and not any(
        pod.get("spec", {}).get("nodeName") for pod in cluster.launcher_pods(namespace, job_name(job))
    ):
        complain(
            COMMAND,
            f"{where}: no launcher Pod bound to a node in {cluster.source}, and the order waits for it too",
            f"add the launcher Pod, bound, to {cluster.source}",
        )


def _some(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
