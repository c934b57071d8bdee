"""Fluent builders for MPIJobs, observed Pods/Jobs and Metacontroller requests.

``mpijob("pi").workers(2).impl("Intel").build()`` keeps each test to the fields that matter; the
defaults mirror upstream's pi example. ``observe(child)`` turns an object the hook returned into what
Metacontroller would send back: uid, ownerReference, ``controller-uid`` label, last-applied annotation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

JOB_UID = "3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40"
CREATED = "2026-05-04T09:00:00Z"


def _container(name: str, command: list[str] | None, args: list[str] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "mpioperator/mpi-pi:openmpi"}
    if command:
        container["command"] = command
    if args:
        container["args"] = args
    container["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}
    return container


class MPIJobBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.obj: dict[str, Any] = {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": JOB_UID,
                "generation": 1,
                "creationTimestamp": CREATED,
            },
            "spec": {
                "slotsPerWorker": 1,
                "runLauncherAsWorker": False,
                "sshAuthMountPath": "/root/.ssh",
                "launcherCreationPolicy": "AtStartup",
                "mpiImplementation": "OpenMPI",
                "runPolicy": {"cleanPodPolicy": "Running", "suspend": False},
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "replicas": 1,
                        "template": {
                            "spec": {"containers": [_container("launcher", ["mpirun"], ["-n", "2", "/pi"])]}
                        },
                    },
                    "Worker": {
                        "replicas": 2,
                        "template": {"spec": {"containers": [_container("worker", None, None)]}},
                    },
                },
            },
        }

    @property
    def spec(self) -> dict[str, Any]:
        return self.obj["spec"]

    def workers(self, replicas: int | None) -> MPIJobBuilder:
        if replicas is None:
            self.spec["mpiReplicaSpecs"]["Worker"].pop("replicas", None)
        else:
            self.spec["mpiReplicaSpecs"]["Worker"]["replicas"] = replicas
        return self

    def impl(self, implementation: str) -> MPIJobBuilder:
        self.spec["mpiImplementation"] = implementation
        return self

    def slots(self, slots: int) -> MPIJobBuilder:
        self.spec["slotsPerWorker"] = slots
        return self

    def launcher_as_worker(self) -> MPIJobBuilder:
        self.spec["runLauncherAsWorker"] = True
        return self

    def wait_for_workers(self) -> MPIJobBuilder:
        self.spec["launcherCreationPolicy"] = "WaitForWorkersReady"
        return self

    def run_policy(self, **fields: Any) -> MPIJobBuilder:
        self.spec["runPolicy"].update(fields)
        return self

    def suspend(self, value: bool = True) -> MPIJobBuilder:
        return self.run_policy(suspend=value)

    def set(self, path: str, value: Any) -> MPIJobBuilder:
        """Set a dotted path under the object, e.g. ``spec.mpiReplicaSpecs.Launcher.replicas``."""
        *parents, last = path.split(".")
        node = self.obj
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
        return self

    def status(self, status: dict[str, Any]) -> MPIJobBuilder:
        self.obj["status"] = copy.deepcopy(status)
        return self

    def generation(self, generation: int) -> MPIJobBuilder:
        self.obj["metadata"]["generation"] = generation
        return self

    def build(self) -> dict[str, Any]:
        """The job, with the default launcher's ``mpirun -n`` matching the hostfile's slots (as users should
        write it: a mismatch is a lint warning in status, which only tests about it should see)."""
        obj = copy.deepcopy(self.obj)
        spec = obj["spec"]
        launcher = (spec.get("mpiReplicaSpecs") or {}).get("Launcher") or {}
        containers = ((launcher.get("template") or {}).get("spec") or {}).get("containers") or [{}]
        if containers[0].get("args") == ["-n", "2", "/pi"]:
            worker = spec["mpiReplicaSpecs"].get("Worker") or {}
            slots = spec.get("slotsPerWorker", 1)
            hosts = (worker.get("replicas") or 0) + (1 if spec.get("runLauncherAsWorker") else 0)
            containers[0]["args"] = ["-n", str(slots * hosts), "/pi"]
        return obj


def mpijob(name: str = "pi", namespace: str = "default") -> MPIJobBuilder:
    return MPIJobBuilder(name, namespace)


def observe(child: dict[str, Any], *, uid: str | None = None) -> dict[str, Any]:
    """What Metacontroller would list after creating ``child`` (no status yet)."""
    applied = copy.deepcopy(child)
    applied["metadata"].setdefault("labels", {})["controller-uid"] = JOB_UID
    obj = copy.deepcopy(applied)
    meta = obj["metadata"]
    meta["uid"] = uid or f"uid-{child['kind'].lower()}-{meta['name']}"
    meta["resourceVersion"] = "1000"
    meta["creationTimestamp"] = CREATED
    meta.setdefault("annotations", {})["metacontroller.k8s.io/last-applied-configuration"] = json.dumps(
        applied, sort_keys=True, separators=(",", ":")
    )
    meta["ownerReferences"] = [
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "name": meta.get("labels", {}).get("app") or meta["name"],
            "uid": JOB_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return obj


def with_pod_status(
    pod: dict[str, Any], phase: str, *, ready: bool = False, reason: str = ""
) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if reason:
        status["reason"] = reason
    pod["status"] = status
    return pod


def with_job_status(job: dict[str, Any], **status: Any) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["status"] = status
    return job


def launcher_pod(
    job_name: str, index: int, phase: str, *, created: str, reason: str = "", message: str = ""
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job_name}-launcher-{index:05d}",
            "namespace": "default",
            "creationTimestamp": created,
            "labels": {
                "training.kubeflow.org/job-name": job_name,
                "training.kubeflow.org/job-role": "launcher",
                "training.kubeflow.org/operator-name": "mpi-operator",
            },
        },
        "spec": {"containers": [{"name": "launcher", "image": "x"}]},
        "status": status,
    }


_CHILD_KEYS = {
    "Pod": "Pod.v1",
    "Job": "Job.batch/v1",
    "Service": "Service.v1",
    "Secret": "Secret.v1",
    "ConfigMap": "ConfigMap.v1",
}
# The PodGroup child an overlay adds to the CompositeController, by the hook's gang scheduling setting.
PODGROUP_API_VERSIONS = {
    "volcano": "scheduling.volcano.sh/v1beta1",
    "plugins": "scheduling.x-k8s.io/v1alpha1",
    "kubernetes": "scheduling.k8s.io/v1beta1",
    "kubernetes-1.36": "scheduling.k8s.io/v1alpha2",
}
# The Workload API's overlays declare the Workload too, and both with Recreate (immutable specs).
WORKLOAD_API = ("kubernetes", "kubernetes-1.36")


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "uid": f"pc-{name}"},
        "value": value,
    }


def controller(*, customize: bool = True, version: str = "v2", podgroup: str | None = None) -> dict[str, Any]:
    """The CompositeController; ``podgroup`` ("volcano", "plugins", "kubernetes" or "kubernetes-1.36") adds
    that overlay's PodGroup (and Workload)."""
    hooks: dict[str, Any] = {"sync": {"version": version, "webhook": {"url": "http://hook:8080/sync"}}}
    if customize:
        hooks["customize"] = {"version": version, "webhook": {"url": "http://hook:8080/customize"}}
    resources = [
        ("batch/v1", "jobs", "OnDelete"),
        ("v1", "pods", "OnDelete"),
        ("v1", "services", "InPlace"),
        ("v1", "secrets", "OnDelete"),
        ("v1", "configmaps", "InPlace"),
    ]
    if podgroup in WORKLOAD_API:
        api_version = PODGROUP_API_VERSIONS[podgroup]
        resources += [(api_version, "workloads", "Recreate"), (api_version, "podgroups", "Recreate")]
    elif podgroup is not None:
        resources.append((PODGROUP_API_VERSIONS[podgroup], "podgroups", "InPlace"))
    return {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {"name": "mpi-operator-hook"},
        "spec": {
            "generateSelector": True,
            "parentResource": {"apiVersion": "kubeflow.org/v2beta1", "resource": "mpijobs"},
            "childResources": [
                {"apiVersion": a, "resource": r, "updateStrategy": {"method": m}} for a, r, m in resources
            ],
            "hooks": hooks,
        },
    }


def sync_request(
    parent: dict[str, Any],
    children: list[dict[str, Any]] = (),  # type: ignore[assignment]
    related: list[dict[str, Any]] = (),  # type: ignore[assignment]
    *,
    version: str = "v2",
    customize: bool = True,
    podgroup: str | None = None,
    priority_classes: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    """A request in Metacontroller's shape: every declared kind present, keys per hook version.

    With a ``podgroup`` child declared, the customize hook also asks for PriorityClasses (cluster-scoped:
    keyed by name; Metacontroller delivers them to v2 hooks only).
    """

    def key(obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        if "namespace" not in meta and obj.get("kind") == "PriorityClass":
            return str(meta["name"])
        return f"{meta.get('namespace', 'default')}/{meta['name']}" if version == "v2" else meta["name"]

    keys = dict(_CHILD_KEYS)
    if podgroup is not None:
        keys["PodGroup"] = f"PodGroup.{PODGROUP_API_VERSIONS[podgroup]}"
    if podgroup in WORKLOAD_API:
        keys["Workload"] = f"Workload.{PODGROUP_API_VERSIONS[podgroup]}"
    grouped: dict[str, dict[str, Any]] = {k: {} for k in keys.values()}
    for child in children:
        grouped[keys[child["kind"]]][key(child)] = child
    related_map: dict[str, Any] = {}
    if customize:
        related_map["Pod.v1"] = {key(p): p for p in related}
        if podgroup is not None:
            classes = priority_classes if version == "v2" else []
            related_map["PriorityClass.scheduling.k8s.io/v1"] = {key(c): c for c in classes}
    return {
        "controller": controller(customize=customize, version=version, podgroup=podgroup),
        "parent": parent,
        "children": grouped,
        "related": related_map,
        "finalizing": False,
    }


def walk(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every node of a JSON document with its path (``$.spec.containers[0].name``)."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, f"{path}[{index}]")
