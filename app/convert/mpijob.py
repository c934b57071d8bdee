"""``mpijob convert``: old MPIJobs to ``kubeflow.org/v2beta1`` (the TrainJob side is ``trainjob.py``).

Reads every version lint and render send here (``OLD_API_VERSIONS``): ``kubeflow.org/v1alpha2`` and
``kubeflow.org/v1`` MPIJobs, both mpi-operator's and training-operator's (same group and version, a superset
of fields); ``v1alpha1``'s one-template shape, also where old files kept it under a later apiVersion
(``v1alpha1.py``); ``v2``, v2beta1's name before its first release; and v2beta1 itself (for ``--to
trainjob``). Every field that cannot be carried over, or changes meaning, becomes a note saying why;
nothing is dropped silently. Pure functions of the manifest: the CLI prints the object and the notes.
"""

from __future__ import annotations

import copy
from typing import Any

from app.api import field_path
from app.api.types import API_VERSION as V2BETA1
from app.api.types import OLD_API_VERSIONS
from app.convert import v1alpha1
from app.convert.conversion import Conversion, ConvertError, as_object

V1ALPHA1 = "kubeflow.org/v1alpha1"
# v2beta1 before its first release (mpi-operator renamed it in July 2021): the same fields, renamed only.
V2 = "kubeflow.org/v2"
_DISTRIBUTIONS = {"open_mpi": "OpenMPI", "intel_mpi": "Intel", "mpich": "MPICH"}
_IMPLEMENTATIONS = ("OpenMPI", "Intel", "MPICH")
_RUN_POLICY = (
    "cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit", "suspend",
)  # fmt: skip
_SCHEDULING = ("minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds")
_KEPT_METADATA = ("name", "namespace", "generateName", "labels", "annotations")
_RESTART = {"Launcher": "OnFailure", "Worker": "Never"}


def to_v2beta1(doc: dict[str, Any]) -> Conversion:
    """An MPIJob of any version we read as v2beta1; a v2beta1 one comes back unchanged."""
    _check_mpijob(doc, (*OLD_API_VERSIONS, V2BETA1))
    spec = as_object(doc.get("spec"))
    if doc["apiVersion"] in (V2, V2BETA1):
        return _early_v2beta1(doc)
    notes: list[str] = []
    if doc["apiVersion"] == V1ALPHA1 or v1alpha1.has_v1alpha1_shape(spec):
        if doc["apiVersion"] != V1ALPHA1:
            notes.append(
                f"spec: v1alpha1's shape (no spec.mpiReplicaSpecs) under apiVersion {doc['apiVersion']}:"
                " read as v1alpha1, the only version that ran it"
            )
        out_spec = v1alpha1.v2beta1_spec(spec, notes)
    else:
        out_spec = _from_replica_specs(spec, notes)
    _require_launcher_and_worker(out_spec)
    notes.append(
        "workers: the v1 operators reached workers with kubectl exec; v2beta1 uses SSH, so the worker image"
        " must run sshd (no command: the image's default) and the launcher's user needs ~/.ssh at"
        " sshAuthMountPath (default /root/.ssh; /home/mpiuser/.ssh for mpioperator's non-root images)"
    )
    obj = {"apiVersion": V2BETA1, "kind": "MPIJob", "metadata": _metadata(doc, notes), "spec": out_spec}
    return Conversion(obj, notes)


def _from_replica_specs(spec: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """A v1alpha2 or v1 spec (mpi-operator's or training-operator's) as v2beta1."""
    out_spec: dict[str, Any] = {}
    if "slotsPerWorker" in spec:
        out_spec["slotsPerWorker"] = spec["slotsPerWorker"]
    if spec.get("runLauncherAsWorker") is not None:
        out_spec["runLauncherAsWorker"] = spec["runLauncherAsWorker"]
    run_policy = _run_policy(spec, notes)
    if run_policy:
        out_spec["runPolicy"] = run_policy
    implementation = _implementation(spec, notes)
    if implementation:
        out_spec["mpiImplementation"] = implementation
    out_spec["mpiReplicaSpecs"] = _replica_specs(spec, notes)
    _require_launcher_and_worker(out_spec)
    _note_ignored(spec, notes)
    return out_spec


def _check_mpijob(doc: Any, versions: tuple[str, ...]) -> None:
    if not isinstance(doc, dict) or doc.get("kind") != "MPIJob":
        raise ConvertError("not an MPIJob")
    if doc.get("apiVersion") not in versions:
        raise ConvertError(
            f"apiVersion {doc.get('apiVersion')!s:.40}: no MPI operator served it; convert reads"
            f" {', '.join(versions)}"
        )


_MOVED_TO_RUN_POLICY = ("cleanPodPolicy", "backoffLimit", "activeDeadlineSeconds")


def _early_v2beta1(doc: dict[str, Any]) -> Conversion:
    """A v2beta1 job as is, except what early v2beta1 (and ``v2``, its name before its first release) had:
    ``cleanPodPolicy``, ``backoffLimit`` and ``activeDeadlineSeconds`` at spec level, which the CRD has in
    runPolicy only (kubectl apply rejects them at spec), so they move there unless runPolicy has its own;
    ``mainContainer``, which v2beta1 dropped for the launcher's first container."""
    job = copy.deepcopy(doc)
    spec = as_object(job.get("spec"))
    _require_launcher_and_worker(spec)
    notes: list[str] = []
    if job["apiVersion"] == V2:
        job["apiVersion"] = V2BETA1
        notes.append(f"apiVersion: {V2} is {V2BETA1} under its name before its first release (same fields)")
    for key in (k for k in _MOVED_TO_RUN_POLICY if k in spec):
        value = spec.pop(key)
        policy = spec.setdefault("runPolicy", {})
        if not isinstance(policy, dict):
            notes.append(f"spec.{key}: {value!r} dropped (spec.runPolicy is not an object)")
        elif key in policy:
            notes.append(f"spec.{key}: {value!r} dropped, runPolicy.{key} {policy[key]!r} takes precedence")
        else:
            policy[key] = value
            notes.append(f"spec.{key}: moved to spec.runPolicy.{key} (v2beta1 has it there only)")
    if "mainContainer" in spec:
        _main_container_first(spec.pop("mainContainer"), as_object(spec.get("mpiReplicaSpecs")), notes)
    return Conversion(job, notes)


def _require_launcher_and_worker(spec: dict[str, Any]) -> None:
    """Convert never prints a job without both replica specs: it would be no job at all."""
    specs = as_object(spec.get("mpiReplicaSpecs"))
    missing = [kind for kind in _RESTART if not isinstance(specs.get(kind), dict)]
    if missing:
        raise ConvertError(
            f"no {' or '.join(missing)} in spec.mpiReplicaSpecs: the result would not be a job; add"
            f" {', '.join(field_path.replica_spec(k) for k in missing)} to the input"
        )


def _metadata(doc: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    metadata = as_object(doc.get("metadata"))
    dropped = sorted(k for k in metadata if k not in _KEPT_METADATA)
    if dropped:
        notes.append(f"metadata: {', '.join(dropped)} dropped (set by the apiserver for the old object)")
    if "status" in doc:
        notes.append("status: dropped (the new controller writes its own)")
    return {k: copy.deepcopy(metadata[k]) for k in _KEPT_METADATA if k in metadata}


def _run_policy(spec: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """runPolicy wins over the older spec-level fields, as the v1 types documented."""
    source = as_object(spec.get("runPolicy"))
    policy = {k: copy.deepcopy(source[k]) for k in _RUN_POLICY if k in source}
    for key in ("cleanPodPolicy", "backoffLimit", "activeDeadlineSeconds"):
        if key in spec and key in policy and spec[key] != policy[key]:
            notes.append(
                f"spec.{key}: {spec[key]!r} ignored, runPolicy.{key} {policy[key]!r} takes precedence"
            )
        elif key in spec:
            policy[key] = spec[key]
    if isinstance(source.get("schedulingPolicy"), dict):
        scheduling = source["schedulingPolicy"]
        policy["schedulingPolicy"] = {k: copy.deepcopy(scheduling[k]) for k in _SCHEDULING if k in scheduling}
        for key in sorted(set(scheduling) - set(_SCHEDULING)):
            notes.append(f"spec.runPolicy.schedulingPolicy.{key}: dropped (not in v2beta1)")
    manager = source.get("managedBy")
    if manager == "kueue.x-k8s.io/multikueue":
        policy["managedBy"] = manager
    elif manager is not None:
        notes.append(
            f"spec.runPolicy.managedBy: {manager!r} dropped: the MPI operator manages the v2beta1 job"
        )
    for key in sorted(set(source) - {*_RUN_POLICY, "schedulingPolicy", "managedBy"}):
        notes.append(f"spec.runPolicy.{key}: dropped (not in v2beta1)")
    if policy.get("cleanPodPolicy") is None:
        notes.append(
            "spec.runPolicy.cleanPodPolicy: unset, so None: finished jobs keep their workers (and GPUs);"
            " consider Running"
        )
    return policy


def _implementation(spec: dict[str, Any], notes: list[str]) -> str | None:
    if "mpiDistribution" in spec:
        value = _DISTRIBUTIONS.get(str(spec["mpiDistribution"]))
        if value is None:
            notes.append(f"spec.mpiDistribution: {spec['mpiDistribution']!r} unknown, OpenMPI assumed")
        return value
    value = spec.get("mpiImplementation")
    if value is not None and value not in _IMPLEMENTATIONS:
        notes.append(
            f"spec.mpiImplementation: {value!r} is not one of {', '.join(_IMPLEMENTATIONS)}, dropped"
        )
        return None
    return value if isinstance(value, str) else None


def _replica_specs(spec: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    source = as_object(spec.get("mpiReplicaSpecs"))
    out: dict[str, Any] = {}
    for kind, replica in source.items():
        if kind not in _RESTART or not isinstance(replica, dict):
            notes.append(f"{field_path.replica_spec(kind)}: dropped (v2beta1 has Launcher and Worker only)")
            continue
        new = {k: copy.deepcopy(replica[k]) for k in ("replicas", "template") if k in replica}
        policy = replica.get("restartPolicy")
        if policy in ("OnFailure", "Never"):
            new["restartPolicy"] = policy
        elif policy is not None:
            notes.append(
                f"{field_path.replica_spec(kind)}.restartPolicy: {policy!r} is not supported by v2beta1"
                f" (OnFailure or Never); left to the default {_RESTART[kind]}"
            )
        for key in sorted(set(replica) - {"replicas", "template", "restartPolicy"}):
            notes.append(f"{field_path.replica_spec(kind)}.{key}: dropped (not a replica spec field)")
        out[kind] = new
    _main_container_first(spec.get("mainContainer"), out, notes)
    return out


def _main_container_first(main: Any, specs: dict[str, Any], notes: list[str]) -> None:
    """v2beta1 has no mainContainer: the launcher's first container is the MPI one."""
    if not main:
        return
    template = as_object(as_object(specs.get("Launcher")).get("template"))
    containers = as_object(template.get("spec")).get("containers")
    if not isinstance(containers, list):
        containers = []
    names = [c.get("name") if isinstance(c, dict) else None for c in containers]
    if main in names and names[0] != main:
        containers.insert(0, containers.pop(names.index(main)))
        notes.append(f"spec.mainContainer: dropped; container {main!r} moved first in the launcher")
    else:
        notes.append("spec.mainContainer: dropped (v2beta1 uses the launcher's first container)")


def _note_ignored(spec: dict[str, Any], notes: list[str]) -> None:
    known = {
        "slotsPerWorker", "runLauncherAsWorker", "runPolicy", "mpiDistribution", "mpiImplementation",
        "mpiReplicaSpecs", "mainContainer", "cleanPodPolicy", "backoffLimit", "activeDeadlineSeconds",
    }  # fmt: skip
    for key in sorted(set(spec) - known):
        notes.append(f"spec.{key}: dropped (not in v2beta1)")
