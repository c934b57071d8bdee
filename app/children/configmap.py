"""The ConfigMap ``<job>-config``: the MPI hostfile and ``discover_hosts.sh`` for elastic launchers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.api.types import MPIImplementation, MPIJob, ReplicaType
from app.core import names


def hostfile(job: MPIJob, cluster_domain: str) -> str:
    """One line per host from the spec (not from Pod state): ``host slots=N`` or ``host:N``."""
    name, namespace = job.metadata.name, job.metadata.namespace
    slots = job.spec.slots_per_worker if job.spec.slots_per_worker is not None else 1
    hosts = [names.launcher_name(name)] if job.spec.run_launcher_as_worker else []
    worker = job.spec.replica(ReplicaType.WORKER)
    hosts += [names.worker_name(name, i) for i in range((worker.replicas or 0) if worker else 0)]
    line = "{} slots={}\n" if job.spec.mpi_implementation == MPIImplementation.OPENMPI else "{}:{}\n"
    return "".join(line.format(names.host_fqdn(h, name, namespace, cluster_domain), slots) for h in hosts)


def discover_hosts(job: MPIJob, running_workers: Iterable[str], cluster_domain: str) -> str:
    """Running workers only, sorted by name as strings (``w-10`` before ``w-2``, as upstream)."""
    name, namespace = job.metadata.name, job.metadata.namespace
    hosts = [names.launcher_name(name)] if job.spec.run_launcher_as_worker else []
    hosts += sorted(running_workers)
    return "#!/bin/sh\n" + "".join(
        f"echo {names.host_fqdn(h, name, namespace, cluster_domain)}\n" for h in hosts
    )


def build_configmap(job: MPIJob, running_workers: Iterable[str], cluster_domain: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": names.config_name(job.metadata.name),
            "namespace": job.metadata.namespace,
            "labels": names.owned_labels(job.metadata.name),
        },
        "data": {
            names.DISCOVER_HOSTS_KEY: discover_hosts(job, running_workers, cluster_domain),
            names.HOSTFILE_KEY: hostfile(job, cluster_domain),
        },
    }
