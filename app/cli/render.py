"""What ``mpijob render`` does and prints: YAML to stdout, the rest to stderr.

``render`` runs the hook's own ``sync`` on a first-sync request built from the file, so what it prints is what
the hook would ask Metacontroller to create. ``--workers-ready`` and ``--nodes`` sync again with the first
sync's children observed Ready, or bound to the nodes of ``kubectl get nodes,pods -o yaml``
(``app.cli.cluster_file``): the hook's own plan orders the hostfile then.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from app.api.hostfile_order_annotations import ORDER_ANNOTATION, asks_topology_order
from app.api.types import API_VERSION, OLD_API_VERSIONS, LauncherCreationPolicy
from app.cli.commands import documents, error, job_name, mpijobs
from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE
from app.cli.yamlio import dump_all, source_name
from app.kube.pod_phase import PodPhase
from app.kube.yamltext import Document, InputError

if TYPE_CHECKING:
    from app.cli.cluster_file import Cluster

REDACTED = "<redacted>"
# ``render --nodes``: the syncs after the first one until the children stop changing (hostfile ordered,
# stored, launcher created, the same again); one more than that takes.
_MAX_SYNCS = 5


# --- render ----------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from app.cli.cluster_file import read_cluster
    from app.settings import SettingsError

    try:
        if args.nodes == "-" and args.file == "-":
            raise InputError("FILE and --nodes cannot both be standard input (-)")
        settings = _render_settings(args)
        jobs = mpijobs(documents(args.file), source_name(args.file), "rendered")
        cluster = read_cluster(args.nodes) if args.nodes is not None else None
    except (InputError, SettingsError) as err:
        error(str(err))
        return EXIT_UNUSABLE
    for doc in jobs:
        version = doc.data.get("apiVersion")
        if version != API_VERSION:
            advice = f"no MPI operator served it; write apiVersion: {API_VERSION}"
            if version in OLD_API_VERSIONS:
                advice = f"run `mpijob convert {shlex.quote(args.file)} > new.yaml` first"
            error(
                f"{doc.source}: MPIJob {job_name(doc.data)} is {version!s:.40}, not {API_VERSION}: {advice}"
            )
            return EXIT_UNUSABLE
    chunks, invalid = [], False
    for doc in jobs:
        text, ok = _render_job(doc, settings, args, cluster)
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
        error(
            f"{doc.source}: MPIJob {job_name(doc.data)}: no launcher Job yet: launcherCreationPolicy"
            " WaitForWorkersReady creates it once every worker Pod is Ready; --workers-ready renders it"
        )
    return result, job


def _render_job(
    doc: Document, settings: Any, args: argparse.Namespace, cluster: Cluster | None
) -> tuple[str, bool]:
    from app.kube.request import RequestError

    try:
        result, job = _synced(doc, settings, args, cluster)
    except RequestError as err:
        error(f"{doc.source}: MPIJob {job_name(doc.data)}: {err}")
        return "", False
    from app.core.sync import Outcome

    conditions = result.status.get("conditions") or []
    invalid = result.outcome == Outcome.INVALID
    if invalid:
        message = next((c.get("message") for c in conditions if c.get("type") == "Invalid"), "")
        error(f"{doc.source}: MPIJob {job_name(doc.data)} is invalid, nothing would be created: {message}")
    summary = ", ".join(f"{c['type']}={c['status']}" for c in conditions)
    text = f"# MPIJob {result.namespace}/{result.name}: {summary}\n"
    if cluster is not None and not invalid:
        text += _order_summary(doc, job, result, cluster)
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


def _order_summary(doc: Document, job: dict[str, Any], result: Any, cluster: Cluster) -> str:
    """``--nodes``: the rendered order header (the hostfile's first line: where its order stands) as a comment
    on stdout; on stderr, why it is not ordered by the nodes of ``cluster``."""
    from app.children.hostfile_order_lines import MARK
    from app.kube import names

    where = f"{doc.source}: MPIJob {job_name(job)}"
    if not asks_topology_order(job["metadata"].get("annotations") or {}):
        error(
            f"{where} keeps upstream's hostfile order (no annotation {ORDER_ANNOTATION}: topology):"
            f" the nodes in {cluster.source} change nothing"
        )
        return ""
    config: dict[str, Any] = next((c for c in result.children if c.get("kind") == "ConfigMap"), {})
    first = str((config.get("data") or {}).get(names.HOSTFILE_KEY, "")).partition("\n")[0]
    if not first.startswith(MARK):
        return ""
    namespace = job["metadata"]["namespace"]
    pods = [str(c["metadata"]["name"]) for c in result.children if c.get("kind") == "Pod"]
    unbound = [pod for pod in pods if not cluster.node_of(namespace, pod)]
    unknown = sorted(
        {node for pod in pods if (node := cluster.node_of(namespace, pod)) not in cluster.nodes} - {""}
    )
    if unbound:
        error(
            f"{where}: {_some(unbound)} not bound to a node in {cluster.source}: the hostfile keeps"
            " upstream's order until every host is"
        )
    if unknown:
        error(f"{where}: {cluster.source} has no Node {_some(unknown)}: its Pods sort as if it had no labels")
    if job.get("spec", {}).get("runLauncherAsWorker") and not any(
        pod.get("spec", {}).get("nodeName") for pod in cluster.launcher_pods(namespace, job_name(job))
    ):
        error(f"{where}: no launcher Pod bound to a node in {cluster.source}: the order waits for it too")
    return first + "\n"


def _some(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
