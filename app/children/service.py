"""The headless Service ``<job>``: gives the launcher and every worker a stable DNS name."""

from __future__ import annotations

from typing import Any

from app.api.defaults import Job
from app.api.types import MPIImplementation
from app.kube import names


def build_service(job: Job) -> dict[str, Any]:
    name = job.name
    spec: dict[str, Any] = {"clusterIP": "None", "selector": names.service_selector(name)}
    if job.run_launcher_as_worker or job.mpi_implementation != MPIImplementation.OPENMPI:
        # The launcher must resolve itself before it is Ready; and Hydra's proxies (MPICH, Intel MPI) on
        # the workers connect back to the launcher by its name as soon as mpiexec starts them, a moment
        # after the launcher's init container ends and before the launcher Pod can be Ready and published.
        # ``false`` is never emitted: the apiserver drops it and Metacontroller would see a difference on
        # every sync.
        spec["publishNotReadyAddresses"] = True
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.service_name(name),
            "namespace": job.namespace,
            "labels": names.owned_labels(name),
        },
        "spec": spec,
    }
