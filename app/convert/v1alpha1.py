"""v1alpha1's one-template MPIJob as the v2beta1 Launcher and Workers the v1alpha1 operator made of it.

A v1alpha1 spec has one pod template and a size: ``gpus`` or ``processingUnits`` (in total, split into workers
of at most a node's worth each), or ``replicas`` (workers, each with the template's own limit). The operator
ran the template as the launcher (the first container's resources removed, restartPolicy OnFailure unless
Never) and as a StatefulSet of workers (the first container's command replaced by ``sleep``, its limit set
to the worker's share), with a hostfile of one line per worker and ``slotsPerWorker`` (default: the share)
slots. When the launcher finished it scaled the workers to zero. Read from mpi-operator v0.2's
``pkg/controllers/v1alpha1`` and ``cmd/mpi-operator.v1alpha1``; a job that operator refused is refused here,
with the edit that makes it convert.
"""

from __future__ import annotations

import copy
from typing import Any

from app.convert.conversion import ConvertError, as_object
from app.kube.quantity import parse_quantity

# Fields only the v1alpha1 shape has: one of them, and no mpiReplicaSpecs, is that shape (whatever the
# apiVersion says: some old examples kept it under v1alpha2 and v1).
SHAPE_FIELDS = ("gpus", "processingUnits", "processingResourceType", "replicas", "template")
_FIELDS = (
    *SHAPE_FIELDS, "gpusPerNode", "processingUnitsPerNode", "slotsPerWorker", "launcherOnMaster",
    "backoffLimit", "activeDeadlineSeconds",
)  # fmt: skip
_GPU = "nvidia.com/gpu"
_RESOURCE_TYPES = (_GPU, "cpu")
# The per-node size the v1alpha1 operator split a total into when the job gave none: ``--gpus-per-node``
# was 8 in its deploy/ manifests (the install the README gave), ``--processing-units-per-node`` its flag's
# default, 1.
_ASSUMED_PER_NODE = {"gpus": 8, "processingUnits": 1}
_PER_NODE_FIELD = {"gpus": "gpusPerNode", "processingUnits": "processingUnitsPerNode"}
# The launcherOnMaster placement, as v1alpha1 wrote it (node-role.kubernetes.io/master).
_MASTER = "node-role.kubernetes.io/master"


def has_v1alpha1_shape(spec: dict[str, Any]) -> bool:
    return "mpiReplicaSpecs" not in spec and any(k in spec for k in SHAPE_FIELDS)


def v2beta1_spec(spec: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The v2beta1 spec that runs what the v1alpha1 operator ran for ``spec``; ``notes`` get what differs."""
    if "mpiReplicaSpecs" in spec:
        raise ConvertError(
            "spec.mpiReplicaSpecs under v1alpha1, which has no replica specs: set apiVersion kubeflow.org/v1"
            " (the version that has them) and convert again"
        )
    template = _template(spec)
    resource = _resource_type(spec, notes)
    workers, share = _workers_and_share(spec, template, resource, notes)
    slots = spec.get("slotsPerWorker", share or 1)
    run_policy: dict[str, Any] = {"cleanPodPolicy": "All"}
    notes.append(
        "spec.runPolicy.cleanPodPolicy: All, as the v1alpha1 operator deleted every worker when the"
        " launcher finished"
    )
    for key in ("backoffLimit", "activeDeadlineSeconds"):
        if key in spec:
            run_policy[key] = spec[key]
    launcher: dict[str, Any] = {"replicas": 1, "template": _launcher_template(spec, template, notes)}
    if as_object(template.get("spec")).get("restartPolicy") == "Never":
        launcher["restartPolicy"] = "Never"
    worker = {"replicas": workers, "template": _worker_template(template, resource, share, notes)}
    for key in sorted(set(spec) - set(_FIELDS)):
        notes.append(f"spec.{key}: dropped (not in v1alpha1)")
    return {
        "slotsPerWorker": slots,
        "runPolicy": run_policy,
        "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker},
    }


def _template(spec: dict[str, Any]) -> dict[str, Any]:
    template = spec.get("template")
    containers = as_object(as_object(template).get("spec")).get("containers")
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        raise ConvertError(
            "spec.template.spec.containers has no container: the v1alpha1 operator ran the template's first"
            " container as the launcher and the workers; add one"
        )
    return as_object(template)


def _resource_type(spec: dict[str, Any], notes: list[str]) -> str:
    value = spec.get("processingResourceType") or _GPU
    if value not in _RESOURCE_TYPES:
        notes.append(
            f"spec.processingResourceType: {str(value)[:64]!r} is neither {' nor '.join(_RESOURCE_TYPES)}:"
            f" {_GPU} used, as the v1alpha1 operator did"
        )
        return _GPU
    return str(value)


def _count(spec: dict[str, Any], key: str) -> int | None:
    """A positive whole number the job sizes by, or ``None`` when unset."""
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConvertError(f"spec.{key}: {str(value)[:64]} is not a whole number of at least 1; fix it")
    return value


def _workers_and_share(
    spec: dict[str, Any], template: dict[str, Any], resource: str, notes: list[str]
) -> tuple[int, int]:
    """How many workers, and how many units of ``resource`` each (0: none, the template's limits kept)."""
    totals = [key for key in ("gpus", "processingUnits") if _count(spec, key) is not None]
    if len(totals) == 2:
        raise ConvertError(
            "spec.gpus and spec.processingUnits are both set: the v1alpha1 operator refused such a job;"
            " keep one"
        )
    if totals:
        if "replicas" in spec:
            notes.append(f"spec.replicas: ignored, spec.{totals[0]} sizes the job (as in v1alpha1)")
        return _split(spec, totals[0], notes)
    replicas = _count(spec, "replicas")
    if replicas is None:
        raise ConvertError(
            "none of spec.gpus, spec.processingUnits, spec.replicas: the v1alpha1 operator started no worker;"
            " add spec.replicas (the number of workers)"
        )
    limits = as_object(as_object(_first_container(template).get("resources")).get("limits"))
    return replicas, _whole(limits.get(resource))


def _split(spec: dict[str, Any], key: str, notes: list[str]) -> tuple[int, int]:
    """A total split into workers of one node's worth each, or one smaller worker."""
    total = _count(spec, key) or 0
    per_node = _count(spec, _PER_NODE_FIELD[key])
    if per_node is None:
        per_node = _ASSUMED_PER_NODE[key]
        notes.append(
            f"spec.{key}: {total} split as by the v1alpha1 operator's default {per_node} per node (no"
            f" spec.{_PER_NODE_FIELD[key]}); if yours ran with another --{_flag(key)}-per-node, add"
            f" spec.{_PER_NODE_FIELD[key]}: N to the input and convert again"
        )
    if total < per_node:
        return 1, total
    if total % per_node:
        raise ConvertError(
            f"spec.{key}: {total} is not a multiple of {per_node} per node, which the v1alpha1 operator"
            f" refused; set spec.{_PER_NODE_FIELD[key]} to a divisor of {total} (what each node has)"
        )
    return total // per_node, per_node


def _flag(key: str) -> str:
    return "gpus" if key == "gpus" else "processing-units"


def _whole(quantity: Any) -> int:
    """A limit as a whole number, 0 when it is none (as the v1alpha1 operator read it)."""
    parsed = parse_quantity(quantity) if isinstance(quantity, int | float | str) else None
    if parsed is None or parsed[0] != parsed[0].to_integral_value():
        return 0
    return int(parsed[0])


def _first_container(template: dict[str, Any]) -> dict[str, Any]:
    containers = as_object(template.get("spec")).get("containers")
    return as_object(containers[0]) if isinstance(containers, list) and containers else {}


def _launcher_template(spec: dict[str, Any], template: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The template with no resources on its first container (the workers hold them) and, with
    launcherOnMaster, v1alpha1's toleration and node affinity for the master."""
    launcher = copy.deepcopy(template)
    pod = as_object(launcher.get("spec"))
    pod.pop("restartPolicy", None)
    container = _first_container(launcher)
    if container.pop("resources", None):
        notes.append(
            f"Launcher: resources of container {container.get('name')!r} dropped: the v1alpha1 operator gave"
            " the launcher none (only the workers held processing units)"
        )
    if spec.get("launcherOnMaster") is True:
        replaced = [key for key in ("tolerations", "affinity") if pod.get(key)]
        pod["tolerations"] = [{"key": _MASTER, "effect": "NoSchedule"}]
        requirement = {"key": _MASTER, "operator": "Exists"}
        terms = [{"matchExpressions": [requirement]}]
        pod["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
        notes.append(
            f"spec.launcherOnMaster: the launcher tolerates and requires {_MASTER}"
            + (f" (its own {' and '.join(replaced)} replaced, as v1alpha1 did)" if replaced else "")
            + "; clusters since Kubernetes 1.24 label node-role.kubernetes.io/control-plane: change both keys"
        )
    return launcher


def _worker_template(template: dict[str, Any], resource: str, share: int, notes: list[str]) -> dict[str, Any]:
    """The template with its first container running the image's default command (sshd for v2beta1;
    v1alpha1 ran ``sleep`` there) and limited to the worker's share."""
    worker = copy.deepcopy(template)
    as_object(worker.get("spec")).pop("restartPolicy", None)
    container = _first_container(worker)
    dropped = [key for key in ("command", "args") if container.pop(key, None) is not None]
    if dropped:
        notes.append(
            f"Worker: {' and '.join(dropped)} of container {container.get('name')!r} dropped: the v1alpha1"
            " operator ran sleep there; v2beta1 workers run the image's default, which must start sshd"
        )
    resources = container.setdefault("resources", {})
    limits = resources.setdefault("limits", {}) if isinstance(resources, dict) else None
    if share and isinstance(limits, dict) and _whole(limits.get(resource)) != share:
        if resource in limits:
            notes.append(
                f"Worker: {resource} limit {limits[resource]!r} of container {container.get('name')!r}"
                f" replaced by {share}, each worker's share, as the v1alpha1 operator did"
            )
        limits[resource] = share
    if not limits and isinstance(resources, dict):
        resources.pop("limits", None)
    if not resources:
        container.pop("resources", None)
    return worker
