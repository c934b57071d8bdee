"""What every neighbour the real node runs beside the hook (Kueue, Trainer, JobSet) has in common: built from
its Go module by ``scripts/build-neighbour`` (pinned there; cached outside the clone by version), its static
program alone in an image at ``/manager`` (as their own images have it), installed from its own kustomize
tree in the module download (read-only, never copied into the project) through an overlay written at test
time, and removed without leaving anything behind.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.kube import Kube, wait_for
from tests.node.images import ROOT, Recipe

BUILD = ROOT / "scripts" / "build-neighbour"
NAMES = ("kueue", "jobset", "trainer")  # what the real node runs beside the hook, in the order built


@dataclass(frozen=True)
class Built:
    """What ``scripts/build-neighbour NAME`` printed: the release, the cached program, the module's files."""

    name: str
    version: str
    binary: Path
    module: Path


def build(name: str) -> Built:
    """Run the project's build script (a no-op on a warm cache); RuntimeError with its words if it fails."""
    done = subprocess.run([str(BUILD), name], capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        said = done.stderr[-2000:]
        raise RuntimeError(f"scripts/build-neighbour {name} failed ({done.returncode}): {said}")
    said = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return Built(name, said["version"], Path(said["binary"]), Path(said["module"]))


def recipe(built: Built, image: str) -> Recipe:
    """The program alone in an image named ``image``, at the path their Deployments run, non-root."""
    return Recipe(
        name=built.name,
        containerfile=(
            f'FROM scratch\nCOPY {built.name} /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n'
        ),
        context={built.name: built.binary},
        names=(image,),
    )


def kustomize(write: Callable[[Path], None]) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize`` renders from a folder that ``write`` fills (its kustomization names
    the module's trees by relative path: kustomize takes no absolute one)."""
    with tempfile.TemporaryDirectory(prefix="neighbour-overlay-") as scratch:
        write(Path(scratch))
        done = subprocess.run(
            ["kubectl", "kustomize", scratch], capture_output=True, text=True, timeout=120, check=False
        )
    if done.returncode != 0:
        raise AssertionError(f"kubectl kustomize over a neighbour's manifests failed:\n{done.stderr}")
    return [o for o in yaml.safe_load_all(done.stdout) if o]


def install(kube: Kube, objects: list[dict[str, Any]], probe: dict[str, Any]) -> None:
    """Apply the objects, wait for each Deployment's rollout, then until the webhooks answer (``probe``
    created with ``--dry-run=server`` goes through them)."""
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(objects))
    for deployment in (o for o in objects if o["kind"] == "Deployment"):
        where = deployment["metadata"]["namespace"]
        name = deployment["metadata"]["name"]
        kube.kubectl("-n", where, "rollout", "status", f"deployment/{name}", "--timeout=300s")

    said = [""]

    def webhooks_answer() -> bool:
        done = kube.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(probe), check=False)
        said[0] = done.stderr.strip()
        return done.returncode == 0

    wait_for(webhooks_answer, 180, lambda: f"the webhooks answering for a {probe['kind']} (last: {said[0]})")


# Every object of a kind as "namespace/name" ("/name" when cluster-scoped), one per line.
_EACH = '{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}'


def uninstall(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Webhooks first (nothing is refused while the neighbour goes), then its programs; then every object of
    its kinds left (one of a job still being deleted) loses the finalizers only its program would remove;
    then the rest. Waits until its namespaces and CRDs are gone."""
    hooks = [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    programs = [o for o in objects if o["kind"] == "Deployment"]
    rest = [o for o in objects if o not in hooks and o not in programs]
    namespaces = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
    for group in (hooks, programs):
        _delete(kube, group)
    for namespace in namespaces:
        kube.kubectl("-n", namespace, "wait", "--for=delete", "pods", "--all", "--timeout=120s", check=False)
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
    gone = lambda: not [n for n in namespaces if kube.get("namespaces", None, n)]  # noqa: E731
    wait_for(gone, 180, f"namespaces {namespaces} gone")
    names = [c["metadata"]["name"] for c in crds]
    wait_for(
        lambda: all(kube.get("customresourcedefinitions", None, n) is None for n in names),
        180,
        f"the CRDs {names} gone",
    )


def _delete(kube: Kube, group: list[dict[str, Any]]) -> None:
    if group:
        stdin = yaml.safe_dump_all(group)
        kube.kubectl("delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=stdin)
