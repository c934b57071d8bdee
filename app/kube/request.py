"""Decode a Metacontroller hook request without materialising what the hook never reads.

The parent stays raw JSON (pydantic parses it); observed children become small msgspec structs holding
only names, labels, phases and conditions. A 4,096-worker request is ~31 MB; decoding it this way is
an order of magnitude cheaper than ``json.loads``. Children are indexed by ``metadata.name``, never by
map key, so hook versions v1 (``name``) and v2 (``namespace/name``) both work.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.api.types import API_VERSION, KIND
from app.kube import depth, gang
from app.kube.controller import Controller


class RequestError(ValueError):
    """The body is not a Metacontroller sync request for an MPIJob. The message never echoes input."""


_NULL = msgspec.Raw(b"null")
_string_map = msgspec.json.Decoder(dict[str, str] | None)


class Meta(msgspec.Struct, frozen=True, gc=False):
    """An observed object's identity. Labels and annotations stay raw JSON (a slice of the body) until
    read: a sync reads them only for launcher Pods and jobs left alone, and decoding the last-applied
    annotation of 4,096 worker Pods would be a quarter of the whole sync."""

    name: str = ""
    namespace: str = ""
    labels_json: msgspec.Raw = msgspec.field(default=_NULL, name="labels")
    annotations_json: msgspec.Raw = msgspec.field(default=_NULL, name="annotations")
    creationTimestamp: str | None = None

    @property
    def labels(self) -> dict[str, str]:
        return _decode_map(self.labels_json)

    @property
    def annotations(self) -> dict[str, str]:
        return _decode_map(self.annotations_json)


def _decode_map(raw: msgspec.Raw) -> dict[str, str]:
    """A string map, or empty if it is not one (the apiserver only stores string maps here)."""
    try:
        return _string_map.decode(raw) or {}
    except msgspec.MsgspecError:
        return {}


class ObservedCondition(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None


class PodCondition(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    status: str = ""
    # PodScheduled False: Unschedulable (the scheduler tried) or SchedulingGated (it has not);
    # DisruptionTarget True: PreemptionByScheduler, with the scheduler's message.
    reason: str | None = None
    message: str | None = None


class Terminated(msgspec.Struct, frozen=True, gc=False):
    exitCode: int = 0
    reason: str | None = None
    message: str | None = None


class ContainerState(msgspec.Struct, frozen=True, gc=False):
    terminated: Terminated | None = None


class ContainerStatus(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    state: ContainerState | None = None
    lastState: ContainerState | None = None

    @property
    def last_termination(self) -> Terminated | None:
        """How the container last ended: now, else before its restart (restartPolicy OnFailure)."""
        for state in (self.state, self.lastState):
            if state is not None and state.terminated is not None:
                return state.terminated
        return None


_container_statuses = msgspec.json.Decoder(list[ContainerStatus] | None)


class PodStatus(msgspec.Struct, frozen=True, gc=False):
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    conditions: list[PodCondition] | None = None
    # Raw until read: only a failed Pod's are (decoding 4,096 workers' would cost every sync).
    container_statuses_json: msgspec.Raw = msgspec.field(default=_NULL, name="containerStatuses")

    @property
    def container_statuses(self) -> list[ContainerStatus]:
        """The containers' statuses, or none if they are not of that shape."""
        try:
            return _container_statuses.decode(self.container_statuses_json) or []
        except msgspec.MsgspecError:
            return []


class PodSpec(msgspec.Struct, frozen=True, gc=False):
    # The node the scheduler bound the Pod to ("" until then).
    nodeName: str = ""


class ObservedPod(msgspec.Struct, frozen=True, gc=False):
    metadata: Meta = Meta()
    spec: PodSpec = PodSpec()
    status: PodStatus | None = None

    @property
    def phase(self) -> str:
        return (self.status.phase if self.status else None) or ""

    @property
    def ready(self) -> bool:
        conditions = (self.status.conditions if self.status else None) or []
        return any(c.type == "Ready" and c.status == "True" for c in conditions)


class LauncherJobSpec(msgspec.Struct, frozen=True, gc=False):
    suspend: bool | None = None


class ObservedLauncherJobStatus(msgspec.Struct, frozen=True, gc=False):
    active: int | None = None
    ready: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    conditions: list[ObservedCondition] | None = None
    completionTime: str | None = None


class ObservedLauncherJob(msgspec.Struct, frozen=True, gc=False):
    metadata: Meta = Meta()
    spec: LauncherJobSpec | None = None
    status: ObservedLauncherJobStatus | None = None

    def condition(self, kind: str) -> ObservedCondition | None:
        conditions = (self.status.conditions if self.status else None) or []
        return next((c for c in conditions if c.type == kind and c.status == "True"), None)

    @property
    def failed_pods(self) -> int:
        return (self.status.failed if self.status else None) or 0


class ObservedSecret(msgspec.Struct, frozen=True, gc=False):
    metadata: Meta = Meta()
    data: dict[str, str] | None = None


class ObservedObject(msgspec.Struct, frozen=True, gc=False):
    metadata: Meta = Meta()


class ObservedConfigMap(msgspec.Struct, frozen=True, gc=False):
    metadata: Meta = Meta()
    data: dict[str, str] | None = None


class ObservedImmutable(msgspec.Struct, frozen=True, gc=False):
    """A Workload API child: its spec is immutable, so what is stored is what was applied (``freeze``)."""

    metadata: Meta = Meta()
    spec: dict[str, Any] | None = None


class PodGroupStatus(msgspec.Struct, frozen=True, gc=False):
    """What a gang scheduler says of a PodGroup: Volcano's and scheduler-plugins' ``phase``, Volcano's and
    the Workload API's ``conditions`` (``app.core.observed`` reads which says the gang waits)."""

    phase: str | None = None
    conditions: list[ObservedCondition] | None = None

    def condition(self, kind: str) -> ObservedCondition | None:
        return next((c for c in self.conditions or [] if c.type == kind), None)


class PodGroupSpec(msgspec.Struct, frozen=True, gc=False):
    """What of Volcano's or scheduler-plugins' PodGroup spec the hook reads back: the gang size the scheduler
    holds the Pods to, and Volcano's queue."""

    min_member: int | None = msgspec.field(default=None, name="minMember")
    queue: str | None = None


class ObservedPodGroup(msgspec.Struct, frozen=True, gc=False):
    """Volcano's or scheduler-plugins' PodGroup: its name, what it asks and its scheduler's status."""

    metadata: Meta = Meta()
    spec: PodGroupSpec | None = None
    status: PodGroupStatus | None = None


class ObservedWorkloadPodGroup(ObservedImmutable, frozen=True, gc=False):
    """The Workload API's PodGroup: an immutable spec, and the scheduler's ``PodGroupScheduled``."""

    status: PodGroupStatus | None = None


class Children(msgspec.Struct, frozen=True, gc=False):
    pods: dict[str, ObservedPod] | None = msgspec.field(default=None, name="Pod.v1")
    launcher_jobs: dict[str, ObservedLauncherJob] | None = msgspec.field(default=None, name="Job.batch/v1")
    services: dict[str, ObservedObject] | None = msgspec.field(default=None, name="Service.v1")
    secrets: dict[str, ObservedSecret] | None = msgspec.field(default=None, name="Secret.v1")
    configmaps: dict[str, ObservedConfigMap] | None = msgspec.field(default=None, name="ConfigMap.v1")
    volcano_podgroups: dict[str, ObservedPodGroup] | None = msgspec.field(
        default=None, name=f"{gang.KIND}.{gang.VOLCANO_API_VERSION}"
    )
    scheduler_plugins_podgroups: dict[str, ObservedPodGroup] | None = msgspec.field(
        default=None, name=f"{gang.KIND}.{gang.SCHEDULER_PLUGINS_API_VERSION}"
    )
    # The Workload API: 1.37's and 1.36's (a cluster serves one of them).
    workload_podgroups_v1beta1: dict[str, ObservedWorkloadPodGroup] | None = msgspec.field(
        default=None, name=f"{gang.KIND}.{gang.WORKLOAD_API_V1BETA1}"
    )
    workloads_v1beta1: dict[str, ObservedImmutable] | None = msgspec.field(
        default=None, name=f"{gang.WORKLOAD_KIND}.{gang.WORKLOAD_API_V1BETA1}"
    )
    workload_podgroups_v1alpha2: dict[str, ObservedWorkloadPodGroup] | None = msgspec.field(
        default=None, name=f"{gang.KIND}.{gang.WORKLOAD_API_V1ALPHA2}"
    )
    workloads_v1alpha2: dict[str, ObservedImmutable] | None = msgspec.field(
        default=None, name=f"{gang.WORKLOAD_KIND}.{gang.WORKLOAD_API_V1ALPHA2}"
    )

    def workload_podgroups(self, api_version: str) -> dict[str, ObservedWorkloadPodGroup] | None:
        """The Workload API's PodGroups observed in ``api_version``."""
        if api_version == gang.WORKLOAD_API_V1BETA1:
            return self.workload_podgroups_v1beta1
        return self.workload_podgroups_v1alpha2


class ObservedPriorityClass(msgspec.Struct, frozen=True, gc=False):
    metadata: Meta = Meta()
    value: int = 0


class ObservedNode(msgspec.Struct, frozen=True, gc=False):
    """A Node: only its name and labels are read (its status, often most of it, is skipped unread)."""

    metadata: Meta = Meta()


class Related(msgspec.Struct, frozen=True, gc=False):
    pods: dict[str, ObservedPod] | None = msgspec.field(default=None, name="Pod.v1")
    # Cluster-scoped, v2 hooks only, asked for an ordered job (its hostfile in topology order).
    nodes: dict[str, ObservedNode] | None = msgspec.field(default=None, name="Node.v1")
    # Cluster-scoped: delivered to hook version v2 only, when the customize hook asks (gang scheduling).
    priority_classes: dict[str, ObservedPriorityClass] | None = msgspec.field(
        default=None, name="PriorityClass.scheduling.k8s.io/v1"
    )

    @property
    def priority_values(self) -> dict[str, int]:
        """PriorityClass name -> value, for ranking replicas in a PodGroup's minResources."""
        return {pc.metadata.name: pc.value for pc in (self.priority_classes or {}).values()}


class ParentHead(msgspec.Struct, frozen=True, gc=False):
    """What the parent is: enough to check that the request is about an MPIJob."""

    apiVersion: str = ""
    kind: str = ""


class ParentName(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    namespace: str = ""
    # Whether the job is ordered (``app.api.hostfile_order_annotations``) decides what the hook asks for.
    annotations_json: msgspec.Raw = msgspec.field(default=_NULL, name="annotations")

    @property
    def annotations(self) -> dict[str, str]:
        return _decode_map(self.annotations_json)


class CustomizeParent(ParentHead, frozen=True, gc=False):
    """All the customize hook reads of its parent: what and who it is."""

    metadata: ParentName = ParentName()


class SyncRequest(msgspec.Struct, frozen=True, gc=False):
    # The parent stays raw: ``app.kube.parent`` reads it, once.
    parent: msgspec.Raw
    controller: Controller = Controller()
    children: Children = Children()
    related: Related = Related()
    # Not acted on (no finalize hook is declared), but a request where it is not a bool is malformed.
    finalizing: bool = False


class CustomizeRequest(msgspec.Struct, frozen=True, gc=False):
    parent: CustomizeParent
    controller: Controller = Controller()


_decoder = msgspec.json.Decoder(SyncRequest)
_head_decoder = msgspec.json.Decoder(ParentHead)
_customize_decoder = msgspec.json.Decoder(CustomizeRequest)


def decode_request(body: bytes) -> SyncRequest:
    """Decode and sanity-check a sync request body; raise ``RequestError`` with a message safe to return.
    The parent is only found here (its bytes, unread): its reader, ``app.kube.parent``, checks that it is an
    MPIJob as it parses it, so a parent the shell has judged before is not read again.

    ``body`` may be any bytes-like object: the shell passes a view of its read buffer, decoded in place and
    never copied (a copy would hold a 30 MB body twice). A body nested deeper than the decoder goes is
    decoded with what lies beyond ``depth.MPIJOB_MAX_DEPTH`` cut away. When the cut is in the parent, the
    parent keeps its bytes as sent: its reader (``app.kube.parent``) says where it is too deep, in an
    ``Invalid`` condition. Anywhere else it is a bad request."""
    if not body:
        raise RequestError("empty request body; expected a Metacontroller hook request")
    try:
        request, cut = _decode(body)
    except msgspec.ValidationError as err:
        raise RequestError(f"not a Metacontroller hook request: {_where(err)}") from None
    except msgspec.DecodeError:
        raise RequestError("request body is not valid JSON") from None
    except RecursionError:
        raise RequestError("request body nests too deeply") from None
    if cut is None:
        return request
    parent = depth.member(bytes(body), "parent") if cut.startswith("parent.") else None
    if parent is None:
        raise RequestError("request body nests too deeply")
    return msgspec.structs.replace(request, parent=msgspec.Raw(parent))


def decode_customize_request(body: bytes) -> CustomizeRequest:
    """The customize hook's request: its parent's identity and the CompositeController."""
    try:
        request = _customize_decoder.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        raise RequestError("not a Metacontroller customize request") from None
    check_parent(request.parent.apiVersion, request.parent.kind)
    if not request.parent.metadata.name:
        raise RequestError("customize request has no parent name")
    return request


def check_parent(api_version: object, kind: object) -> None:
    """A sync or customize request is about an MPIJob of the served version, or it is a bad request."""
    if kind != KIND or api_version != API_VERSION:
        raise RequestError(f"parent must be a {KIND} of apiVersion {API_VERSION}")


def check_parent_head(parent: bytes) -> None:
    """``check_parent`` of a parent whose whole does not parse (rare): its head is read from its bytes."""
    try:
        head = _head_decoder.decode(parent)
    except msgspec.ValidationError as err:
        raise RequestError(f"not a Metacontroller hook request: {_where(err)}") from None
    except msgspec.DecodeError:
        raise RequestError("request body is not valid JSON") from None
    check_parent(head.apiVersion, head.kind)


def _decode(body: bytes) -> tuple[SyncRequest, str | None]:
    """The request, and where it was cut when it nests deeper than the decoder goes (else None)."""
    try:
        return _decoder.decode(body), None
    except RecursionError:
        pruned, where = depth.prune(bytes(body))  # rare: only a body nested past msgspec's limit is copied
    return _decoder.decode(pruned), where or ""


def _where(err: msgspec.ValidationError) -> str:
    """Keep only the JSON path of a msgspec error: its type words are safe, values never appear."""
    text = str(err)
    return text if len(text) < 200 else text[:200]
