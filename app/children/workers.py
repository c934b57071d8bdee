"""Worker Pods ``<job>-worker-<i>``: the worker template plus identity, DNS, sshd and the SSH keys.

The decorated spec is built once per sync and shared by every Pod (the response is serialised right
away), so a 4,096-worker job costs one template copy, not 4,096.
"""

from __future__ import annotations

import copy
from typing import Any

from app.api.defaults import Job, Replica
from app.children import pods
from app.children.podgroup import Membership, decorate
from app.kube import names

DEFAULT_WORKER_COMMAND = ["/usr/sbin/sshd", "-De"]


class WorkerFactory:
    """Builds worker Pods for one MPIJob; ``build(i)`` returns a new Pod dict."""

    def __init__(self, job: Job, replica: Replica, cluster_domain: str) -> None:
        self._job = job.name
        self._namespace = job.namespace
        self._index_offset = 1 if job.run_launcher_as_worker else 0
        labels, annotations = pods.template_metadata(replica.template)
        self._labels = {**labels, **names.pod_labels(self._job, names.WORKER)}
        self._annotations = annotations
        mount_path = job.ssh_auth_mount_path
        spec = pods.base_spec(replica.template)
        spec = pods.dns_policy_for_host_network(spec)
        search = names.dns_search_domain(self._job, self._namespace, cluster_domain)
        dns_config = dict(spec.get("dnsConfig") or {})
        dns_config["searches"] = [*(dns_config.get("searches") or []), search]
        spec["dnsConfig"] = dns_config
        spec["restartPolicy"] = pods.restart_policy(replica.restart_policy)
        spec = pods.decorate_first_container(
            spec,
            env=[{"name": "K_MPI_JOB_ROLE", "value": names.WORKER}],
            mounts=[{"name": names.SSH_AUTH_VOLUME, "mountPath": mount_path}],
            default_command=DEFAULT_WORKER_COMMAND,
        )
        spec = pods.with_volumes(spec, [pods.ssh_volume(self._job, mount_path)])
        self._spec = pods.with_ssh_fs_group(spec, mount_path)

    def for_plan(self, attempt: int | None, membership: Membership | None) -> WorkerFactory:
        """Workers as the plan decided: labelled with the failure policy's ``attempt`` (their containers
        told in ``MPIJOB_RESTART_ATTEMPT``), joined to a PodGroup. Shares the rest with this factory."""
        if attempt is None and membership is None:
            return self
        labels, annotations, spec = self._labels, self._annotations, self._spec
        if attempt is not None:
            labels, spec = pods.with_restart_attempt(labels, spec, attempt)
        if membership is not None:
            labels, annotations, spec = decorate(membership, labels, annotations, spec)
        factory = copy.copy(self)
        factory._labels, factory._annotations, factory._spec = labels, annotations, spec
        return factory

    def build(self, index: int) -> dict[str, Any]:
        name = names.worker_name(self._job, index)
        labels = {**self._labels, names.REPLICA_INDEX_LABEL: str(index + self._index_offset)}
        metadata: dict[str, Any] = {"name": name, "namespace": self._namespace, "labels": labels}
        if self._annotations:
            metadata["annotations"] = self._annotations
        spec = {**self._spec, "hostname": name, "subdomain": self._job}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
