"""Kubeflow Trainer and JobSet beside the hook on the real node, as they ship: the controller managers and
their webhooks, built from their Go modules (neighbours.py; the releases are pinned in
``scripts/build-neighbour``: Trainer v2.3.0, and JobSet v0.12.0, the release Trainer's go.mod requires).

- **JobSet** from its own ``config/default`` (namespace ``jobset-system``), our image under the name its
  release manifests give, and a smaller CPU request (the node has 2 CPUs).
- **Trainer** from its own bases (``manifests/base``: CRDs, manager, RBAC, webhook) as its ``manager``
  overlay puts them together, in ``kubeflow-system`` with the webhook's certificate Secret; that overlay's
  third JobSet part is a URL (JobSet's release asset), which cannot be fetched here, so JobSet comes from its
  module as above. Left out: the overlay's ConfigMap for Trainer's Python SDK, and the runtimes it ships
  (a converted job brings its own TrainingRuntime).
- Both make their webhook certificates themselves (their internal certificate management, on by default).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.kube import Kube
from tests.node import neighbours
from tests.node.images import Recipe
from tests.support.neighbour_builds import Built

NAMESPACE = "kubeflow-system"
JOBSET_NAMESPACE = "jobset-system"
API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
TRAINER_IMAGE = "ghcr.io/kubeflow/trainer/trainer-controller-manager"
JOBSET_IMAGE = "registry.k8s.io/jobset/jobset"
JOBSET_STAGING_IMAGE = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset"  # its config's name


def recipes(trainer: Built, jobset: Built) -> list[Recipe]:
    return [
        neighbours.recipe(trainer, f"{TRAINER_IMAGE}:{trainer.version}"),
        neighbours.recipe(jobset, f"{JOBSET_IMAGE}:{jobset.version}"),
    ]


def _relative(tree: Path, directory: Path) -> str:
    return os.path.relpath(tree, directory)


def _jobset_overlay(jobset: Built, directory: Path) -> None:
    kustomization = {
        "resources": [_relative(jobset.module / "config" / "default", directory)],
        "images": [{"name": JOBSET_STAGING_IMAGE, "newName": JOBSET_IMAGE, "newTag": jobset.version}],
        "patches": [
            {"target": {"kind": "Deployment"}, "patch": yaml.safe_dump([
                {"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests/cpu",
                 "value": "100m"},
            ])},
        ],
    }  # fmt: skip
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))


def _trainer_overlay(trainer: Built, directory: Path) -> None:
    base = trainer.module / "manifests" / "base"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    (directory / "namespace.yaml").write_text(yaml.safe_dump(namespace))
    kustomization = {
        "namespace": NAMESPACE,
        "resources": [
            "namespace.yaml",
            *(_relative(base / part, directory) for part in ("crds", "manager", "rbac", "webhook")),
        ],
        "images": [{"name": TRAINER_IMAGE, "newTag": trainer.version}],
        "secretGenerator": [{
            "name": "kubeflow-trainer-webhook-cert", "namespace": NAMESPACE,
            "options": {"disableNameSuffixHash": True},
        }],
    }  # fmt: skip
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))


def manifests(trainer: Built, jobset: Built) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(JobSet's objects, Trainer's objects), each as ``kubectl kustomize`` renders them."""
    return (
        neighbours.kustomize(lambda directory: _jobset_overlay(jobset, directory)),
        neighbours.kustomize(lambda directory: _trainer_overlay(trainer, directory)),
    )


def _probe_jobset() -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "probe", "image": "probe"}]}
    replicated = {"name": "probe", "template": {"spec": {"template": {"spec": pod}}}}
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {"name": "webhook-probe", "namespace": "default"},
        "spec": {"replicatedJobs": [replicated]},
    }


def _probe_runtime() -> dict[str, Any]:
    pod = {"containers": [{"name": "node", "image": "probe"}]}
    replicated = {"name": "node", "template": {"spec": {"template": {"spec": pod}}}}
    return {
        "apiVersion": API,
        "kind": "TrainingRuntime",
        "metadata": {"name": "webhook-probe", "namespace": "default"},
        "spec": {"template": {"spec": {"replicatedJobs": [replicated]}}},
    }


def install(kube: Kube, jobset: list[dict[str, Any]], trainer: list[dict[str, Any]]) -> None:
    """JobSet first (Trainer watches JobSets), each until its webhooks answer."""
    neighbours.install(kube, jobset, _probe_jobset())
    neighbours.install(kube, trainer, _probe_runtime())


def uninstall(kube: Kube, jobset: list[dict[str, Any]], trainer: list[dict[str, Any]]) -> None:
    neighbours.uninstall(kube, trainer)
    neighbours.uninstall(kube, jobset)
