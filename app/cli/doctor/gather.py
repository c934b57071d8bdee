"""Every read the doctor makes, in one place: GET only, through ``app.cluster.reads``, into a ``Snapshot``."""

from __future__ import annotations

from typing import Any

from app.api.types import API_VERSION
from app.children.podgroup import (
    POD_SCHEDULING_GROUP,
    SCHEDULER_PLUGINS_GROUP_LABEL,
    VOLCANO_GROUP_ANNOTATION,
)
from app.cli.doctor import queueing, shapes, workload_api
from app.cli.doctor.shapes import MPIJOB, Required
from app.cli.doctor.snapshot import Snapshot, newest_launcher_pod
from app.cli.terminal import printable
from app.cluster.reads import CannotRead, Read, Reader
from app.cluster.untrusted import Hostile
from app.kube import names
from app.kube.gang import PODGROUP_API_VERSIONS, WORKLOAD_API_VERSIONS, child_resources
from app.kube.gang import RESOURCE as PODGROUPS
from app.kube.pod_phase import PodPhase
from app.kube.request import ObservedLauncherJob, ObservedPod, ObservedPodGroup

LOG_LINES = 40
# How a Pod names its PodGroup: Volcano's annotation, scheduler-plugins' label.
GROUP_MARKS = (VOLCANO_GROUP_ANNOTATION, SCHEDULER_PLUGINS_GROUP_LABEL)
# The kinds each read may answer with (an object that names another kind is refused).
_KINDS = {
    "mpijobs.kubeflow.org": ("MPIJob",),
    "jobs.batch": ("Job",),
    "services": ("Service",),
    "secrets": ("PartialObjectMetadata", "Secret"),
    "configmaps": ("ConfigMap",),
    **{f"{PODGROUPS}.{version.split('/')[0]}": ("PodGroup",) for version in PODGROUP_API_VERSIONS},
    workload_api.CONTROLLERS: ("CompositeController",),
}
_DROPPED_ANNOTATIONS = (names.LAST_APPLIED_ANNOTATION, names.KUBECTL_LAST_APPLIED_ANNOTATION)


def gather(reader: Reader, namespace: str, name: str, now: str) -> Snapshot:
    """Every read, each answer checked against the shape the checks read (``shapes.py``) as it comes in: a
    hostile answer is ``CannotRead`` naming the read and the field."""
    try:
        return _gather(reader, namespace, name, now)
    except Hostile as err:
        raise CannotRead(str(err)) from None


def _gather(reader: Reader, namespace: str, name: str, now: str) -> Snapshot:
    reader.check_kubernetes()  # else a 404 for every path would read as a missing job or CRD
    snap = Snapshot(namespace, name, now)
    core, batch = f"/api/v1/namespaces/{namespace}", f"/apis/batch/v1/namespaces/{namespace}"
    mpijobs = f"/apis/{API_VERSION}/namespaces/{namespace}/mpijobs"
    snap.job = _object(reader, Read("get", "mpijobs.kubeflow.org", namespace, f"{mpijobs}/{name}"), MPIJOB)
    if snap.job is None:
        snap.served = (
            reader.json(Read("get", "the MPIJob API", namespace, f"/apis/{API_VERSION}")) is not None
        )
        return snap
    launcher = Read("get", "jobs.batch", namespace, f"{batch}/jobs/{names.launcher_name(name)}")
    snap.launcher = _object(reader, launcher, shapes.OBJECT, ObservedLauncherJob)
    selector = {"labelSelector": f"{names.JOB_NAME_LABEL}={name}"}
    snap.pods = _items(reader, Read("list", "pods", namespace, f"{core}/pods", selector), shapes.POD)
    snap.service = _object(
        reader, Read("get", "services", namespace, f"{core}/services/{name}"), shapes.OBJECT
    )
    secret = Read("get", "secrets", namespace, f"{core}/secrets/{names.ssh_secret_name(name)}")
    snap.secret = _metadata_only(_object(reader, secret, shapes.OBJECT, metadata_only=True))
    configmap = Read("get", "configmaps", namespace, f"{core}/configmaps/{names.config_name(name)}")
    snap.config = _object(reader, configmap, shapes.CONFIGMAP)
    snap.podgroups = _podgroups(reader, namespace, name, snap.pods)
    snap.workloads = _kueue_workloads(reader, namespace, snap.job)
    if workload_api.matters(snap.job):
        snap.workload_apis = _workload_apis(reader)
        snap.controller_children, snap.controller_unreadable = _controller_children(reader)
    events = _items(reader, Read("list", "events", namespace, f"{core}/events"), shapes.EVENT)
    snap.events = _events_about(events, name, snap.pods)
    snap.logs = _logs(reader, namespace, snap.pods)
    return snap


def _object(
    reader: Reader,
    read: Read,
    shape: object,
    decoded_as: type[ObservedLauncherJob | ObservedPodGroup] | None = None,
    *,
    metadata_only: bool = False,
) -> dict[str, Any] | None:
    """One object, checked (its kind, when it says one, and the shape the checks read), then trimmed."""
    obj = reader.json(read, metadata_only=metadata_only)
    if obj is None:
        return None
    where = f"the API server's answer to GET {read.path}"
    kind, wanted = obj.get("kind"), _KINDS[read.resource]
    if kind is not None and kind not in wanted:
        raise Hostile(f"{where}: a {printable(kind, 60)} where a {wanted[0]} should be")
    shapes.check(obj, shape, where)
    if decoded_as is not None:
        shapes.as_the_hook_reads(obj, decoded_as, where)
    return _trim(obj)


def _items(reader: Reader, read: Read, shape: object) -> list[dict[str, Any]]:
    where = f"the API server's answer to LIST {read.path}"
    items = reader.items(read)
    for index, item in enumerate(items):
        shapes.check(item, Required(shape), where, f"items[{index}]")
        if shape is shapes.POD:
            shapes.as_the_hook_reads(item, ObservedPod, f"{where}: items[{index}]")
    return [_trim(item) or {} for item in items]


def _trim(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """Without what no check reads and what would only make a saved snapshot large."""
    if obj is None:
        return None
    metadata = dict(obj.get("metadata") or {})
    metadata.pop("managedFields", None)
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k not in _DROPPED_ANNOTATIONS
    }
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return {**obj, "metadata": metadata}


def _metadata_only(secret: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Secret's metadata and type, whatever the server sent (an old one may ignore the metadata-only
    request and send the data too: it is dropped here, before anything else sees it)."""
    if secret is None:
        return None
    trimmed = _trim({"metadata": secret.get("metadata") or {}}) or {}
    return {"kind": "Secret", "metadata": trimmed["metadata"]}


def _podgroups(reader: Reader, namespace: str, name: str, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The job's PodGroup in each gang scheduler's API that is served. A permission missing for a kind no
    Pod of the job uses is no reason to stop (most clusters run no gang scheduler)."""
    found = []
    for api_version in PODGROUP_API_VERSIONS:
        group = api_version.split("/")[0]
        path = f"/apis/{api_version}/namespaces/{namespace}/{PODGROUPS}/{names.podgroup_name(name)}"
        try:
            read = Read("get", f"{PODGROUPS}.{group}", namespace, path)
            podgroup = _object(reader, read, shapes.OBJECT, ObservedPodGroup)
        except CannotRead as err:
            if not err.permission or _uses_a_podgroup(pods):
                raise
            continue
        if podgroup is not None:
            found.append(podgroup)
    return found


def _kueue_workloads(reader: Reader, namespace: str, job: dict[str, Any]) -> list[dict[str, Any]]:
    """Kueue's Workloads of a job that names a Kueue queue, in the newest Workload API the cluster serves;
    none when it names no queue or no Kueue API is served."""
    uid = (job.get("metadata") or {}).get("uid")
    if not queueing.queue_of(job) or not isinstance(uid, str):
        return []
    selector = {"labelSelector": f"{queueing.JOB_UID_LABEL}={uid}"}
    for api_version in queueing.WORKLOAD_API_VERSIONS:
        path = f"/apis/{api_version}/namespaces/{namespace}/{queueing.WORKLOADS}"
        read = Read("list", f"{queueing.WORKLOADS}.kueue.x-k8s.io", namespace, path, selector)
        if reader.json(Read("get", "the Kueue API", namespace, f"/apis/{api_version}")) is not None:
            return _items(reader, read, shapes.OBJECT)
    return []


def _workload_apis(reader: Reader) -> dict[str, list[str]]:
    """Each Workload API version the API server serves -> which of the children's resources it lists (a
    version served without them: its feature gate is off)."""
    served = {}
    for version in WORKLOAD_API_VERSIONS:
        read = Read("get", "the Workload API", "", f"/apis/{version}")
        listing = reader.json(read)
        if listing is None:
            continue
        shapes.check(listing, shapes.API_RESOURCES, f"the API server's answer to GET {read.path}")
        names_listed = {r.get("name") for r in listing.get("resources") or []}
        served[version] = [r for r in child_resources(version) if r in names_listed]
    return served


def _controller_children(reader: Reader) -> tuple[list[dict[str, str]] | None, str]:
    """The CompositeController's declared children, or None and why not: not found, or not readable (a
    cluster-scoped read few troubleshooters may make: no reason to stop)."""
    read = Read("get", workload_api.CONTROLLERS, "", workload_api.CONTROLLER_PATH)
    try:
        controller = _object(reader, read, shapes.CONTROLLER)
    except CannotRead as err:
        if not err.permission:
            raise
        return None, f"not readable (permission missing: {err.permission})"
    if controller is None:
        return None, "not found"
    children = (controller.get("spec") or {}).get("childResources") or []
    return [
        {"apiVersion": str(c.get("apiVersion") or ""), "resource": str(c.get("resource") or "")}
        for c in children
    ], ""


def _uses_a_podgroup(pods: list[dict[str, Any]]) -> bool:
    for pod in pods:
        metadata = pod.get("metadata") or {}
        marks = {**(metadata.get("labels") or {}), **(metadata.get("annotations") or {})}
        if any(mark in marks for mark in GROUP_MARKS) or (pod.get("spec") or {}).get(POD_SCHEDULING_GROUP):
            return True
    return False


def _events_about(
    events: list[dict[str, Any]], name: str, pods: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The Events of the job and of its children, oldest first."""
    ours = {name, names.launcher_name(name), names.config_name(name), names.ssh_secret_name(name)}
    ours |= {str((pod.get("metadata") or {}).get("name")) for pod in pods}
    about = [e for e in events if (e.get("involvedObject") or {}).get("name") in ours]
    return sorted((_trim(e) or {} for e in about), key=_event_time)


def _event_time(event: dict[str, Any]) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


def _logs(reader: Reader, namespace: str, pods: list[dict[str, Any]]) -> dict[str, str]:
    """The tails of the newest launcher Pod's main container and of its wait-for-workers container, and of
    the first worker whose container ended (a worker's sshd says there why it stopped)."""
    logs: dict[str, str] = {}
    launcher = newest_launcher_pod(pods)
    if launcher is not None:
        spec = launcher.get("spec") or {}
        wanted = [str(c.get("name")) for c in (spec.get("containers") or [])[:1]]
        init = {str(c.get("name")) for c in spec.get("initContainers") or []}
        wanted += [names.WAIT_FOR_WORKERS_CONTAINER] if names.WAIT_FOR_WORKERS_CONTAINER in init else []
        for container in wanted:
            logs.update(_log(reader, namespace, launcher, container))
    ended = next((p for p in _workers_by_index(pods) if _ended(p)), None)
    if ended is not None:
        first = ((ended.get("spec") or {}).get("containers") or [{}])[0]
        logs.update(_log(reader, namespace, ended, str(first.get("name"))))
    return logs


def _log(reader: Reader, namespace: str, pod: dict[str, Any], container: str) -> dict[str, str]:
    name = pod["metadata"]["name"]
    params: dict[str, str | int] = {"container": container, "tailLines": LOG_LINES}
    if _restarted_and_waiting(pod, container):
        params["previous"] = "true"
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
    text = reader.text(Read("get", "pods/log", namespace, path, params))
    return {f"{name}/{container}": text} if text else {}


def _workers_by_index(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    workers = [
        p for p in pods if (p["metadata"].get("labels") or {}).get(names.JOB_ROLE_LABEL) == names.WORKER
    ]
    return sorted(workers, key=lambda p: (len(p["metadata"]["name"]), p["metadata"]["name"]))


def _ended(pod: dict[str, Any]) -> bool:
    """A worker whose container stopped: the Pod failed, or its container exited and waits to restart."""
    status = pod.get("status") or {}
    if status.get("phase") == PodPhase.FAILED:
        return True
    return any("terminated" in (c.get("lastState") or {}) for c in status.get("containerStatuses") or [])


def _restarted_and_waiting(pod: dict[str, Any], container: str) -> bool:
    """A container restarted in place and not running now: its last run's log is the one that says why."""
    status = pod.get("status") or {}
    for entry in status.get("containerStatuses") or []:
        if entry.get("name") == container:
            return bool(entry.get("restartCount")) and "running" not in (entry.get("state") or {})
    return False
