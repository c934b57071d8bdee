"""Kueue itself beside the hook on the real node: its controller manager and webhooks, as Kueue ships them.

- **Built** from its Go module and put alone in an image as every neighbour is (neighbours.py).
- **Installed** from Kueue's own kustomize tree (``config/default`` of the module download) through an
  overlay written at test time: our image with ``IfNotPresent`` (nothing
  can be pulled here), a smaller CPU request (the node has 2 CPUs), and a configuration of our own
  (``CONFIGURATION``: the MPIJob and Job integrations, the readiness timeout of the waitForPodsReady
  scenario).
  Kueue makes its webhook certificates itself (its internal certificate management, on by default) and
  patches them into its webhook configurations and CRDs, as on any cluster without cert-manager.
  Left out: the visibility API (an ``APIService``; an aggregated API the apiserver could not reach for as
  long as Kueue starts would make discovery fail for every other client of this shared cluster).
- **Removed** at the end as every neighbour is (``neighbours.uninstall``); the CRDs take every Kueue object
  with them.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from app.cli.doctor.queueing import JOB_UID_LABEL
from tests.e2e.kube import Kube
from tests.node import neighbours
from tests.node.images import Recipe
from tests.support.neighbour_builds import Built

NAMESPACE = "kueue-system"
DEPLOYMENT = "kueue-controller-manager"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"  # on a pod template: one domain of that level
API = "kueue.x-k8s.io/v1beta2"
# Kueue's waitForPodsReady: an admitted job whose Pods are not all ready within it is evicted and requeued
# after the backoff. The MPIJob integration reads "ready" as the MPIJob's Running=True condition.
PODS_READY_TIMEOUT = "45s"
REQUEUE_BACKOFF_SECONDS = 5

CONFIGURATION = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": False},
    # batch/job too, as Kueue's default configuration has it: without it Kueue v0.17.0 still serves its Job
    # webhook, which then panics on every Job created (a nil queue manager), the launcher Job included.
    "integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob"]},
    "waitForPodsReady": {
        "timeout": PODS_READY_TIMEOUT,
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": REQUEUE_BACKOFF_SECONDS},
    },
}


def image(built: Built) -> str:
    return f"registry.k8s.io/kueue/kueue:{built.version}"


def recipe(built: Built) -> Recipe:
    return neighbours.recipe(built, image(built))


def with_frameworks(*frameworks: str) -> dict[str, Any]:
    """CONFIGURATION with other integrations (``trainer.kubeflow.org/trainjob`` for converted jobs)."""
    changed = copy.deepcopy(CONFIGURATION)
    changed["integrations"] = {"frameworks": list(frameworks)}
    return changed


def _overlay(built: Built, directory: Path, configuration: dict[str, Any]) -> None:
    """A kustomization over the module's ``config/default``: our image, never pulled, a smaller request."""
    (directory / "controller_manager_config.yaml").write_text(yaml.safe_dump(configuration))
    name, tag = image(built).rsplit(":", 1)
    kustomization = {
        # kustomize takes no absolute path: the module's folder relative to this one.
        "resources": [os.path.relpath(built.module / "config" / "default", directory)],
        "images": [{"name": "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue", "newName": name,
                    "newTag": tag}],
        "patches": [
            {"target": {"kind": "Deployment", "name": DEPLOYMENT}, "patch": yaml.safe_dump([
                {"op": "replace", "path": "/spec/template/spec/containers/0/imagePullPolicy",
                 "value": "IfNotPresent"},
                {"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests/cpu",
                 "value": "100m"},
            ])},
        ],
        "configMapGenerator": [{
            "name": "manager-config", "namespace": NAMESPACE, "behavior": "replace",
            "files": ["controller_manager_config.yaml"],
        }],
        "generatorOptions": {"disableNameSuffixHash": True},
    }  # fmt: skip
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))


def manifests(built: Built, configuration: dict[str, Any] = CONFIGURATION) -> list[dict[str, Any]]:
    """Kueue's objects as ``kubectl kustomize`` renders them from its own tree, without the visibility API."""
    objects = neighbours.kustomize(lambda directory: _overlay(built, directory, configuration))
    return [o for o in objects if o["kind"] != "APIService"]


def install(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Apply Kueue's objects and wait until its webhooks answer."""
    probe = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "webhook-probe"}}
    neighbours.install(kube, objects, probe)


# ---- the objects a platform engineer makes for a queue ----


def resource_flavor(name: str, **spec: Any) -> dict[str, Any]:
    """A ResourceFlavor (``nodeLabels``, ``tolerations``, ... in ``spec``)."""
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(name: str, flavor: str, cpu: str, memory: str, **spec: Any) -> dict[str, Any]:
    """A ClusterQueue for every namespace with one flavor's CPU and memory quota."""
    quota = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]
    group = {"coveredResources": ["cpu", "memory"], "flavors": [{"name": flavor, "resources": quota}]}
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [group], **spec},
    }


def local_queue(namespace: str, name: str, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": queue},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def workloads(kube: Kube, namespace: str, job: dict[str, Any]) -> list[dict[str, Any]]:
    """The Kueue Workloads of one MPIJob (Kueue labels each with its job's UID)."""
    uid = job["metadata"]["uid"]
    url = f"/apis/{API}/namespaces/{namespace}/workloads?labelSelector={JOB_UID_LABEL}={uid}"
    return list(kube.request("GET", url)["items"])


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next(
        (c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {}
    )
