"""A fake Metacontroller: drives the sync hook through a job's life the way the real one would.

It keeps a small cluster of objects, builds each hook request exactly as Metacontroller does (every declared
child kind present, keys per hook version, related Pods from the customize hook), and applies the response
with Metacontroller's rules (``docs/architecture.md``, "The Metacontroller contract"):

- strict response: only ``status``, ``children``, ``resyncAfterSeconds``, ``finalized``; no ``null`` child;
  every child has ``kind``, the exact declared ``apiVersion`` and a ``metadata.name``;
- a ``controller-uid`` label that differs from the parent's UID aborts the sync (nothing applied);
- observed children left out of the response are deleted (unless already being deleted);
- absent children are created with uid, ownerReference, ``controller-uid`` and the last-applied annotation;
- ``OnDelete`` children are never updated; ``InPlace`` ones are updated when the desired object or the
  3-way merge differs from what is stored (a child's status and system metadata are not the hook's to
  change); ``Recreate`` ones are deleted instead (and created by the next sync); children being deleted
  are not touched; a name taken by someone else's object is left alone;
- the apiserver refuses (422) a changed spec of the Workload API's kinds, which is immutable;
- ``status`` replaces the parent's status wholesale, ``observedGeneration`` injected, and must satisfy the
  CRD's status schema (formats included; undeclared fields are pruned); it counts as a write whenever it
  differs from the stored one, so a pruned field or ``2.0`` for ``2`` writes on every sync;
- a parent being deleted gets its status written but its children are not managed.

It also plays the apiserver and the Job controller where a test needs it: uids and timestamps, launcher Pods,
Job conditions, TTL deletion, graceful Pod deletion. Counters say how many writes each sync caused, so a
test can prove a steady job causes none.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import yaml

from app.core.customize import customize
from app.core.intents import Event
from app.core.sync import Verdict, sync
from app.core.timings import Timing
from app.kube.keys import SeededKeys
from app.kube.request import decode_request
from app.server.memo import ParentMemo, remember
from app.settings import Settings
from tests.support import golden_store
from tests.support.builders import with_pod_status
from tests.support.kube_schema import CUSTOM_KINDS, custom_resource_schema, schema_errors
from tests.support.paths import ROOT

COMPOSITE_CONTROLLER = ROOT / "metacontroller" / "compositecontroller.yaml"
CRD = ROOT / "crds" / "kubeflow.org_mpijobs.yaml"
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
PRIORITY_CLASS_KEY = "PriorityClass.scheduling.k8s.io/v1"
NODE_KEY = "Node.v1"
RESPONSE_KEYS = {"status", "children", "resyncAfterSeconds", "finalized"}
KIND_OF_RESOURCE = {
    "jobs": "Job",
    "pods": "Pod",
    "services": "Service",
    "secrets": "Secret",
    "configmaps": "ConfigMap",
    "podgroups": "PodGroup",
    "workloads": "Workload",
}
# Kinds whose spec the apiserver never lets change (the Workload API, 1.37's and 1.36's).
IMMUTABLE_SPEC = {"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2"}
SYSTEM_FIELDS = (
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
START = datetime(2026, 5, 4, 9, 0, 0, tzinfo=UTC)
SEED = b"fake metacontroller test seed, not a secret"


class ContractViolation(AssertionError):
    """The hook answered something the real Metacontroller would reject or act on destructively."""


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _gvk_key(api_version: str, kind: str) -> str:
    """Metacontroller's outer key: ``Kind.version`` (core) or ``Kind.group/version``."""
    return f"{kind}.{api_version}"


@functools.cache
def _status_schema() -> dict[str, Any]:
    crd = yaml.load(CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v2beta1")
    return _plain_schema(version["schema"]["openAPIV3Schema"]["properties"]["status"])


@functools.cache
def _status_validator() -> jsonschema.protocols.Validator:
    """Checked against its metaschema once; validating a status is then cheap."""
    schema = _status_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


# The apiserver's ``date-time`` check (kube-openapi ``strfmt.IsDateTime``): a date, ``T``, hh:mm:ss, a zone.
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _is_date_time(value: str) -> bool:
    match = _DATE_TIME.fullmatch(value)
    if match is None:
        return False
    try:
        date.fromisoformat(match[1])
    except ValueError:
        return False
    return match[2] <= "23" and match[3] <= "59" and match[4] <= "59"


def _plain_schema(node: Any) -> Any:
    """Drop Kubernetes' ``x-`` extensions so jsonschema reads the rest as draft 7."""
    if isinstance(node, dict):
        return {k: _plain_schema(v) for k, v in node.items() if not k.startswith("x-")}
    if isinstance(node, list):
        return [_plain_schema(v) for v in node]
    return node


def _structural_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """The apiserver fills a custom resource's schema defaults (e.g. a Volcano PodGroup's queue)."""
    for name, prop in schema.get("properties", {}).items():
        if name not in obj and "default" in prop:
            obj[name] = copy.deepcopy(prop["default"])
        if isinstance(obj.get(name), dict):
            _structural_defaults(obj[name], prop)


@dataclass
class Writes:
    """What one sync did to the cluster."""

    status: int = 0
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.status + len(self.created) + len(self.updated) + len(self.deleted)


@dataclass
class Golden:
    """Checks (or records) a compact summary of every sync: the status written and each child returned.

    One ``steps.yaml`` per scenario: per step the whole status and, per child, a digest of the object the hook
    returned. The requests are outputs of this fake and are not stored; the children's full content is
    pinned by the single-sync golden files (``tests/golden/<case>/response.json``), so a digest that moves
    here points at a builder change that is readable there. A gang scenario's file may be stored as a patch
    onto Volcano's (tests/support/golden_store.py): it is read, and compared, whole.
    """

    def __init__(self, folder: Path, update: bool) -> None:
        self.path = folder / "steps.yaml"
        self.update = update
        self.steps: list[dict[str, Any]] = []
        self._recorded: list[dict[str, Any]] = [] if update else golden_store.load(self.path)

    def check(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        step = {"step": len(self.steps) + 1, "status": response["status"], "children": _digests(response)}
        self.steps.append(step)
        if self.update:
            golden_store.write(self.path, self.steps)
            return
        recorded = self._recorded[len(self.steps) - 1] if len(self.steps) <= len(self._recorded) else None
        where = golden_store.stored_as(self.path)
        assert step == recorded, f"{where} step {step['step']} differs: run --update-golden and review"


def _digests(response: dict[str, Any]) -> dict[str, str]:
    return {
        f"{child['kind']}/{child['metadata']['name']}": hashlib.sha256(
            json.dumps(child, sort_keys=True).encode()
        ).hexdigest()[:12]
        for child in response["children"]
    }


class FakeMetacontroller:
    def __init__(
        self,
        controller: dict[str, Any] | None = None,
        *,
        settings: Settings | None = None,
        golden: Golden | None = None,
        hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.controller = controller or yaml.safe_load(COMPOSITE_CONTROLLER.read_text())
        self.settings = settings or Settings()
        self.keys = SeededKeys(SEED)
        self.memo: ParentMemo[Verdict] = ParentMemo()
        self.golden = golden
        self.hook = hook or self._call_sync_hook
        self.now = START
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}  # (gvk key, name) -> object
        self.parent: dict[str, Any] | None = None
        self.history: list[Writes] = []
        # The Events and the phase timings each in-process sync decided (``SyncResult``), oldest first.
        self.events: list[Event] = []
        self.timings: list[Timing] = []
        self.last_response: dict[str, Any] = {}
        self._uids = 0
        self._resource_version = 1000
        self._status_schema = _status_schema()
        # Pods Metacontroller deletes linger with a deletionTimestamp until ``finish_deletions`` (as the
        # kubelet's grace period makes them); else they vanish at once.
        self.pods_linger = False
        self.replace_controller(self.controller)

    def replace_controller(self, controller: dict[str, Any]) -> None:
        """``kubectl apply`` a new CompositeController (e.g. an overlay): declared kinds and hooks change."""
        self.controller = controller
        spec = controller["spec"]
        self.strategies = {
            _gvk_key(c["apiVersion"], KIND_OF_RESOURCE[c["resource"]]): c.get("updateStrategy", {}).get(
                "method", "OnDelete"
            )
            for c in spec["childResources"]
        }
        self.version = spec["hooks"]["sync"].get("version", "v1")

    # --- the apiserver -----------------------------------------------------------------------------

    def _uid(self, prefix: str) -> str:
        self._uids += 1
        return f"{prefix}-{self._uids:04d}"

    def _bump(self, obj: dict[str, Any]) -> None:
        self._resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self._resource_version)

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def apply_mpijob(self, job: dict[str, Any]) -> None:
        """``kubectl apply``: create the MPIJob, or replace its spec (generation +1 when it changes)."""
        job = copy.deepcopy(job)
        meta = job.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        if self.parent is None:
            meta.update(uid=self._uid("mpijob"), generation=1, creationTimestamp=stamp(self.now))
            job.pop("status", None)
            self.parent = job
        else:
            if job.get("spec") != self.parent.get("spec"):
                self.parent["metadata"]["generation"] += 1
            self.parent["spec"] = job["spec"]
        self._bump(self.parent)

    def edit_spec(self, path: str, value: Any) -> None:
        """Set a dotted path under the MPIJob's spec, as a user's ``kubectl edit`` would."""
        assert self.parent is not None
        job = copy.deepcopy(self.parent)
        node = job["spec"]
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
        self.apply_mpijob(job)

    @property
    def name(self) -> str:
        assert self.parent is not None
        return str(self.parent["metadata"]["name"])

    @property
    def namespace(self) -> str:
        assert self.parent is not None
        return str(self.parent["metadata"]["namespace"])

    @property
    def status(self) -> dict[str, Any]:
        assert self.parent is not None
        return self.parent.get("status", {})

    def conditions(self) -> dict[str, tuple[str, str]]:
        """Condition type → (status, reason), in list order."""
        return {c["type"]: (c["status"], c.get("reason", "")) for c in self.status.get("conditions", [])}

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return next(
            (o for (key, n), o in self.objects.items() if n == name and key.startswith(f"{kind}.")), None
        )

    def names(self, kind: str) -> list[str]:
        return sorted(n for (key, n), o in self.objects.items() if key.startswith(f"{kind}.") and _owned(o))

    def _owned_by_parent(self, obj: dict[str, Any]) -> bool:
        assert self.parent is not None
        refs = obj["metadata"].get("ownerReferences") or []
        return any(r.get("uid") == self.parent["metadata"]["uid"] and r.get("controller") for r in refs)

    # --- the world (kubelet, Job controller, users) ------------------------------------------------

    def set_pod(self, name: str, phase: str, *, ready: bool | None = None, reason: str = "") -> None:
        pod = self.get("Pod", name)
        assert pod is not None, f"no Pod {name}"
        ready = phase == "Running" if ready is None else ready
        pod["status"] = with_pod_status(pod, phase, ready=ready, reason=reason)["status"]
        self._bump(pod)

    def container_exits(self, name: str, code: int, reason: str, message: str = "") -> None:
        """The kubelet reports Pod ``name``'s first container terminated; a non-zero code fails the Pod."""
        pod = self.get("Pod", name)
        assert pod is not None, f"no Pod {name}"
        terminated = {"exitCode": code, "reason": reason, **({"message": message} if message else {})}
        container = pod["spec"]["containers"][0]["name"]
        pod["status"] = {
            "phase": "Failed" if code else "Succeeded",
            "containerStatuses": [{"name": container, "state": {"terminated": terminated}}],
        }
        self._bump(pod)
        job = self.get("Job", f"{self.name}-launcher")
        if job is not None:
            self._job_counts(job)

    def disrupt(self, name: str) -> None:
        """The Eviction API (or a preemption): DisruptionTarget=True, then a graceful deletion."""
        pod = self.get("Pod", name)
        assert pod is not None, f"no Pod {name}"
        status = pod.setdefault("status", {})
        target = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
        status["conditions"] = [*status.get("conditions", []), target]
        self.delete("Pod", name, graceful=True)

    def workers_running(self, ready: bool = True) -> None:
        for name in self.names("Pod"):
            if name.startswith(f"{self.name}-worker-") and not self.get("Pod", name)["metadata"].get(
                "deletionTimestamp"
            ):
                self.set_pod(name, "Running", ready=ready)

    def launcher_pods(self) -> list[dict[str, Any]]:
        return [
            o
            for (key, _), o in sorted(self.objects.items())
            if key == "Pod.v1"
            and o["metadata"].get("labels", {}).get("training.kubeflow.org/job-role") == "launcher"
        ]

    def start_launcher_pod(self, phase: str = "Running") -> str:
        """The Job controller starts a launcher Pod from the Job's template (not a child of the MPIJob)."""
        job = self.get("Job", f"{self.name}-launcher")
        assert job is not None, "no launcher Job"
        name = f"{self.name}-launcher-{len(self.launcher_pods()):05d}"
        labels = dict(job["spec"]["template"]["metadata"].get("labels", {}))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": self._uid("pod"),
                "creationTimestamp": stamp(self.now),
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job["metadata"]["name"],
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": copy.deepcopy(job["spec"]["template"]["spec"]),
            "status": {"phase": phase},
        }
        self._bump(pod)
        self.objects[("Pod.v1", name)] = pod
        self._job_counts(job)
        return name

    def set_launcher_pod(self, name: str, phase: str, *, reason: str = "", message: str = "") -> None:
        pod = self.get("Pod", name)
        assert pod is not None
        pod["status"] = {
            "phase": phase,
            **({"reason": reason} if reason else {}),
            **({"message": message} if message else {}),
        }
        self._bump(pod)
        job = self.get("Job", f"{self.name}-launcher")
        if job is not None:
            self._job_counts(job)

    def _job_counts(self, job: dict[str, Any]) -> None:
        pods = self.launcher_pods()
        status = job.setdefault("status", {})
        running = sum(1 for p in pods if p["status"]["phase"] == "Running")
        failed = sum(1 for p in pods if p["status"]["phase"] == "Failed")
        for key, value in (("active", running), ("ready", running), ("failed", failed)):
            if value:
                status[key] = value
            else:
                status.pop(key, None)
        status.setdefault("startTime", stamp(self.now))
        self._bump(job)

    def finish_launcher(self, condition: str, reason: str = "", message: str = "") -> None:
        """The Job controller marks the launcher Job ``Complete`` or ``Failed``."""
        job = self.get("Job", f"{self.name}-launcher")
        assert job is not None, "no launcher Job"
        if condition == "Complete":
            for pod in self.launcher_pods():
                if pod["status"]["phase"] == "Running":
                    pod["status"] = {"phase": "Succeeded"}
        self._job_counts(job)
        status = job["status"]
        if condition == "Complete":
            status["succeeded"] = 1
            status["completionTime"] = stamp(self.now)
        entry = {"type": condition, "status": "True", "lastTransitionTime": stamp(self.now)}
        if reason:
            entry["reason"] = reason
        if message:
            entry["message"] = message
        status["conditions"] = [entry]
        self._bump(job)

    def delete(self, kind: str, name: str, *, graceful: bool = False) -> None:
        """Someone (a user, the TTL controller, the kubelet) deletes an object."""
        key = next(k for k in self.objects if k[1] == name and k[0].startswith(f"{kind}."))
        if graceful:
            self.objects[key]["metadata"]["deletionTimestamp"] = stamp(self.now)
            self._bump(self.objects[key])
            return
        obj = self.objects.pop(key)
        if kind == "Job":  # background propagation takes the Job's Pods with it
            uid = obj["metadata"]["uid"]
            for pod_key, pod in list(self.objects.items()):
                if any(r.get("uid") == uid for r in pod["metadata"].get("ownerReferences", [])):
                    if self.pods_linger:
                        pod["metadata"]["deletionTimestamp"] = stamp(self.now)
                        self._bump(pod)
                    else:
                        del self.objects[pod_key]

    def finish_deletions(self) -> None:
        """Graceful deletions complete."""
        for key, obj in list(self.objects.items()):
            if obj["metadata"].get("deletionTimestamp"):
                self.delete(key[0].split(".")[0], key[1])

    # --- Metacontroller ----------------------------------------------------------------------------

    def request(self) -> dict[str, Any]:
        assert self.parent is not None
        children: dict[str, dict[str, Any]] = {key: {} for key in self.strategies}
        for (key, _), obj in self.objects.items():
            if key in children and self._owned_by_parent(obj):
                children[key][self._map_key(obj)] = copy.deepcopy(obj)
        return {
            "controller": self.controller,
            "parent": copy.deepcopy(self.parent),
            "children": children,
            "related": self._related(),
            "finalizing": False,
        }

    def _map_key(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if self.version == "v2" else meta["name"]

    def _related(self) -> dict[str, Any]:
        hook = self.controller["spec"]["hooks"].get("customize")
        if not hook:
            return {}
        body = orjson.dumps({"controller": self.controller, "parent": self.parent, "finalizing": False})
        related: dict[str, dict[str, Any]] = {}
        for rule in customize(body, self.settings.sync_config, self.settings.node_selector)[
            "relatedResources"
        ]:
            if (rule["apiVersion"], rule["resource"]) == ("scheduling.k8s.io/v1", "priorityclasses"):
                assert "labelSelector" not in rule and "namespace" not in rule, rule
                group = related.setdefault(PRIORITY_CLASS_KEY, {})
                if self.version != "v2":
                    continue  # cluster-scoped related objects reach a namespaced parent's v2 hook only
                for (key, name), obj in self.objects.items():
                    if key == PRIORITY_CLASS_KEY:
                        group[name] = copy.deepcopy(obj)
                continue
            if (rule["apiVersion"], rule["resource"]) == ("v1", "nodes"):
                group = related.setdefault(NODE_KEY, {})
                if self.version != "v2":
                    continue
                for (key, name), obj in self.objects.items():
                    if key == NODE_KEY and _selects(rule["labelSelector"], obj["metadata"].get("labels", {})):
                        group[name] = copy.deepcopy(obj)
                continue
            assert rule["apiVersion"] == "v1" and rule["resource"] == "pods", rule
            selector = rule["labelSelector"]["matchLabels"]
            group = related.setdefault("Pod.v1", {})
            for (key, _), obj in self.objects.items():
                labels = obj["metadata"].get("labels", {})
                if key == "Pod.v1" and all(labels.get(k) == v for k, v in selector.items()):
                    group[self._map_key(obj)] = copy.deepcopy(obj)
        return related

    def add_priority_class(self, name: str, value: int) -> None:
        """A cluster administrator creates a PriorityClass (cluster-scoped)."""
        obj = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "uid": self._uid("pc")},
            "value": value,
        }
        self._bump(obj)
        self.objects[(PRIORITY_CLASS_KEY, name)] = obj

    def add_node(self, name: str, labels: dict[str, str]) -> None:
        """A Node joins the cluster (cluster-scoped), with its labels and a status the hook must skip."""
        obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": self._uid("node"), "labels": dict(labels)},
            "status": {"images": [{"names": ["registry.example/big:1"], "sizeBytes": 10**9}]},
        }
        self._bump(obj)
        self.objects[(NODE_KEY, name)] = obj

    def bind(self, pod_name: str, node: str) -> None:
        """The scheduler binds a Pod to a node."""
        pod = self.get("Pod", pod_name)
        assert pod is not None, f"no Pod {pod_name}"
        pod["spec"]["nodeName"] = node
        self._bump(pod)

    def sync(self, *, lose_status: bool = False) -> Writes:
        """One sync: call the hook and apply its answer as Metacontroller would. ``lose_status``: the
        children are managed, then the status write fails (a conflict, the apiserver gone)."""
        request = self.request()
        response = self.hook(request)
        if self.golden is not None:
            self.golden.check(request, response)
        self.last_response = response
        writes = self._apply(response, lose_status=lose_status)
        self.history.append(writes)
        return writes

    def _call_sync_hook(self, request: dict[str, Any]) -> dict[str, Any]:
        """The hook in-process, through the same decode and encode as the HTTP shell."""
        result = sync(
            decode_request(orjson.dumps(request)),
            now=self.now,
            keys=self.keys,
            config=self.settings.sync_config,
            judge=remember(self.memo),  # one memo per hook process, as the shell keeps it
        )
        self.events.extend(result.events)
        self.timings.extend(result.timings)
        return orjson.loads(orjson.dumps(result.response()))

    def posted_events(self) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the Events the API server keeps: one per key, as the shell names each
        Event by its key and the API server refuses the same name twice (a repeated sync's, another
        replica's)."""
        seen: set[str] = set()
        kept = []
        for event in self.events:
            if event.key not in seen:
                seen.add(event.key)
                kept.append((event.type, event.reason, event.message))
        return kept

    def sync_until_steady(self, limit: int = 6) -> int:
        """Sync until a sync writes nothing; return how many syncs that took (fail past ``limit``)."""
        for count in range(1, limit + 1):
            if self.sync().total == 0:
                return count
        raise AssertionError(f"still writing after {limit} syncs: {self.history[-1]}")

    def _apply(self, response: dict[str, Any], *, lose_status: bool = False) -> Writes:
        assert self.parent is not None
        unknown = set(response) - RESPONSE_KEYS
        if unknown:
            raise ContractViolation(f"strict mode rejects unknown response keys {sorted(unknown)}")
        if "status" not in response or not isinstance(response["status"], dict):
            raise ContractViolation("no status: Metacontroller would wipe the MPIJob's status")
        resync = response.get("resyncAfterSeconds")
        if resync is not None and (isinstance(resync, bool) or not isinstance(resync, int | float)):
            raise ContractViolation(f"resyncAfterSeconds {resync!r} is not a number: it won't decode")
        if not isinstance(response.get("finalized", False), bool | None):
            raise ContractViolation("finalized is not a boolean: the response would not decode")
        children = response.get("children")
        if not isinstance(children, list):
            raise ContractViolation("children missing or not a list: every child would be deleted")
        desired: dict[tuple[str, str], dict[str, Any]] = {}
        uid = self.parent["metadata"]["uid"]
        for child in children:
            if child is None:
                raise ContractViolation("a null child panics Metacontroller")
            key = self._check_child(child, uid)
            if key in desired:
                raise ContractViolation(f"duplicate child {key}")
            desired[key] = child
        writes = Writes()
        if not self.parent["metadata"].get("deletionTimestamp"):
            self._manage_children(desired, writes)
        if not lose_status:
            self._write_status(response["status"], writes)
        return writes

    def _check_child(self, child: dict[str, Any], uid: str) -> tuple[str, str]:
        if "kind" not in child:
            raise ContractViolation(f"child without kind: {child.get('metadata')}")
        key = _gvk_key(child.get("apiVersion", ""), child["kind"])
        if key not in self.strategies:
            raise ContractViolation(f"{key} is not a declared child kind (exact apiVersion required)")
        meta = child.get("metadata") or {}
        if not meta.get("name") or "generateName" in meta:
            raise ContractViolation(f"{key}: metadata.name is mandatory, generateName unsupported")
        if meta.get("namespace", self.namespace) != self.namespace:
            raise ContractViolation(f"{key}/{meta['name']} in another namespace would never be observed")
        label = (meta.get("labels") or {}).get("controller-uid")
        if label is not None and label != uid:
            raise ContractViolation(
                f"labels on desired child {key} {meta['name']} don't match parent selector"
            )
        if meta.get("ownerReferences"):
            raise ContractViolation(f"{key}/{meta['name']}: ownerReferences are Metacontroller's to set")
        return key, meta["name"]

    def _manage_children(self, desired: dict[tuple[str, str], dict[str, Any]], writes: Writes) -> None:
        for key, obj in list(self.objects.items()):
            if key[0] in self.strategies and self._owned_by_parent(obj) and key not in desired:
                if obj["metadata"].get("deletionTimestamp"):
                    continue  # no second delete
                kind = key[0].split(".")[0]
                self.delete(kind, key[1], graceful=self.pods_linger and kind == "Pod")
                writes.deleted.append(f"{key[0]}/{key[1]}")
        for key, child in desired.items():
            applied = self._as_applied(child)
            current = self.objects.get(key)
            if current is None:
                self._create(key, applied)
                writes.created.append(f"{key[0]}/{key[1]}")
                continue
            if not self._owned_by_parent(current):
                continue  # someone else's object: the create fails with AlreadyExists, which is swallowed
            if current["metadata"].get("deletionTimestamp") or self.strategies[key[0]] == "OnDelete":
                continue
            if LAST_APPLIED in applied["metadata"].get("annotations", {}):
                applied["metadata"]["annotations"][LAST_APPLIED] = ""  # nullifyLastAppliedAnnotation
            last = json.loads(current["metadata"].get("annotations", {}).get(LAST_APPLIED) or "{}")
            merged = _three_way(current, last, applied)
            merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = _compact(applied)
            if (merged["apiVersion"], merged["kind"]) in CUSTOM_KINDS:
                _structural_defaults(merged, custom_resource_schema(merged["apiVersion"], merged["kind"]))
            if merged != current and self.strategies[key[0]] == "Recreate":
                # Metacontroller deletes it now and creates it from the desired object on the next sync.
                self.delete(key[0].split(".")[0], key[1])
                writes.deleted.append(f"{key[0]}/{key[1]}")
                continue
            if merged != current:
                if merged["apiVersion"] in IMMUTABLE_SPEC and merged.get("spec") != current.get("spec"):
                    raise ContractViolation(f"{key[0]}/{key[1]}: spec is immutable (422)")
                self._admit(merged)
                self._bump(merged)
                self.objects[key] = merged
                writes.updated.append(f"{key[0]}/{key[1]}")

    def _as_applied(self, child: dict[str, Any]) -> dict[str, Any]:
        """What Metacontroller records as last applied: namespace defaulted, controller-uid added."""
        applied = copy.deepcopy(child)
        meta = applied["metadata"]
        meta.setdefault("namespace", self.namespace)
        meta.setdefault("labels", {}).setdefault("controller-uid", self.parent["metadata"]["uid"])
        return applied

    def _admit(self, obj: dict[str, Any]) -> None:
        """The apiserver's schema check (422 on an invalid object), against Kubernetes' own schemas."""
        errors = schema_errors(obj)
        if errors:
            raise ContractViolation(f"{obj['kind']} {obj['metadata']['name']} rejected (422): {errors[0]}")

    def _create(self, key: tuple[str, str], applied: dict[str, Any]) -> None:
        self._admit(applied)
        obj = copy.deepcopy(applied)
        if (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS:
            _structural_defaults(obj, custom_resource_schema(obj["apiVersion"], obj["kind"]))
        meta = obj["metadata"]
        meta.setdefault("annotations", {})[LAST_APPLIED] = _compact(applied)
        meta.update(uid=self._uid(obj["kind"].lower()), creationTimestamp=stamp(self.now))
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPIJob",
                "name": self.name,
                "uid": self.parent["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        obj.pop("status", None)  # the status subresource: a create's status is not stored
        if obj["kind"] == "Pod":
            obj["status"] = {"phase": "Pending"}
        elif obj["kind"] == "Job":
            obj["status"] = {}
        self._bump(obj)
        self.objects[key] = obj

    def _write_status(self, status: dict[str, Any], writes: Writes) -> None:
        assert self.parent is not None
        status = copy.deepcopy(status)
        status["observedGeneration"] = self.parent["metadata"]["generation"]
        kept = _prune(status, self._status_schema)  # what the apiserver stores
        error = jsonschema.exceptions.best_match(_status_validator().iter_errors(kept))
        if error is not None:
            raise ContractViolation(f"status rejected by the CRD schema (422): {error.message}")
        for path, value in _date_times(kept, self._status_schema, "status"):
            if not _is_date_time(value):
                raise ContractViolation(f"status rejected by the CRD schema (422): {path}={value!r}")
        types = [c["type"] for c in kept.get("conditions", [])]
        if len(types) != len(set(types)):
            raise ContractViolation(f"duplicate condition types {types} in a list-type=map")
        # Metacontroller compares the live status with what it sends, typed (2 != 2.0), before any pruning.
        if _compact(self.parent.get("status")) != _compact(status):
            writes.status += 1
            # Unless the apiserver pruned it to what it already has: a no-op PUT, no new resourceVersion.
            if _compact(self.parent.get("status")) != _compact(kept):
                self.parent["status"] = kept
                self._bump(self.parent)


def _owned(obj: dict[str, Any]) -> bool:
    return any(r.get("kind") == "MPIJob" for r in obj["metadata"].get("ownerReferences", []))


def _prune(value: Any, schema: dict[str, Any]) -> Any:
    """Drop fields the structural schema does not declare; whole floats come back as integers."""
    if isinstance(value, dict):
        if "properties" in schema:
            props = schema["properties"]
            return {k: _prune(v, props[k]) for k, v in value.items() if k in props}
        if isinstance(schema.get("additionalProperties"), dict):
            return {k: _prune(v, schema["additionalProperties"]) for k, v in value.items()}
        return copy.deepcopy(value)
    if isinstance(value, list):
        return [_prune(v, schema.get("items", {})) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _date_times(value: Any, schema: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """Every string the schema declares ``format: date-time`` (jsonschema itself does not check formats)."""
    if isinstance(value, str) and schema.get("format") == "date-time":
        return [(path, value)]
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key, extra if isinstance(extra, dict) else {})
            found += _date_times(item, sub, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _date_times(item, schema.get("items", {}), f"{path}[{index}]")
    return found


def _compact(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _three_way(current: dict[str, Any], last: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """Metacontroller's merge for the maps our InPlace kinds use: set desired, drop what we no longer set."""
    merged = copy.deepcopy(current)
    _merge(merged, last, desired)
    for name in SYSTEM_FIELDS:  # ApplyUpdate reverts read-only metadata and status: a hook cannot change them
        merged["metadata"].pop(name, None)
        if name in current["metadata"]:
            merged["metadata"][name] = copy.deepcopy(current["metadata"][name])
    merged.pop("status", None)
    if "status" in current:
        merged["status"] = copy.deepcopy(current["status"])
    return merged


def _merge(target: dict[str, Any], last: dict[str, Any], desired: dict[str, Any]) -> None:
    for key in list(last):
        if key not in desired and key in target and key not in ("status",):
            del target[key]
    for key, value in desired.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], last.get(key) if isinstance(last.get(key), dict) else {}, value)
        else:
            target[key] = copy.deepcopy(value)


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A labelSelector's matchLabels and matchExpressions, as the apiserver reads them."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        held = {
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
            "In": labels.get(key) in values,
            "NotIn": labels.get(key) not in values,
        }[operator]
        if not held:
            return False
    return True
