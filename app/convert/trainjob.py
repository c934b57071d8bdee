"""``mpijob convert --to trainjob``: an MPIJob as a Kubeflow Trainer v2 TrainJob on an OpenMPI runtime.

A TrainJob names a ClusterTrainingRuntime (which holds the pod templates and the MPI policy) and overrides
a few things: the trainer's image, command, env, node count, processes per node and resources, plus pod-level
overrides per replicated job (``launcher``, ``node``). What the MPIJob says that a TrainJob cannot is listed
as a note; the runtime must supply it.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from app.api.defaults import DEFAULT_SLOTS_PER_WORKER
from app.api.types import MPIJob
from app.convert.mpijob import TRAINJOB_API_VERSION, Conversion, ConvertError, as_object, to_v2beta1

POD_OVERRIDES = (
    "serviceAccountName", "nodeSelector", "affinity", "tolerations", "volumes", "schedulingGates",
    "imagePullSecrets",
)  # fmt: skip
_RUN_POLICY_WHY = {
    "cleanPodPolicy": "JobSet deletes its pods with the TrainJob; there is no per-policy cleanup",
    "ttlSecondsAfterFinished": "a TrainJob has no TTL",
    "activeDeadlineSeconds": "set it in the runtime's Job template",
    "backoffLimit": "set it in the runtime's Job template (or the JobSet failurePolicy)",
    "schedulingPolicy": "gang scheduling is the runtime's podGroupPolicy",
}


def to_trainjob(doc: dict[str, Any], runtime: str) -> Conversion:
    base = to_v2beta1(doc)
    job, notes = base.obj, base.notes
    try:
        MPIJob.model_validate(job)  # the shape is an MPIJob's: numbers are numbers, specs are objects
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConvertError(f"not a valid MPIJob ({where}: {first['msg']})") from None
    spec = as_object(job.get("spec"))
    specs = as_object(spec.get("mpiReplicaSpecs"))
    launcher, worker = as_object(specs.get("Launcher")), as_object(specs.get("Worker"))
    main = _first_container(launcher)
    trainer = _trainer(spec, main, _first_container(worker), worker, notes)
    train_spec: dict[str, Any] = {
        "runtimeRef": {"name": runtime, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": trainer,
    }
    overrides = [o for o in (_override("launcher", launcher), _override("node", worker)) if o]
    if overrides:
        train_spec["podTemplateOverrides"] = overrides
        notes.append(
            "podTemplateOverrides: they target the runtime's replicated jobs 'launcher' and 'node'; rename"
            " them if your runtime calls its jobs otherwise"
        )
    run_policy = as_object(spec.get("runPolicy"))
    if run_policy.get("suspend") is not None:
        train_spec["suspend"] = run_policy["suspend"]
    if run_policy.get("managedBy"):
        train_spec["managedBy"] = run_policy["managedBy"]
    _differences(spec, launcher, worker, notes)
    metadata = {k: v for k, v in as_object(job.get("metadata")).items() if k != "generateName"}
    obj = {"apiVersion": TRAINJOB_API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": train_spec}
    return Conversion(obj, notes)


def _first_container(replica: dict[str, Any]) -> dict[str, Any]:
    containers = as_object(as_object(replica.get("template")).get("spec")).get("containers")
    return as_object(containers[0]) if isinstance(containers, list) and containers else {}


def _trainer(
    spec: dict[str, Any], main: dict[str, Any], node: dict[str, Any], worker: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    trainer = {k: copy.deepcopy(main[k]) for k in ("image", "command", "args", "env") if main.get(k)}
    nodes = int(worker.get("replicas") or 0)
    if spec.get("runLauncherAsWorker"):
        nodes += 1
        notes.append(
            "spec.runLauncherAsWorker: numNodes counts the launcher; the runtime must set"
            " mlPolicy.mpi.runLauncherAsNode: true"
        )
    trainer["numNodes"] = nodes
    trainer["numProcPerNode"] = int(spec.get("slotsPerWorker", DEFAULT_SLOTS_PER_WORKER))
    if node.get("resources"):
        trainer["resourcesPerNode"] = copy.deepcopy(node["resources"])
    if node.get("image") and node.get("image") != main.get("image"):
        notes.append(
            f"Worker image {node['image']!r}: a TrainJob has one trainer image ({main.get('image')!r}); the"
            " runtime's node template must use the worker image"
        )
    return trainer


def _override(target: str, replica: dict[str, Any]) -> dict[str, Any] | None:
    template = as_object(replica.get("template"))
    pod = as_object(template.get("spec"))
    spec = {k: copy.deepcopy(pod[k]) for k in POD_OVERRIDES if pod.get(k)}
    meta = {
        k: copy.deepcopy(v)
        for k, v in as_object(template.get("metadata")).items()
        if k in ("labels", "annotations")
    }
    if not spec and not meta:
        return None
    override: dict[str, Any] = {"targetJobs": [{"name": target}]}
    if meta:
        override["metadata"] = meta
    if spec:
        override["spec"] = spec
    return override


def _differences(
    spec: dict[str, Any], launcher: dict[str, Any], worker: dict[str, Any], notes: list[str]
) -> None:
    implementation = spec.get("mpiImplementation", "OpenMPI")
    if implementation != "OpenMPI":
        notes.append(f"spec.mpiImplementation: {implementation}: Trainer's MPI runtime supports OpenMPI only")
    for key, value in as_object(spec.get("runPolicy")).items():
        if key in _RUN_POLICY_WHY and value is not None:
            notes.append(f"spec.runPolicy.{key}: not carried over: {_RUN_POLICY_WHY[key]}")
    if spec.get("failurePolicy") is not None:
        notes.append(
            "spec.failurePolicy: not carried over: a TrainJob has no such field; the runtime's JobSet"
            " failurePolicy (maxRestarts, rules) and its Jobs' podFailurePolicy (exit codes, Pod conditions)"
            " come closest"
        )
    if spec.get("launcherCreationPolicy") == "WaitForWorkersReady":
        notes.append("spec.launcherCreationPolicy: the runtime's launcher dependsOn node Ready does this")
    if spec.get("sshAuthMountPath"):
        notes.append(
            "spec.sshAuthMountPath: the runtime's mlPolicy.mpi.sshAuthMountPath must be"
            f" {spec['sshAuthMountPath']}"
        )
    for kind, replica in (("Launcher", launcher), ("Worker", worker)):
        _container_differences(kind, replica, notes)
    notes.append(
        "hostfile: Trainer writes short host names (<job>-node-0-0.<job>) and mounts it on the launcher only;"
        " mpirun -np must equal numNodes x numProcPerNode"
    )


def _container_differences(kind: str, replica: dict[str, Any], notes: list[str]) -> None:
    pod = as_object(as_object(replica.get("template")).get("spec"))
    raw = pod.get("containers")
    containers = [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
    for index, container in enumerate(containers):
        where = f"spec.mpiReplicaSpecs.{kind}.template.spec.containers[{index}]"
        if index > 0:
            notes.append(
                f"{where}: extra container {container.get('name')!r} not carried over (runtime template)"
            )
            continue
        carried = (
            {"name", "image", "command", "args", "env"}
            if kind == "Launcher"
            else {"name", "image", "resources"}
        )
        lost = sorted(set(container) - carried)
        if lost:
            notes.append(f"{where}: {', '.join(lost)} not carried over (set them in the runtime's template)")
    for key in sorted(set(pod) - set(POD_OVERRIDES) - {"containers"}):
        notes.append(f"spec.mpiReplicaSpecs.{kind}.template.spec.{key}: not carried over (runtime template)")
