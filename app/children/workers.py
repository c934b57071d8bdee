"""Worker Pods ``<job>-worker-<i>``: the worker template plus identity, DNS, sshd and the SSH keys.

The decorated spec is built once per sync and shared by every Pod (the response is serialised right
away), so a 4,096-worker job costs one template copy, not 4,096.
"""

from __future__ import annotations

from typing import Any

from app.api.types import MPIJob, ReplicaType
from app.children import pods
from app.core import names

DEFAULT_WORKER_COMMAND = ["/usr/sbin/sshd", "-De"]
_DEFAULT_DNS_DOMAIN = "cluster.local"


class WorkerFactory:
    """Builds worker Pods for one MPIJob; ``build(i)`` returns a new Pod dict."""

    def __init__(self, job: MPIJob, cluster_domain: str) -> None:
        spec_replica = job.spec.replica(ReplicaType.WORKER)
        assert spec_replica is not None
        self._job = job.metadata.name
        self._namespace = job.metadata.namespace
        self._index_offset = 1 if job.spec.run_launcher_as_worker else 0
        labels, annotations = pods.template_metadata(spec_replica.template)
        self._labels = {**labels, **names.pod_labels(self._job, names.WORKER)}
        self._annotations = annotations
        mount_path = job.spec.ssh_auth_mount_path or names.SSH_ROOT_PATH
        spec = pods.base_spec(spec_replica.template)
        spec = pods.dns_policy_for_host_network(spec)
        # Upstream hard-codes cluster.local here; we follow the configured domain (README: deviations).
        search = f"{self._job}.{self._namespace}.svc.{cluster_domain or _DEFAULT_DNS_DOMAIN}"
        dns_config = dict(spec.get("dnsConfig") or {})
        dns_config["searches"] = [*(dns_config.get("searches") or []), search]
        spec["dnsConfig"] = dns_config
        spec["restartPolicy"] = pods.restart_policy(spec_replica.restart_policy, "Never")
        spec = pods.decorate_first_container(
            spec,
            env=[{"name": "K_MPI_JOB_ROLE", "value": names.WORKER}],
            mounts=[{"name": names.SSH_AUTH_VOLUME, "mountPath": mount_path}],
            default_command=DEFAULT_WORKER_COMMAND,
        )
        self._spec = pods.with_volumes(spec, [pods.ssh_volume(self._job, mount_path)])

    def build(self, index: int) -> dict[str, Any]:
        name = names.worker_name(self._job, index)
        labels = {**self._labels, names.REPLICA_INDEX_LABEL: str(index + self._index_offset)}
        metadata: dict[str, Any] = {"name": name, "namespace": self._namespace, "labels": labels}
        if self._annotations:
            metadata["annotations"] = self._annotations
        spec = {**self._spec, "hostname": name, "subdomain": self._job}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
