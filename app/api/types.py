"""Pydantic models of the MPIJob ``kubeflow.org/v2beta1`` API, field for field as upstream v0.8.x.

Every optional field stays ``None`` when the user did not set it: defaulting (``defaults.py``) and
validation (``validation.py``) are separate steps, as upstream. Pod templates are not ours to model;
they stay plain dicts and are decorated by the child builders.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

API_VERSION = "kubeflow.org/v2beta1"
KIND = "MPIJob"
# Versions no CRD of ours serves (kubectl apply: no matches for kind) that ``mpijob convert`` reads: lint and
# render send them there. ``v2`` is what v2beta1 was called for a month before its first release (2021).
OLD_API_VERSIONS = ("kubeflow.org/v1alpha1", "kubeflow.org/v1alpha2", "kubeflow.org/v1", "kubeflow.org/v2")


class ReplicaType(StrEnum):
    LAUNCHER = "Launcher"
    WORKER = "Worker"


class MPIImplementation(StrEnum):
    OPENMPI = "OpenMPI"
    INTEL = "Intel"
    MPICH = "MPICH"


class LauncherCreationPolicy(StrEnum):
    AT_STARTUP = "AtStartup"
    WAIT_FOR_WORKERS_READY = "WaitForWorkersReady"


class CleanPodPolicy(StrEnum):
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class RestartPolicy(StrEnum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


class ConditionType(StrEnum):
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    SUSPENDED = "Suspended"
    FAILED = "Failed"
    # Ours, not upstream's: the spec fails validation (see docs/compatibility.md).
    INVALID = "Invalid"
    # Ours: what `mpijob lint` finds in a valid job; advisory, always the first condition (not STATE).
    WARNING = "Warning"
    # Ours: gang scheduling is configured but the CompositeController does not declare its PodGroup child.
    GANG_SCHEDULING_UNAVAILABLE = "GangSchedulingUnavailable"
    # Ours: False while the gang scheduler holds the job's gang (its PodGroup says why); gone once placed.
    GANG_SCHEDULED = "GangScheduled"


class FailureAction(StrEnum):
    """What a failure policy rule does with the failure it matches (ours, not upstream's)."""

    FAIL_JOB = "FailJob"
    RESTART_JOB = "RestartJob"
    RESTART_JOB_AND_IGNORE_MAX_RESTARTS = "RestartJobAndIgnoreMaxRestarts"


class ExitCodeOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"


KUBEFLOW_JOB_CONTROLLER = "kubeflow.org/mpi-operator"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


class _Model(BaseModel):
    """camelCase on the wire; unknown fields are ignored (the CRD schema already pruned them)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=False)


class SchedulingPolicy(_Model):
    min_available: int | None = Field(default=None, alias="minAvailable")
    queue: str | None = None
    min_resources: dict[str, Any] | None = Field(default=None, alias="minResources")
    priority_class: str | None = Field(default=None, alias="priorityClass")
    schedule_timeout_seconds: int | None = Field(default=None, alias="scheduleTimeoutSeconds")


class RunPolicy(_Model):
    # Plain strings, not enums: an unsupported value must reach validation, not fail parsing.
    clean_pod_policy: str | None = Field(default=None, alias="cleanPodPolicy")
    ttl_seconds_after_finished: int | None = Field(default=None, alias="ttlSecondsAfterFinished")
    active_deadline_seconds: int | None = Field(default=None, alias="activeDeadlineSeconds")
    backoff_limit: int | None = Field(default=None, alias="backoffLimit")
    scheduling_policy: SchedulingPolicy | None = Field(default=None, alias="schedulingPolicy")
    suspend: bool | None = None
    managed_by: str | None = Field(default=None, alias="managedBy")


class ExitCodes(_Model):
    operator: str | None = None
    values: list[int] | None = None


class FailurePolicyRule(_Model):
    # Plain strings, as RunPolicy's: an unsupported value must reach validation.
    action: str | None = None
    on_exit_codes: ExitCodes | None = Field(default=None, alias="onExitCodes")
    on_pod_conditions: list[str] | None = Field(default=None, alias="onPodConditions")
    replica_types: list[str] | None = Field(default=None, alias="replicaTypes")


class FailurePolicy(_Model):
    """Ours: what happens when a Pod of the job fails (the user guide's "When a worker dies")."""

    max_restarts: int | None = Field(default=None, alias="maxRestarts")
    rules: list[FailurePolicyRule] | None = None


class ReplicaSpec(_Model):
    replicas: int | None = None
    template: dict[str, Any] = Field(default_factory=dict)
    restart_policy: str | None = Field(default=None, alias="restartPolicy")


class MPIJobSpec(_Model):
    slots_per_worker: int | None = Field(default=None, alias="slotsPerWorker")
    run_launcher_as_worker: bool | None = Field(default=None, alias="runLauncherAsWorker")
    run_policy: RunPolicy = Field(default_factory=RunPolicy, alias="runPolicy")
    mpi_replica_specs: dict[str, ReplicaSpec | None] | None = Field(default=None, alias="mpiReplicaSpecs")
    ssh_auth_mount_path: str | None = Field(default=None, alias="sshAuthMountPath")
    launcher_creation_policy: str | None = Field(default=None, alias="launcherCreationPolicy")
    mpi_implementation: str | None = Field(default=None, alias="mpiImplementation")
    failure_policy: FailurePolicy | None = Field(default=None, alias="failurePolicy")

    def replica(self, kind: ReplicaType) -> ReplicaSpec | None:
        return (self.mpi_replica_specs or {}).get(kind.value)


# What the apiserver stores; anything larger did not come from one (and the encoder can't write it).
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class ObjectMeta(_Model):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    generation: int | None = Field(default=None, ge=_INT64_MIN, le=_INT64_MAX)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")


class JobCondition(_Model):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_update_time: str | None = Field(default=None, alias="lastUpdateTime")
    last_transition_time: str | None = Field(default=None, alias="lastTransitionTime")


class ReplicaStatus(_Model):
    active: int = Field(default=0, ge=_INT64_MIN, le=_INT64_MAX)
    succeeded: int = Field(default=0, ge=_INT64_MIN, le=_INT64_MAX)
    failed: int = Field(default=0, ge=_INT64_MIN, le=_INT64_MAX)


class JobStatus(_Model):
    conditions: list[JobCondition] = Field(default_factory=list)
    replica_statuses: dict[str, ReplicaStatus] | None = Field(default=None, alias="replicaStatuses")
    start_time: str | None = Field(default=None, alias="startTime")
    completion_time: str | None = Field(default=None, alias="completionTime")
    # Ours, with a failure policy: the restarts counted against maxRestarts, and the current attempt
    # (0 for the first; every restart, counted or not, starts the next).
    restart_count: int | None = Field(default=None, ge=_INT64_MIN, le=_INT64_MAX, alias="restartCount")
    restart_attempt: int | None = Field(default=None, ge=_INT64_MIN, le=_INT64_MAX, alias="restartAttempt")

    @property
    def restarts(self) -> tuple[int, int]:
        """The current attempt and the counted restarts: 0 when unset, and a negative is read as 0."""
        return max(self.restart_attempt or 0, 0), max(self.restart_count or 0, 0)


class MPIJob(_Model):
    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: MPIJobSpec = Field(default_factory=MPIJobSpec)
    status: JobStatus = Field(default_factory=JobStatus)
