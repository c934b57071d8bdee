"""The names of an MPIJob's children and host names, and the DNS rules they put on the job's name.

Written once, at the bottom layer, because both sides need them: the builders name the children, and
validation, lint, the size limits and the CRD's CEL rules (``tools/gen_crd.py``) check that a job's name
leaves room for them. ``app.kube.names`` re-exports them next to the labels and volume names.
"""

from __future__ import annotations

import re

WORKER_INFIX = "-worker-"

# apimachinery's IsDNS1035Label: worker Pods use their name as hostname, which must be such a label.
DNS1035_LABEL_PATTERN = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
DNS1035_LABEL_MAX = 63
DNS1035_LABEL_MESSAGE = (  # upstream's wording, two spaces included
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_LABEL = re.compile(DNS1035_LABEL_PATTERN)

# apimachinery's IsDNS1123Label (a namespace's name) and IsDNS1123Subdomain (a scheduler's name, a domain).
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1123_LABEL_RULE = (
    f"a DNS-1123 label: at most {DNS1123_LABEL_MAX} lower case alphanumeric characters or '-', starting and"
    " ending with an alphanumeric character"
)

# What the CRD's CEL rules (and so ``mpijob lint``) say about a job name that breaks these rules.
_NAME_BUDGET = DNS1035_LABEL_MAX - len(WORKER_INFIX)
NAME_NOT_DNS1035 = (
    "must be a DNS-1035 label (lower case alphanumeric characters or '-', starting with a letter and ending"
    f" with an alphanumeric character): worker pods and their hostnames are named <name>{WORKER_INFIX}<index>"
)
NAME_TOO_LONG = (
    f"is too long: the hostname of the last worker, <name>{WORKER_INFIX}<replicas-1>, must be no more than"
    f" {DNS1035_LABEL_MAX} characters (names up to {_NAME_BUDGET - 1} characters allow up to 10 workers,"
    f" up to {_NAME_BUDGET - 3} characters up to 1000)"
)

# An empty cluster domain means two things, as upstream, kept side by side here:
# - host names in the hostfile and discover_hosts.sh end at ``.svc`` (the Pod's resolver adds the domain);
# - the workers' DNS search path still needs a full domain, so it falls back to ``cluster.local``.
DEFAULT_CLUSTER_DOMAIN = "cluster.local"


def launcher_name(job: str) -> str:
    return f"{job}-launcher"


def worker_name(job: str, index: int) -> str:
    return f"{worker_prefix(job)}{index}"


def worker_prefix(job: str) -> str:
    return f"{job}{WORKER_INFIX}"


def last_worker_index(replicas: int) -> int:
    """Upstream's ``replicas - 1``, where fewer than one replica counts as one: the longest worker name."""
    return max(replicas, 1) - 1


def config_name(job: str) -> str:
    return f"{job}-config"


def ssh_secret_name(job: str) -> str:
    return f"{job}-ssh"


def service_name(job: str) -> str:
    return job


def podgroup_name(job: str) -> str:
    return job


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery's ``IsDNS1035Label``: what is wrong with ``value`` as a label, in its words."""
    errors = []
    if len(value) > DNS1035_LABEL_MAX:
        errors.append(f"must be no more than {DNS1035_LABEL_MAX} characters")
    if not _DNS1035_LABEL.fullmatch(value):
        errors.append(DNS1035_LABEL_MESSAGE)
    return errors


def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX and _DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= DNS1123_SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
QUALIFIED_NAME_MAX = 63
# Ours: the MPIJob annotation naming a node label key (e.g. topology.kubernetes.io/zone): with the Workload
# API backend every Pod of the gang lands on nodes sharing one value of it. Here, with the label-key rule,
# because validation checks it.
GANG_TOPOLOGY_ANNOTATION = "mpi-operator-hook/gang-topology-key"


def is_label_key(value: str) -> bool:
    """apimachinery's ``IsQualifiedName``: an optional DNS-subdomain prefix and ``/``, then a name of at
    most 63 characters: alphanumerics, ``-``, ``_`` and ``.``, alphanumeric at both ends."""
    prefix, slash, name = value.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        return False
    return len(name) <= QUALIFIED_NAME_MAX and _QUALIFIED_NAME.fullmatch(name) is not None


def cluster_domain_setting(setting: str) -> str:
    """The cluster domain a setting names, surrounding spaces and dots dropped (``cluster.local.`` is
    ``cluster.local``); ``ValueError`` unless empty or a DNS subdomain."""
    value = setting.strip().strip(".")
    if value and not is_dns1123_subdomain(value):
        raise ValueError("must be a DNS subdomain such as 'cluster.local'")
    return value


def host_suffix(job: str, namespace: str, cluster_domain: str) -> str:
    """What follows each host name in the hostfile: ``.<job>.<ns>.svc[.<domain>]``."""
    suffix = f".{service_name(job)}.{namespace}.svc"
    return f"{suffix}.{cluster_domain}" if cluster_domain else suffix


def dns_search_domain(job: str, namespace: str, cluster_domain: str) -> str:
    """The workers' ``dnsConfig.searches``; upstream hard-codes ``cluster.local`` (docs/compatibility.md)."""
    return host_suffix(job, namespace, cluster_domain or DEFAULT_CLUSTER_DOMAIN)[1:]
