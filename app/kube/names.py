"""Names, labels and fixed strings of the objects an MPIJob owns — all in one place, as upstream.

The child and host names are defined in ``app.api.child_names`` (validation checks the job's name against
them) and re-exported here, so builders find every name of a child in this one module.
"""

from __future__ import annotations

from app.api import child_names as _api

# The child and host names, defined at the bottom layer with the DNS rules they imply.
launcher_name = _api.launcher_name
worker_name = _api.worker_name
worker_prefix = _api.worker_prefix
config_name = _api.config_name
ssh_secret_name = _api.ssh_secret_name
service_name = _api.service_name
podgroup_name = _api.podgroup_name
host_suffix = _api.host_suffix
dns_search_domain = _api.dns_search_domain

OPERATOR_NAME = "mpi-operator"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
APP_LABEL = "app"
# Ours, with a failure policy only: the attempt a launcher Job or worker Pod belongs to, and the env
# variable that tells its containers (0 for the first attempt).
RESTART_ATTEMPT_LABEL = "mpi-operator-hook/restart-attempt"
RESTART_ATTEMPT_ENV = "MPIJOB_RESTART_ATTEMPT"
# Metacontroller adds this label to every child (generateSelector); a user copy would abort the sync.
CONTROLLER_UID_LABEL = "controller-uid"
LAST_APPLIED_ANNOTATION = "metacontroller.k8s.io/last-applied-configuration"
# kubectl apply's copy of what was applied: about the object it is on, never to be carried to another.
KUBECTL_LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"

LAUNCHER = "launcher"
WORKER = "worker"

CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
DISCOVER_HOSTS_KEY = "discover_hosts.sh"
HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE_KEY}"

# The launcher's init container that waits for every worker to answer ssh, and the MPIJob annotation that
# bounds its wait in seconds ("0": no such container).
WAIT_FOR_WORKERS_CONTAINER = "wait-for-workers"
LAUNCHER_WAIT_ANNOTATION = "mpi-operator-hook/launcher-wait-seconds"
GANG_TOPOLOGY_ANNOTATION = _api.GANG_TOPOLOGY_ANNOTATION

SSH_AUTH_VOLUME = "ssh-auth"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_AUTH_SECRET_TYPE = "kubernetes.io/ssh-auth"


def owned_labels(job: str) -> dict[str, str]:
    """Labels of the Service, ConfigMap, Secret and launcher Job (upstream: ``app: <job>``)."""
    return {APP_LABEL: job}


def pod_labels(job: str, role: str) -> dict[str, str]:
    return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job, JOB_ROLE_LABEL: role}


def service_selector(job: str) -> dict[str, str]:
    """Matches the launcher and every worker, so each gets a DNS record under the Service."""
    return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job}
