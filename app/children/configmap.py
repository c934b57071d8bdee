"""The ConfigMap ``<job>-config``: the MPI hostfile and ``discover_hosts.sh`` for elastic launchers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.api.defaults import Job
from app.api.types import MPIImplementation
from app.children.hostfile_order_lines import ORDER_KEY, HostfileOrder
from app.kube import names


def hostfile(job: Job, cluster_domain: str, order: HostfileOrder | None = None) -> str:
    """One line per host from the spec (not from Pod state): ``host slots=N`` or ``host:N``; in index order
    (launcher first, then workers by index) unless the job is ordered (``order``: its hostfile order, the
    order header first), when Open MPI's lines take the sequential mapper's form."""
    name = job.name
    suffix = names.host_suffix(name, job.namespace, cluster_domain)
    slots = job.slots_per_worker
    tail = (
        f"{suffix} slots={slots}\n"
        if job.mpi_implementation == MPIImplementation.OPENMPI
        else f"{suffix}:{slots}\n"
    )
    if order is not None and job.mpi_implementation == MPIImplementation.OPENMPI:
        return order.header() + "".join(_sequential_lines(job, host, suffix) for host in order.hosts)
    if order is not None:
        return order.header() + "".join(host + tail for host in order.hosts)
    hosts = upstream_hosts(job)
    return tail.join(hosts) + tail if hosts else ""


def _sequential_lines(job: Job, host: str, suffix: str) -> str:
    """Open MPI's sequential mapper (``--map-by seq``, 4.1's ``--mca rmaps seq``) places one rank per line and
    ignores ``slots=``: so one bare line per slot, which the default mapper also counts as that many slots.
    4.1's mapper knows the launcher's own host only by its short name."""
    line = host if host == names.launcher_name(job.name) else host + suffix
    return f"{line}\n" * job.slots_per_worker


def upstream_hosts(job: Job) -> list[str]:
    """The hosts in index order (upstream's): the launcher first (``runLauncherAsWorker``), then workers."""
    hosts = [names.launcher_name(job.name)] if job.run_launcher_as_worker else []
    return hosts + [names.worker_name(job.name, i) for i in range(job.worker_replicas)]


def discover_hosts(job: Job, running_workers: Iterable[str], cluster_domain: str) -> str:
    """Running workers only, sorted by name as strings (``w-10`` before ``w-2``, as upstream)."""
    name = job.name
    suffix = names.host_suffix(name, job.namespace, cluster_domain)
    hosts = [names.launcher_name(name)] if job.run_launcher_as_worker else []
    hosts += sorted(running_workers)
    return "#!/bin/sh\n" + "".join(f"echo {host}{suffix}\n" for host in hosts)


def build_configmap(
    job: Job,
    running_workers: Iterable[str],
    cluster_domain: str,
    order: HostfileOrder | None = None,
    kept: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``kept``: the kept order, a finished ordered job's hostfile and order table as they are."""
    data = {
        names.DISCOVER_HOSTS_KEY: discover_hosts(job, running_workers, cluster_domain),
        names.HOSTFILE_KEY: hostfile(job, cluster_domain, order),
    }
    if order is not None:
        data[ORDER_KEY] = order.table()
    data.update(kept or {})
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": names.config_name(job.name),
            "namespace": job.namespace,
            "labels": names.owned_labels(job.name),
        },
        "data": data,
    }
