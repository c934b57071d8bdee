"""Kubeflow Trainer v2.3.0 as a conversion depends on it: its names, its rules, and where each comes from.

Everything ``mpijob convert --to trainjob`` writes was checked against this one release's CRDs (and, for
behaviour, against its source at tag ``v2.3.0``; docs/migration.md says what that means for v2.2 and v2.1).
Each fact below names the file of kubeflow/trainer (or of JobSet v0.12, which Trainer v2.3 builds on, or of
Kubernetes) it was read from, so that a new Trainer release can be checked fact by fact.
"""

from __future__ import annotations

# The release checked; the only one supported (no --target-version while there is one).
TRAINER_VERSION = "v2.3"

GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
TRAINJOB = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
RUNTIME_KINDS = (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)

# pkg/constants/constants.go: the replicated jobs of an MPI runtime, and the container the MPI plugin and the
# TrainJob's ``trainer`` act on (SSH key, hostfile and OpenMPI env go to containers of this name only).
LAUNCHER_JOB = "launcher"
NODE_JOB = "node"
MPI_CONTAINER = "node"
# The label that marks the replicated job ``spec.trainer`` (image, command, args, env) applies to; the
# TrainingRuntime webhook requires ``replicas: 1`` and a ``node`` container on it.
ANCESTOR_LABEL = f"{GROUP}/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"

# pkg/apis/trainer/v1alpha1/trainingruntime_types.go: mlPolicy.mpi's defaults and enum.
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
MPI_IMPLEMENTATIONS = ("OpenMPI",)

# pkg/runtime/framework/plugins/mpi/mpi.go: the env the MPI plugin sets on the launcher's node container
# (the same names and values as the MPI Operator's), which the TrainJob's env must not set.
RESERVED_ENV = frozenset(
    {
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_set_default_slots",
        "OMPI_MCA_plm_rsh_args",
    }
)
# The Secret the MPI plugin creates per TrainJob; its keys are the MPI Operator's (``ssh-privatekey``,
# ``ssh-publickey``). It mounts the private key with mode 0640 at sshAuthMountPath, which ssh refuses when
# it owns the file: as root (#3649).
SSH_SECRET_SUFFIX = "-mpi-ssh-auth"
# The volumes Trainer adds to every MPI Pod (the hostfile ConfigMap's, the SSH key Secret's), mounted into
# the ``node`` container only.
HOSTFILE_VOLUME = "mpi-hostfile"
SSH_AUTH_VOLUME = "mpi-ssh-auth"

# pkg/runtime/core/trainingruntime.go: the launcher's Pod count is the runtime's mlPolicy.numNodes (the
# TrainJob's numNodes sizes the ``node`` job only), so a runtime for MPI keeps it at 1.
RUNTIME_NUM_NODES = 1

# JobSet v0.12 (pkg/webhooks/jobset_webhook.go): Pod names ``<jobset>-<job>-<i>-<j>-<5 chars>`` must be
# DNS-1035 labels; and pkg/constants: the label every Pod carries with the JobSet's restart count.
# It also gives a Pod template without restartPolicy OnFailure.
POD_NAME_MAX = 63
POD_NAME_RANDOM_SUFFIX = 6
JOBSET_RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
JOBSET_DEFAULT_RESTART_POLICY = "OnFailure"

# Kubernetes' Job controller (pkg/controller/job/pod_failure_policy.go) ends the message of a Job failed by
# a podFailurePolicy FailJob rule with the rule's index: JobSet rules tell those rules apart by it.
POD_FAILURE_POLICY_REASON = "PodFailurePolicy"
POD_FAILURE_MESSAGE_PATTERN = "matching FailJob rule at index {index}$"

# The manager of the runtimePatches entry we write (it must be a domain-prefixed path).
PATCH_MANAGER = "mpi-operator-hook/mpijob-convert"


def ssh_secret_name(trainjob: str) -> str:
    return f"{trainjob}{SSH_SECRET_SUFFIX}"


def launcher_host(trainjob: str) -> str:
    """The launcher Pod's host name (JobSet: ``<jobset>-<replicated job>-<job index>-<pod index>``)."""
    return f"{trainjob}-{LAUNCHER_JOB}-0-0"


def longest_pod_name(trainjob: str, nodes: int) -> int:
    """The longest Pod name JobSet will generate for this TrainJob (``nodes`` node Pods), suffix included."""
    launcher = launcher_host(trainjob)
    node = f"{trainjob}-{NODE_JOB}-0-{max(nodes, 1) - 1}"
    return max(len(launcher), len(node)) + POD_NAME_RANDOM_SUFFIX
