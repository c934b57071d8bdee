"""``mpijob convert --to trainjob``: an MPIJob as a Kubeflow Trainer v2.3 TrainJob that runs the same job.

By default each MPIJob becomes a namespaced TrainingRuntime derived from it (``trainer_runtime``: its
templates, MPI policy, gang and failure policies) and a TrainJob of the same name that references it, with
``numNodes`` counted as Trainer counts it: the workers, plus the launcher when it is one of the nodes
(``runLauncherAsWorker``, Trainer's ``runLauncherAsNode``). With an existing (Cluster)TrainingRuntime
(``trainer_patches``), the TrainJob carries what differs as ``trainer`` fields and ``runtimePatches``.

What Trainer cannot run is refused (``ConvertError``, with the reason and the way out), never turned into a
TrainJob that would run differently; what it runs otherwise, or not at all, is a note saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from app.api.defaults import Job, with_defaults
from app.api.types import MULTIKUEUE_CONTROLLER, LauncherCreationPolicy, MPIJob
from app.api.validation import aggregate, validate
from app.convert import trainer
from app.convert.conversion import Conversion, ConvertError
from app.convert.mpijob import to_v2beta1
from app.convert.trainer_failures import map_failure_policy
from app.convert.trainer_notes import derived_notes, order_notes, workload_api_notes
from app.convert.trainer_patches import RuntimeFit, fit_runtime
from app.convert.trainer_runtime import derived_runtime
from app.kube.gang import GangScheduler, gang_scheduler
from app.kube.names import KUBECTL_LAST_APPLIED_ANNOTATION


@dataclass(frozen=True)
class Target:
    """What the TrainJobs run on: a TrainingRuntime derived from each job (no ``runtime``), or the given
    (Cluster)TrainingRuntime. ``gang_scheduling`` is the hook's setting the job ran under (derived only)."""

    runtime: dict[str, Any] | None = None
    gang_scheduling: str = ""


def to_trainjob(doc: dict[str, Any], target: Target | None = None) -> Conversion:
    target = target or Target()
    base = to_v2beta1(doc)
    job = checked_job(base.obj)
    configured = gang_scheduler(target.gang_scheduling)
    # Trainer v2.3's podGroupPolicy knows Volcano and the coscheduler only: the Workload API is not carried.
    gang = None if configured is not None and configured.kubernetes else configured
    refuse_what_trainer_cannot_run(job, gang)
    notes = list(base.notes) + (workload_api_notes(job) if gang is not configured else []) + order_notes(job)
    if target.runtime is None:
        failures = map_failure_policy(job)
        runtime = derived_runtime(job, gang, failures)
        notes += failures.notes + derived_notes(job, gang)
        ref = {"apiGroup": trainer.GROUP, "kind": trainer.TRAINING_RUNTIME, "name": job.name}
        fit = RuntimeFit(ref)
        prerequisites = [runtime]
    else:
        if configured is not None:
            raise ConvertError("--gang-scheduling goes without --runtime: a runtime's podGroupPolicy decides")
        fit = fit_runtime(job, target.runtime)
        notes += fit.notes
        prerequisites = []
    return Conversion(_trainjob(job, base.obj, fit), notes, prerequisites)


def checked_job(obj: dict[str, Any]) -> Job:
    """The v2beta1 job, defaulted, if the hook would run it: an invalid one converts to nothing."""
    try:
        job = with_defaults(MPIJob.model_validate(obj))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConvertError(f"not a valid MPIJob ({where}: {first['msg']})") from None
    errors = validate(job)
    if errors:
        raise ConvertError(f"not a valid MPIJob: {aggregate(errors)}")
    return job


def refuse_what_trainer_cannot_run(job: Job, gang: GangScheduler | None) -> None:
    if job.mpi_implementation not in trainer.MPI_IMPLEMENTATIONS:
        raise ConvertError(
            f"spec.mpiImplementation {job.mpi_implementation}: Kubeflow Trainer {trainer.TRAINER_VERSION}"
            f" runs {' and '.join(trainer.MPI_IMPLEMENTATIONS)} only (its mlPolicy.mpi.mpiImplementation"
            " accepts no other): keep this job an MPIJob, or move its image to Open MPI first"
        )
    longest = trainer.longest_pod_name(job.name, job.worker_replicas)
    if longest > trainer.POD_NAME_MAX:
        raise ConvertError(
            f"metadata.name {job.name!r} is too long for Trainer: JobSet names its Pods"
            f" <name>-{trainer.LAUNCHER_JOB}-0-0-<5 characters> and <name>-{trainer.NODE_JOB}-0-<index>-<5"
            f" characters>, at most {trainer.POD_NAME_MAX} characters ({longest} here); give the"
            " TrainJob a shorter name"
        )
    if job.run_policy.active_deadline_seconds == 0:
        raise ConvertError(
            "spec.runPolicy.activeDeadlineSeconds 0 fails the job at once; a TrainJob's activeDeadlineSeconds"
            " must be at least 1: remove it, or set the deadline you mean"
        )
    waits = job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
    if gang is not None and waits:
        raise ConvertError(
            "launcherCreationPolicy WaitForWorkersReady with gang scheduling: Trainer's PodGroup counts the"
            " launcher from the start, and a launcher that waits for Ready nodes is never created, so the"
            " gang never fits (kubeflow/mpi-operator#608, which the hook avoids); use AtStartup (ssh"
            " retries until the nodes answer), or convert without --gang-scheduling"
        )


def _trainjob(job: Job, obj: dict[str, Any], fit: RuntimeFit) -> dict[str, Any]:
    # Trainer counts the launcher among the nodes when it runs ranks (runLauncherAsNode, checked to be
    # runLauncherAsWorker), and then makes numNodes - 1 node Pods (pkg/runtime/framework/plugins/mpi).
    nodes = job.worker_replicas + int(job.run_launcher_as_worker)
    # numProcPerNode always: left out, Trainer would count GPUs per node instead of slots.
    train: dict[str, Any] = {**fit.trainer, "numNodes": nodes, "numProcPerNode": job.slots_per_worker}
    spec: dict[str, Any] = {"runtimeRef": fit.runtime_ref, "trainer": train}
    if fit.patch is not None:
        spec["runtimePatches"] = [{"manager": trainer.PATCH_MANAGER, "trainingRuntimeSpec": fit.patch}]
    policy = job.run_policy
    if policy.suspend is not None:
        spec["suspend"] = policy.suspend
    if policy.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = policy.active_deadline_seconds
    if policy.managed_by == MULTIKUEUE_CONTROLLER:
        spec["managedBy"] = MULTIKUEUE_CONTROLLER
    source = dict(obj.get("metadata") or {})
    # An MPIJob read from the cluster (kubectl get -o yaml) carries kubectl's copy of its own manifest.
    kept = {
        k: v for k, v in (source.get("annotations") or {}).items() if k != KUBECTL_LAST_APPLIED_ANNOTATION
    }
    source["annotations"] = kept
    metadata = {k: source[k] for k in ("name", "namespace", "labels", "annotations") if source.get(k)}
    return {"apiVersion": trainer.API_VERSION, "kind": trainer.TRAINJOB, "metadata": metadata, "spec": spec}
