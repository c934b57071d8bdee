"""scheduler-plugins' coscheduler beside the hook on the real node: a second kube-scheduler built with the
Coscheduling plugin, and the controller that keeps PodGroups' status, as its Helm chart installs them.

- **Built** from its Go module (``scripts/build-neighbour scheduler-plugins``: v0.34.7; the proxy refuses
  v0.35.0), each program alone in an image under the name the chart gives it.
- **Installed** from the chart ``manifests/install/charts/as-a-second-scheduler`` of the module download,
  rendered by the real helm (``tests/support/helm.py``) with the Coscheduling plugin alone (the chart's
  default list adds plugins whose CRDs it does not install) and our images; the chart installs no CRD, so
  the PodGroup and ElasticQuota CRDs (the controller watches both) come from the module's
  ``manifests/coscheduling`` and ``manifests/capacityscheduling``, as its install guide applies them. The
  chart's Permit timeout (``permitWaitingTimeSeconds: 10``) is kept: it is what a gang waits for its last
  Pod before the coscheduler gives the bound ones back. One flag is ours: kube-scheduler's
  ``--pod-max-in-unschedulable-pods-duration`` at ``UNSCHEDULABLE_FLUSH`` instead of 5 minutes. A gang the
  coscheduler refused for lack of room is retried only when a Pod or a PodGroup is created, a PodGroup
  changes, or that flush comes; a job ending frees room without any of them, so on this quiet node the
  next gang would wait the whole 5 minutes (measured once: docs/testing.md).
- **Removed** at the end as every neighbour is (``neighbours.uninstall``).
"""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from tests.e2e.kube import Kube
from tests.node import neighbours
from tests.node.images import Recipe
from tests.support import helm
from tests.support.neighbour_builds import Built

NAMESPACE = "scheduler-plugins"
RELEASE = "scheduler-plugins"
CHART = "manifests/install/charts/as-a-second-scheduler"
CRDS = ("manifests/coscheduling/crd.yaml", "manifests/capacityscheduling/crd.yaml")
# The chart's image of each program.
IMAGES = {"scheduler": "registry.k8s.io/scheduler-plugins/kube-scheduler",
          "controller": "registry.k8s.io/scheduler-plugins/controller"}  # fmt: skip
UNSCHEDULABLE_FLUSH = "20s"


def recipes(built: Built) -> list[Recipe]:
    return neighbours.recipes(built, IMAGES)


def manifests(built: Built) -> list[dict[str, Any]]:
    """The CRDs, the namespace (``helm install --create-namespace`` makes it), and what the chart renders."""
    values = [
        "plugins.enabled={Coscheduling}",
        f"scheduler.command={{/manager,--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_FLUSH}}}",
        f"scheduler.image={neighbours.image(built, IMAGES['scheduler'])}",
        f"controller.image={neighbours.image(built, IMAGES['controller'])}",
    ]
    command = [str(helm.helm()), "template", RELEASE, str(built.module / CHART), "--namespace", NAMESPACE]
    for value in values:
        command += ["--set", value]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise AssertionError(f"helm template {CHART} failed:\n{done.stderr}")
    crds = []
    for path in CRDS:
        with (built.module / path).open() as crd:
            crds += [o for o in yaml.safe_load_all(crd) if o]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [*crds, namespace, *(o for o in yaml.safe_load_all(done.stdout) if o)]


def install(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Apply the objects and wait for the scheduler's and the controller's rollouts (no webhook)."""
    neighbours.install(kube, objects, None)
