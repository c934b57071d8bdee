"""Kueue itself beside the hook on the real node: its controller manager and webhooks, as Kueue ships them.

- **Built** from its Go module by ``scripts/build-neighbour kueue`` (pinned there; cached outside the clone by
  version), then put alone in an image here (``recipe``), as Kueue's own image is: the static program at
  ``/manager``, run as a non-root user.
- **Installed** from Kueue's own kustomize tree (``config/default`` of the module download, read-only, never
  copied into the project) through an overlay written at test time: our image with ``IfNotPresent`` (nothing
  can be pulled here), a smaller CPU request (the node has 2 CPUs), and a configuration of our own
  (``CONFIGURATION``: the MPIJob and Job integrations, the readiness timeout of the waitForPodsReady
  scenario).
  Kueue makes its webhook certificates itself (its internal certificate management, on by default) and
  patches them into its webhook configurations and CRDs, as on any cluster without cert-manager.
  Left out: the visibility API (an ``APIService``; an aggregated API the apiserver could not reach for as
  long as Kueue starts would make discovery fail for every other client of this shared cluster).
- **Removed** at the end: webhooks first (so that nothing is refused while Kueue goes), then its program,
  then the finalizers only Kueue would remove from what is left, then the rest; the CRDs take every Kueue
  object with them.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.cli.doctor.queueing import JOB_UID_LABEL
from tests.e2e.kube import Kube, wait_for
from tests.node.images import ROOT, Recipe

BUILD = ROOT / "scripts" / "build-neighbour"
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


@dataclass(frozen=True)
class KueueBuild:
    """What ``scripts/build-neighbour kueue`` printed: the release, the cached program, the module's files."""

    version: str
    binary: Path
    module: Path

    @property
    def image(self) -> str:
        return f"registry.k8s.io/kueue/kueue:{self.version}"


def build() -> KueueBuild:
    """Run the project's build script (a no-op on a warm cache); RuntimeError with its words if it fails."""
    done = subprocess.run([str(BUILD), "kueue"], capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/build-neighbour kueue failed ({done.returncode}): {done.stderr[-2000:]}")
    said = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return KueueBuild(said["version"], Path(said["binary"]), Path(said["module"]))


def recipe(built: KueueBuild) -> Recipe:
    """Kueue's program alone in an image, at the path its Deployment runs (``/manager``), non-root."""
    return Recipe(
        name="kueue",
        containerfile=('FROM scratch\nCOPY kueue /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n'),
        context={"kueue": built.binary},
        names=(built.image,),
    )


def _overlay(built: KueueBuild, directory: Path) -> None:
    """A kustomization over the module's ``config/default``: our image, never pulled, a smaller request."""
    (directory / "controller_manager_config.yaml").write_text(yaml.safe_dump(CONFIGURATION))
    name, tag = built.image.rsplit(":", 1)
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


def manifests(built: KueueBuild) -> list[dict[str, Any]]:
    """Kueue's objects as ``kubectl kustomize`` renders them from its own tree, without the visibility API."""
    with tempfile.TemporaryDirectory(prefix="kueue-overlay-") as scratch:
        _overlay(built, Path(scratch))
        done = subprocess.run(
            ["kubectl", "kustomize", scratch], capture_output=True, text=True, timeout=120, check=False
        )
    if done.returncode != 0:
        raise AssertionError(f"kubectl kustomize over Kueue's config/default failed:\n{done.stderr}")
    objects = [o for o in yaml.safe_load_all(done.stdout) if o]
    return [o for o in objects if o["kind"] != "APIService"]


def install(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Apply Kueue's objects and wait until its webhooks answer (a dry-run create goes through them)."""
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(objects))
    kube.kubectl("-n", NAMESPACE, "rollout", "status", f"deployment/{DEPLOYMENT}", "--timeout=300s")
    flavor = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "webhook-probe"}}

    def webhooks_answer() -> bool:
        done = kube.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(flavor), check=False)
        return done.returncode == 0

    wait_for(webhooks_answer, 180, "Kueue's webhooks answering")


# Every object of a kind as "namespace/name" ("/name" when cluster-scoped), one per line.
_EACH = '{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}'


def uninstall(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Webhooks first (nothing is refused while Kueue goes), then Kueue's program; then every object of its
    kinds left (a Workload of a job still being deleted, a queue in use) loses the finalizers only Kueue
    would remove; then the rest. Waits until the namespace and the CRDs are gone."""
    hooks = [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    program = [o for o in objects if o["kind"] == "Deployment"]
    rest = [o for o in objects if o not in hooks and o not in program]
    for group in (hooks, program):
        _delete(kube, group)
    kube.kubectl("-n", NAMESPACE, "wait", "--for=delete", "pods", "--all", "--timeout=120s", check=False)
    crds = [o for o in rest if o["kind"] == "CustomResourceDefinition"]
    unfinalize = ["patch", "--type=merge", "-p", '{"metadata":{"finalizers":null}}']
    for crd in crds:
        kind = f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"
        listed = kube.kubectl("get", kind, "-A", "-o", f"jsonpath={_EACH}", check=False).stdout.split()
        for entry in listed:
            namespace, name = entry.split("/", 1)
            where = ["-n", namespace] if namespace else []
            kube.kubectl(*where, *unfinalize, kind, name, check=False)
    _delete(kube, rest)
    wait_for(lambda: kube.get("namespaces", None, NAMESPACE) is None, 180, f"namespace {NAMESPACE} gone")
    names = [c["metadata"]["name"] for c in crds]
    wait_for(
        lambda: all(kube.get("customresourcedefinitions", None, n) is None for n in names),
        180,
        "Kueue's CRDs gone",
    )


def _delete(kube: Kube, group: list[dict[str, Any]]) -> None:
    kube.kubectl("delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=yaml.safe_dump_all(group))


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


@contextmanager
def objects(kube: Kube, made: list[dict[str, Any]]) -> Iterator[None]:
    """Kueue objects applied for one test and deleted after it (cluster-scoped ones outlive namespaces)."""
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(made))
    try:
        yield
    finally:
        kube.kubectl(
            "delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=yaml.safe_dump_all(made)
        )


def workloads(kube: Kube, namespace: str, job: dict[str, Any]) -> list[dict[str, Any]]:
    """The Kueue Workloads of one MPIJob (Kueue labels each with its job's UID)."""
    uid = job["metadata"]["uid"]
    url = f"/apis/{API}/namespaces/{namespace}/workloads?labelSelector={JOB_UID_LABEL}={uid}"
    return list(kube.request("GET", url)["items"])


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next(
        (c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {}
    )
