"""An MPIJob onto an existing (Cluster)TrainingRuntime: what differs as ``trainer`` fields and runtimePatches.

A runtime fits a job when its MPI policy is the job's (nodes counted the same way, the same SSH path), its
launcher is the trainer step, and what the TrainJob may change (the launcher's image, command, args, env and
resources; labels, annotations and the patchable Pod fields of both jobs) turns its templates into the job's.
The result is checked by merging it as Trainer will (``trainer_merge``): any other difference (a worker
image, a probe, a sidecar the runtime lacks) is refused, with every field named. The env the hook adds
(``K_MPI_JOB_ROLE``, Open MPI 5's ``PRTE_MCA_*``) and the run policy are the runtime's: notes say which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.api.defaults import DEFAULT_SSH_AUTH_MOUNT_PATH, Job
from app.api.limits import INT32_MAX
from app.api.types import LauncherCreationPolicy, RestartPolicy
from app.children import pods
from app.children.launcher_wait import SELF_HOST_ARG
from app.children.workers import DEFAULT_WORKER_COMMAND
from app.convert import trainer
from app.convert.conversion import ConvertError, as_object
from app.convert.trainer_merge import differences, merged, trainer_applied
from app.convert.trainer_notes import (
    LAUNCHER_LAST,
    clean_pod_policy_notes,
    deadline_notes,
    renamed_container_notes,
)
from app.convert.trainer_runtime import base_pod_template
from app.kube import names

_POD_FIELDS = (
    "serviceAccountName", "nodeSelector", "affinity", "tolerations", "volumes", "imagePullSecrets",
    "securityContext", "schedulingGates", "terminationGracePeriodSeconds",
)  # fmt: skip
_CONTAINER_FIELDS = ("volumeMounts", "securityContext", "env")
_TRAINER_FIELDS = ("image", "command", "args")
# A Job's default backoffLimit (batch/v1).
_JOB_BACKOFF_LIMIT = 6
_ALTERNATIVE = "convert without --runtime: the TrainingRuntime derived from the job carries all of it"


@dataclass
class RuntimeFit:
    runtime_ref: dict[str, Any]
    trainer: dict[str, Any] = field(default_factory=dict)
    # The runtimePatches entry's trainingRuntimeSpec; None when nothing differs.
    patch: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def fit_runtime(job: Job, runtime: dict[str, Any]) -> RuntimeFit:
    ref = _runtime_ref(runtime)
    spec = as_object(runtime.get("spec"))
    jobs = {
        str(j.get("name")): j
        for j in as_object(as_object(spec.get("template")).get("spec")).get("replicatedJobs") or []
        if isinstance(j, dict)
    }
    problems = _namespace_problems(job, runtime) + _policy_problems(job, spec)
    _refuse(ref, problems + _job_problems(jobs) + _jobset_problems(spec, jobs))
    assert job.launcher_spec is not None and job.worker_spec is not None  # validated
    wanted = {
        trainer.LAUNCHER_JOB: _without_reserved_env(base_pod_template(job, job.launcher_spec, None)),
        trainer.NODE_JOB: _without_reserved_env(
            base_pod_template(job, job.worker_spec, DEFAULT_WORKER_COMMAND)
        ),
    }
    bases = {name: _defaulted(as_object(as_object(jobs[name].get("template")).get("spec")).get("template"))
             for name in wanted}  # fmt: skip
    _refuse(ref, _wait_problems(job, bases[trainer.LAUNCHER_JOB]))
    bases[trainer.LAUNCHER_JOB] = _without_wait(bases[trainer.LAUNCHER_JOB])
    train = _trainer_fields(wanted[trainer.LAUNCHER_JOB], bases[trainer.LAUNCHER_JOB])
    patches = {name: _pod_patch(wanted[name], bases[name]) for name in wanted}
    problems = []
    for name in wanted:
        got = trainer_applied(merged(bases[name], patches[name]), train, name, job.run_launcher_as_worker)
        problems += [f"{name}: {p}" for p in differences(wanted[name], _without_reserved_env(got))]
    _refuse(ref, problems)
    return RuntimeFit(ref, train, _runtime_patch(patches), _runtime_notes(job, spec, jobs))


def _runtime_ref(runtime: dict[str, Any]) -> dict[str, Any]:
    kind, name = runtime.get("kind"), as_object(runtime.get("metadata")).get("name")
    if runtime.get("apiVersion") != trainer.API_VERSION or kind not in trainer.RUNTIME_KINDS or not name:
        raise ConvertError(
            f"--runtime: not a named {' or '.join(trainer.RUNTIME_KINDS)} of {trainer.API_VERSION}"
            f" (kubectl get clustertrainingruntime NAME -o yaml writes one)"
        )
    return {"apiGroup": trainer.GROUP, "kind": kind, "name": name}


def _refuse(ref: dict[str, Any], problems: list[str]) -> None:
    if problems:
        raise ConvertError(
            f"{ref['kind']} {ref['name']} does not run this job as it is: {'; '.join(problems)};"
            f" {_ALTERNATIVE}"
        )


def _policy_problems(job: Job, spec: dict[str, Any]) -> list[str]:
    policy = as_object(spec.get("mlPolicy"))
    if not isinstance(policy.get("mpi"), dict):
        return ["it has no mlPolicy.mpi"]
    mpi = policy["mpi"]
    problems = []
    if policy.get("numNodes", trainer.RUNTIME_NUM_NODES) != trainer.RUNTIME_NUM_NODES:
        problems.append(f"mlPolicy.numNodes is {policy['numNodes']}: Trainer would make as many launchers")
    as_node = bool(mpi.get("runLauncherAsNode", False))
    if as_node != job.run_launcher_as_worker:
        problems.append(f"mlPolicy.mpi.runLauncherAsNode is {as_node}, the job's runLauncherAsWorker is not")
    path = mpi.get("sshAuthMountPath", trainer.DEFAULT_SSH_AUTH_MOUNT_PATH)
    if path != job.ssh_auth_mount_path:
        problems.append(f"mlPolicy.mpi.sshAuthMountPath is {path}, the job's sshAuthMountPath is not")
    elif path == DEFAULT_SSH_AUTH_MOUNT_PATH:
        problems.append(
            f"its key is at {path}: Trainer mounts it with mode 0640, which ssh refuses to use as root"
        )
    return problems


def _job_problems(jobs: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    for name in (trainer.LAUNCHER_JOB, trainer.NODE_JOB):
        rjob = jobs.get(name)
        template = as_object(as_object(as_object(rjob).get("template")).get("spec")).get("template")
        containers = as_object(as_object(template).get("spec")).get("containers") or []
        if rjob is None or trainer.MPI_CONTAINER not in [as_object(c).get("name") for c in containers]:
            problems.append(f"it has no replicated job {name} with a container {trainer.MPI_CONTAINER}")
        elif rjob.get("replicas", 1) != 1:
            problems.append(f"its {name} job has replicas {rjob['replicas']}")
    labels = as_object(as_object(as_object(jobs.get(trainer.LAUNCHER_JOB)).get("template")).get("metadata"))
    if as_object(labels.get("labels")).get(trainer.ANCESTOR_LABEL) != trainer.ANCESTOR_TRAINER:
        problems.append(f"its launcher is not the trainer step (label {trainer.ANCESTOR_LABEL}: trainer)")
    return problems


def _namespace_problems(job: Job, runtime: dict[str, Any]) -> list[str]:
    """A TrainJob references a TrainingRuntime of its own namespace (ClusterTrainingRuntimes: any)."""
    namespace = as_object(runtime.get("metadata")).get("namespace")
    if runtime.get("kind") == trainer.TRAINING_RUNTIME and namespace and job.namespace not in ("", namespace):
        return [f"it is in namespace {namespace}, the job in {job.namespace}"]
    return []


def _jobset_problems(spec: dict[str, Any], jobs: dict[str, dict[str, Any]]) -> list[str]:
    jobset = as_object(as_object(spec.get("template")).get("spec"))
    success = as_object(jobset.get("successPolicy"))
    problems = []
    if success.get("targetReplicatedJobs") != [trainer.LAUNCHER_JOB]:
        problems.append("its JobSet does not succeed when the launcher does (successPolicy)")
    if "podGroupPolicy" in spec and as_object(jobs.get(trainer.LAUNCHER_JOB)).get("dependsOn"):
        problems.append(
            "it gang-schedules a launcher that waits for Ready nodes: the gang never fits"
            " (kubeflow/mpi-operator#608)"
        )
    return problems


def _waits(template: dict[str, Any]) -> list[dict[str, Any]]:
    init = as_object(template.get("spec")).get("initContainers") or []
    return [as_object(c) for c in init if as_object(c).get("name") == names.WAIT_FOR_WORKERS_CONTAINER]


def _without_wait(template: dict[str, Any]) -> dict[str, Any]:
    """A launcher template without the wait a runtime derived by ``mpijob convert`` carries: it stays the
    runtime's, and works for any TrainJob (it reads the hostfile Trainer mounts)."""
    if not _waits(template):
        return template
    spec = as_object(template.get("spec"))
    init = [
        c
        for c in spec.get("initContainers") or []
        if as_object(c).get("name") != names.WAIT_FOR_WORKERS_CONTAINER
    ]
    return {**template, "spec": {**spec, "initContainers": init}}


def _wait_problems(job: Job, template: dict[str, Any]) -> list[str]:
    """The one thing in the wait that names a job: the launcher's own host, skipped with runLauncherAsNode."""
    host = trainer.launcher_host(job.name) if job.run_launcher_as_worker else "-"
    for wait in _waits(template):
        command = [str(a) for a in wait.get("command") or []]
        skipped = command[SELF_HOST_ARG] if len(command) > SELF_HOST_ARG else "-"
        if skipped != host:
            return [
                f"its {names.WAIT_FOR_WORKERS_CONTAINER} skips host {skipped}, this job's launcher is {host}"
            ]
    return []


def _defaulted(template: Any) -> dict[str, Any]:
    """A runtime's pod template as JobSet's webhook defaults it."""
    spec = as_object(as_object(template).get("spec"))
    policy = spec.get("restartPolicy") or trainer.JOBSET_DEFAULT_RESTART_POLICY
    return {**as_object(template), "spec": {**spec, "restartPolicy": policy}}


def _without_reserved_env(template: dict[str, Any]) -> dict[str, Any]:
    """Trainer sets these on the launcher whatever the templates say (as the hook overrides them)."""
    spec = as_object(template.get("spec"))
    containers = [
        {**c, "env": [e for e in c.get("env") or [] if e.get("name") not in trainer.RESERVED_ENV]}
        for c in spec.get("containers") or []
    ]
    return {**template, "spec": {**spec, "containers": containers}}


def _node_container(template: dict[str, Any]) -> dict[str, Any]:
    containers = as_object(template.get("spec")).get("containers") or []
    return next((c for c in containers if as_object(c).get("name") == trainer.MPI_CONTAINER), {})


def _trainer_fields(wanted: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """The launcher's image, command, args, env and resources where they differ from the runtime's."""
    want, have = _node_container(wanted), _node_container(base)
    train = {k: want[k] for k in _TRAINER_FIELDS if want.get(k) and want.get(k) != have.get(k)}
    if want.get("env") and want.get("env") != have.get("env"):
        train["env"] = want["env"]
    if want.get("resources") and want.get("resources") != have.get("resources"):
        train["resourcesPerNode"] = want["resources"]
    return train


def _pod_patch(wanted: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """labels, annotations and the patchable Pod and container fields of ``wanted`` that ``base`` lacks."""
    want, have = as_object(wanted.get("spec")), as_object(base.get("spec"))
    spec = {k: want[k] for k in _POD_FIELDS if want.get(k) and want.get(k) != have.get(k)}
    for kind in ("initContainers", "containers"):
        existing = {as_object(c).get("name"): c for c in have.get(kind) or []}
        patched = [_container_patch(c, existing[c.get("name")]) for c in want.get(kind) or []
                   if c.get("name") in existing]  # fmt: skip
        if any(len(p) > 1 for p in patched):
            spec[kind] = [p for p in patched if len(p) > 1]
    patch: dict[str, Any] = {}
    have_meta = as_object(base.get("metadata"))
    meta = {k: v for k, v in as_object(wanted.get("metadata")).items() if v != have_meta.get(k)}
    if meta:
        patch["metadata"] = meta
    if spec:
        patch["spec"] = spec
    return patch


def _container_patch(want: dict[str, Any], have: dict[str, Any]) -> dict[str, Any]:
    # Trainer refuses env in a patch of the node container: the launcher's comes through ``trainer.env``.
    fields = [k for k in _CONTAINER_FIELDS if not (k == "env" and want.get("name") == trainer.MPI_CONTAINER)]
    return {"name": want["name"], **{k: want[k] for k in fields if want.get(k) and want[k] != have.get(k)}}


def _runtime_patch(patches: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    jobs = [{"name": name, "template": {"spec": {"template": p}}} for name, p in patches.items() if p]
    return {"template": {"spec": {"replicatedJobs": jobs}}} if jobs else None


def _runtime_notes(job: Job, spec: dict[str, Any], jobs: dict[str, dict[str, Any]]) -> list[str]:
    notes = [
        "env: K_MPI_JOB_ROLE, Open MPI 5's PRTE_MCA_* and NVIDIA_VISIBLE_DEVICES off the launcher are the"
        " hook's; on this runtime its templates decide",
        *clean_pod_policy_notes(job),
        *deadline_notes(job),
        *renamed_container_notes(job),
    ]
    jobset = as_object(as_object(spec.get("template")).get("spec"))
    launcher_spec = as_object(as_object(jobs[trainer.LAUNCHER_JOB].get("template")).get("spec"))
    if launcher_spec.get("backoffLimit") != job.run_policy.backoff_limit:
        notes.append(_runtime_decides("spec.runPolicy.backoffLimit", "the launcher Job's backoffLimit"))
    node_spec = as_object(as_object(jobs[trainer.NODE_JOB].get("template")).get("spec"))
    notes += _node_backoff_notes(job, node_spec.get("backoffLimit", _JOB_BACKOFF_LIMIT))
    if jobset.get("ttlSecondsAfterFinished") != job.run_policy.ttl_seconds_after_finished:
        ttl = "the JobSet's ttlSecondsAfterFinished"
        notes.append(_runtime_decides("spec.runPolicy.ttlSecondsAfterFinished", ttl))
    if job.has_failure_policy or "failurePolicy" in jobset:
        notes.append(_runtime_decides("spec.failurePolicy", "the JobSet's failurePolicy"))
    if job.run_policy.scheduling_policy is not None or "podGroupPolicy" in spec:
        notes.append(_runtime_decides("spec.runPolicy.schedulingPolicy", "its podGroupPolicy"))
    waits = job.launcher_creation_policy == LauncherCreationPolicy.WAIT_FOR_WORKERS_READY
    if waits != bool(jobs[trainer.LAUNCHER_JOB].get("dependsOn")):
        notes.append(_runtime_decides("spec.launcherCreationPolicy", "the launcher's dependsOn"))
    order = list(jobs)
    if job.run_launcher_as_worker and order.index(trainer.LAUNCHER_JOB) > order.index(trainer.NODE_JOB):
        notes.append(LAUNCHER_LAST)
    return notes


def _node_backoff_notes(job: Job, limit: Any) -> list[str]:
    """What the runtime's node Job does with a failing worker, where the hook's differs."""
    assert job.worker_spec is not None  # validated
    if pods.restart_policy(job.worker_spec.restart_policy) == RestartPolicy.ON_FAILURE:
        if limit == INT32_MAX:
            return []
        return [
            f"Worker: the runtime's node Job fails after {limit} restarts of a node container (its"
            " backoffLimit); the MPIJob's workers restarted in place without limit"
        ]
    if limit == 0:
        return []
    return [
        f"Worker: the runtime's node Job replaces a failed node Pod up to {limit} times (its backoffLimit);"
        " the MPIJob never replaced a failed worker"
    ]


def _runtime_decides(field_path: str, what: str) -> str:
    return f"{field_path}: not carried: on an existing runtime, {what} decides (a TrainJob cannot change it)"
