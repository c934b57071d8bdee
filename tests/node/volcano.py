"""Volcano itself beside the hook on the real node: its scheduler, controller manager and admission webhooks,
as its release manifest installs them.

- **Built** from its Go module (``scripts/build-neighbour volcano``: v1.14.1, the newest release whose API
  module the proxy serves), each program alone in an image under the name the manifest gives it.
- **Installed** from ``installer/volcano-development.yaml`` of the module download (the manifest Volcano's
  README applies), as written but for: our images, never pulled (``IfNotPresent``); no monitoring
  namespace; and the admission certificate made here instead of by its ``admission-init`` Job (a Helm hook
  whose image runs a shell script with openssl and kubectl: ours hold the program alone). The Secret holds
  what that script writes (a CA, and a certificate for the admission Service's names signed by it); the
  webhook manager puts the CA into its webhook configurations itself, as on any cluster.
- **Removed** at the end as every neighbour is (``neighbours.uninstall``).
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.e2e import pki
from tests.e2e.kube import Kube
from tests.node import neighbours
from tests.node.images import Recipe
from tests.support.neighbour_builds import Built

NAMESPACE = "volcano-system"
MANIFEST = "installer/volcano-development.yaml"
API = "scheduling.volcano.sh/v1beta1"
# The manifest's image of each program (its tag: the release).
IMAGES = {
    program: f"docker.io/volcanosh/vc-{program}"
    for program in ("scheduler", "controller-manager", "webhook-manager")
}
ADMISSION_SERVICE = "volcano-admission-service"
ADMISSION_SECRET = "volcano-admission-secret"
HELM_HOOK = "helm.sh/hook"
MONITORING = "volcano-monitoring"


def recipes(built: Built) -> list[Recipe]:
    return neighbours.recipes(built, IMAGES)


def manifests(built: Built) -> list[dict[str, Any]]:
    """Volcano's objects from its release manifest, with the changes the module docstring lists."""
    with (built.module / MANIFEST).open() as manifest:
        objects = [o for o in yaml.safe_load_all(manifest) if o]
    kept = [o for o in objects if not _helm_hook(o) and o["metadata"].get("name") != MONITORING]
    for deployment in (o for o in kept if o["kind"] == "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            program = next(p for p, name in IMAGES.items() if container["image"].startswith(f"{name}:"))
            container["image"] = neighbours.image(built, IMAGES[program])
            container["imagePullPolicy"] = "IfNotPresent"
    return [*kept, admission_secret()]


def _helm_hook(made: dict[str, Any]) -> bool:
    return HELM_HOOK in (made["metadata"].get("annotations") or {})


def admission_secret() -> dict[str, Any]:
    """What the admission-init Job's script stores: a CA and the admission Service's certificate."""
    service = f"{ADMISSION_SERVICE}.{NAMESPACE}.svc"
    names = (ADMISSION_SERVICE, f"{ADMISSION_SERVICE}.{NAMESPACE}", service)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ADMISSION_SECRET, "namespace": NAMESPACE},
        "stringData": pki.serving_pem(service, names),
    }


def install(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Apply Volcano's objects and wait until its admission answers: a PodGroup in its default queue (which
    its scheduler creates and its controller opens) goes through the PodGroup webhook."""
    probe = podgroup("default", "webhook-probe", 1, queue="default")
    neighbours.install(kube, objects, probe)


def podgroup(namespace: str, name: str, members: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": members, **spec},
    }


def queue(name: str, cpu: str) -> dict[str, Any]:
    """A Queue whose jobs may hold at most ``cpu`` between them."""
    return {
        "apiVersion": API,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "capability": {"cpu": cpu}, "reclaimable": True},
    }
