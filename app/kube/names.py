"""Names, labels and fixed strings of the objects an MPIJob owns — all in one place, as upstream."""

from __future__ import annotations

OPERATOR_NAME = "mpi-operator"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
APP_LABEL = "app"
# Metacontroller adds this label to every child (generateSelector); a user copy would abort the sync.
CONTROLLER_UID_LABEL = "controller-uid"
LAST_APPLIED_ANNOTATION = "metacontroller.k8s.io/last-applied-configuration"

LAUNCHER = "launcher"
WORKER = "worker"

CONFIG_VOLUME = "mpi-job-config"
CONFIG_MOUNT_PATH = "/etc/mpi"
HOSTFILE_KEY = "hostfile"
DISCOVER_HOSTS_KEY = "discover_hosts.sh"
HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE_KEY}"

SSH_AUTH_VOLUME = "ssh-auth"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_AUTH_SECRET_TYPE = "kubernetes.io/ssh-auth"


def launcher_name(job: str) -> str:
    return f"{job}-launcher"


def worker_name(job: str, index: int) -> str:
    return f"{job}-worker-{index}"


def worker_prefix(job: str) -> str:
    return f"{job}-worker-"


def config_name(job: str) -> str:
    return f"{job}-config"


def ssh_secret_name(job: str) -> str:
    return f"{job}-ssh"


def service_name(job: str) -> str:
    return job


def podgroup_name(job: str) -> str:
    return job


def owned_labels(job: str) -> dict[str, str]:
    """Labels of the Service, ConfigMap, Secret and launcher Job (upstream: ``app: <job>``)."""
    return {APP_LABEL: job}


def pod_labels(job: str, role: str) -> dict[str, str]:
    return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job, JOB_ROLE_LABEL: role}


def service_selector(job: str) -> dict[str, str]:
    """Matches the launcher and every worker, so each gets a DNS record under the Service."""
    return {OPERATOR_NAME_LABEL: OPERATOR_NAME, JOB_NAME_LABEL: job}


# An empty cluster domain means two things, as upstream, kept side by side here:
# - host names in the hostfile and discover_hosts.sh end at ``.svc`` (the Pod's resolver adds the domain);
# - the workers' DNS search path still needs a full domain, so it falls back to ``cluster.local``.
DEFAULT_CLUSTER_DOMAIN = "cluster.local"


def host_fqdn(host: str, job: str, namespace: str, cluster_domain: str) -> str:
    """A host in the hostfile: ``<host>.<job>.<ns>.svc[.<domain>]``."""
    return host + host_suffix(job, namespace, cluster_domain)


def host_suffix(job: str, namespace: str, cluster_domain: str) -> str:
    """What follows each host name in the hostfile: ``.<job>.<ns>.svc[.<domain>]``."""
    suffix = f".{job}.{namespace}.svc"
    return f"{suffix}.{cluster_domain}" if cluster_domain else suffix


def dns_search_domain(job: str, namespace: str, cluster_domain: str) -> str:
    """The workers' ``dnsConfig.searches``; upstream hard-codes ``cluster.local`` (README: deviations)."""
    return f"{job}.{namespace}.svc.{cluster_domain or DEFAULT_CLUSTER_DOMAIN}"
