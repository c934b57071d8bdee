"""What every neighbour the real node runs beside the hook (Volcano, the coscheduler, Kueue, Trainer, JobSet)
has in common: built from its Go module by ``scripts/build-neighbour`` (pinned there; cached outside the
clone by version), each static program alone in an image at ``/manager``, installed from its own manifests
in the module download (read-only, never copied into the project: a kustomize tree through an overlay
written at test time, a release manifest, a Helm chart), and removed without leaving anything behind.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.kube import Kube, wait_for
from tests.node.images import Recipe
from tests.support.neighbour_builds import Built

# What the real node runs beside the hook, built in the order the test modules need them (as .ci/run does).
NAMES = ("volcano", "scheduler-plugins", "kueue", "jobset", "trainer")


def recipe(built: Built, image: str, program: str = "") -> Recipe:
    """The program (``program`` of a neighbour that has several) alone in an image named ``image``, at the
    path their Deployments run, non-root."""
    name = f"{built.name}-{program}" if program else built.name
    binary = built.programs[program] if program else built.binary
    return Recipe(
        name=name,
        containerfile=f'FROM scratch\nCOPY {name} /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n',
        context={name: binary},
        names=(image,),
    )


def image(built: Built, repository: str) -> str:
    """A program's image: the repository its manifests name, tagged with the release built."""
    return f"{repository}:{built.version}"


def recipes(built: Built, repositories: dict[str, str]) -> list[Recipe]:
    """One image per program of a neighbour that has several (``repositories`` by program name)."""
    return [recipe(built, image(built, repository), program) for program, repository in repositories.items()]


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


def install(kube: Kube, objects: list[dict[str, Any]], probe: dict[str, Any] | None) -> None:
    """Apply the objects, wait for each Deployment's rollout, then until the webhooks answer (``probe``
    created with ``--dry-run=server`` goes through them; None: it has none)."""
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(objects))
    for deployment in (o for o in objects if o["kind"] == "Deployment"):
        where = deployment["metadata"]["namespace"]
        name = deployment["metadata"]["name"]
        kube.kubectl("-n", where, "rollout", "status", f"deployment/{name}", "--timeout=300s")

    if probe is None:
        return
    said = [""]

    def webhooks_answer() -> bool:
        done = kube.kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(probe), check=False)
        said[0] = done.stderr.strip()
        return done.returncode == 0

    wait_for(webhooks_answer, 180, lambda: f"the webhooks answering for a {probe['kind']} (last: {said[0]})")


@contextmanager
def applied(kube: Kube, made: list[dict[str, Any]]) -> Iterator[None]:
    """A neighbour's objects applied for one test and deleted after it (cluster-scoped ones, like Kueue's
    ClusterQueues or Volcano's Queues, outlive the test's namespace)."""
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(made))
    try:
        yield
    finally:
        kube.kubectl(
            "delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=yaml.safe_dump_all(made)
        )


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
