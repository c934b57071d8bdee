"""Child builders against upstream's controller tests (pkg/controller/mpi_job_controller_test.go).

Mirrors ``TestNewConfigMap`` (hostfile), ``TestUpdateDiscoverHostsInConfigMap`` (discover_hosts.sh) and
``TestNewLauncherAndWorker`` (launcher Job and worker Pod, after ``scheme.Scheme.Default``), keeping their
case names; the other cases (Service, SSH Secret) pin what upstream's controller code
(pkg/controller/mpi_job_controller.go) builds where its tests do not look. Owner references are not
compared (upstream ignores them too; Metacontroller sets ours). Our deviations
(docs/compatibility.md): the worker DNS search follows the configured cluster domain,
``publishNotReadyAddresses: false`` is never emitted, and an SSH key off /root/.ssh gets an fsGroup.

Secrets: key material never appears in an assertion message; checks on it go through ``_require``.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from app.api.defaults import Job, with_defaults
from app.api.types import MPIJob
from app.children.configmap import build_configmap, discover_hosts, hostfile
from app.children.launcher_job import build_launcher_job
from app.children.launcher_wait import SCRIPT as WAIT_SCRIPT
from app.children.service import build_service
from app.children.ssh_secret import build_ssh_secret
from app.children.workers import WorkerFactory
from app.kube.keys import UNSEEDED_MESSAGE, SeededKeys
from app.kube.request import Meta, ObservedSecret
from app.settings import Settings

OPERATOR = "training.kubeflow.org/operator-name"
JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"
INDEX = "training.kubeflow.org/replica-index"

SSH_ITEMS = [
    {"key": "ssh-privatekey", "path": "id_rsa"},
    {"key": "ssh-publickey", "path": "id_rsa.pub"},
    {"key": "ssh-publickey", "path": "authorized_keys"},
]
CONFIG_ITEMS = [
    {"key": "hostfile", "path": "hostfile", "mode": 0o444},
    {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
]
LAUNCHER_ENV = [{"name": "K_MPI_JOB_ROLE", "value": "launcher"}]
WORKER_ENV = [{"name": "K_MPI_JOB_ROLE", "value": "worker"}]
OMPI_ENV = [
    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
    {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
    {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
]
INTEL_ENV = [
    {"name": "I_MPI_HYDRA_HOST_FILE", "value": "/etc/mpi/hostfile"},
    {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
]
MPICH_ENV = [
    {"name": "HYDRA_HOST_FILE", "value": "/etc/mpi/hostfile"},
    {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
]
NVIDIA_DISABLE_ENV = [{"name": "NVIDIA_VISIBLE_DEVICES"}, {"name": "NVIDIA_DRIVER_CAPABILITIES"}]
SSHD = ["/usr/sbin/sshd", "-De"]


def ssh_volume(job: str, default_mode: bool = True) -> dict[str, Any]:
    """Upstream's volume; off /root/.ssh (``default_mode=False``) our private key item is 0440 (deviation)."""
    secret: dict[str, Any] = {"secretName": f"{job}-ssh", "items": SSH_ITEMS}
    if default_mode:
        secret["defaultMode"] = 0o600
    else:
        secret["items"] = [{**SSH_ITEMS[0], "mode": 0o440}, *SSH_ITEMS[1:]]
    return {"name": "ssh-auth", "secret": secret}


def config_volume(job: str) -> dict[str, Any]:
    return {"name": "mpi-job-config", "configMap": {"name": f"{job}-config", "items": CONFIG_ITEMS}}


def role_labels(job: str, role: str) -> dict[str, str]:
    return {OPERATOR: "mpi-operator", JOB_NAME: job, JOB_ROLE: role}


def mpijob(name: str = "foo", namespace: str = "bar", **spec: Any) -> Job:
    """An MPIJob as written, defaulted as the hook does before building anything."""
    return with_defaults(
        MPIJob.model_validate(
            {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPIJob",
                "metadata": {"name": name, "namespace": namespace, "uid": "uid-1"},
                "spec": spec,
            }
        )
    )


def launcher(job: Job) -> dict[str, Any]:
    assert job.launcher_spec is not None
    return build_launcher_job(job, job.launcher_spec)


def workers(job: Job, domain: str) -> WorkerFactory:
    assert job.worker_spec is not None
    return WorkerFactory(job, job.worker_spec, domain)


def one_container() -> dict[str, Any]:
    return {"spec": {"containers": [{}]}}


def default_replicas(**worker: Any) -> dict[str, Any]:
    """Upstream's "defaults" replica specs: one empty container each, nothing else set."""
    return {"Launcher": {"template": one_container()}, "Worker": {"template": one_container(), **worker}}


# --------------------------------------------------------------------------------------------------------
# hostfile (TestNewConfigMap) and discover_hosts.sh (TestUpdateDiscoverHostsInConfigMap)
# --------------------------------------------------------------------------------------------------------


def hostfile_job(name: str, namespace: str, workers: int | None, **spec: Any) -> Job:
    specs = {} if workers is None else {"Worker": {"replicas": workers, "template": one_container()}}
    return mpijob(name, namespace, mpiReplicaSpecs=specs, **spec)


# (id, job, cluster domain, hostfile)
HOSTFILE_CASES = [
    (
        "OpenMPI without slots, enable launcher as worker",
        hostfile_job(
            "openmpi-without-slots", "tenant-a", 2, mpiImplementation="OpenMPI", runLauncherAsWorker=True
        ),
        "",
        "openmpi-without-slots-launcher.openmpi-without-slots.tenant-a.svc slots=1\n"
        "openmpi-without-slots-worker-0.openmpi-without-slots.tenant-a.svc slots=1\n"
        "openmpi-without-slots-worker-1.openmpi-without-slots.tenant-a.svc slots=1\n",
    ),
    (
        "OpenMPI with cluster domain, enable launcher as worker",
        hostfile_job(
            "openmpi-without-slots", "tenant-a", 2, mpiImplementation="OpenMPI", runLauncherAsWorker=True
        ),
        "cluster.local",
        "openmpi-without-slots-launcher.openmpi-without-slots.tenant-a.svc.cluster.local slots=1\n"
        "openmpi-without-slots-worker-0.openmpi-without-slots.tenant-a.svc.cluster.local slots=1\n"
        "openmpi-without-slots-worker-1.openmpi-without-slots.tenant-a.svc.cluster.local slots=1\n",
    ),
    (
        "OpenMPI without slots, zero explicit workers",
        hostfile_job(
            "openmpi-without-slots", "tenant-a", 0, mpiImplementation="OpenMPI", runLauncherAsWorker=True
        ),
        "",
        "openmpi-without-slots-launcher.openmpi-without-slots.tenant-a.svc slots=1\n",
    ),
    (
        "OpenMPI without slots, disable launcher as worker",
        hostfile_job("openmpi-without-slots", "tenant-a", 2, mpiImplementation="OpenMPI"),
        "",
        "openmpi-without-slots-worker-0.openmpi-without-slots.tenant-a.svc slots=1\n"
        "openmpi-without-slots-worker-1.openmpi-without-slots.tenant-a.svc slots=1\n",
    ),
    (
        "OpenMPI with slots",
        hostfile_job("openmpi-with-slots", "tenant-a", 1, mpiImplementation="OpenMPI", slotsPerWorker=10),
        "",
        "openmpi-with-slots-worker-0.openmpi-with-slots.tenant-a.svc slots=10\n",
    ),
    (
        "OpenMPI with cluster domain",
        hostfile_job("openmpi-with-slots", "tenant-a", 1, mpiImplementation="OpenMPI"),
        "cluster.local",
        "openmpi-with-slots-worker-0.openmpi-with-slots.tenant-a.svc.cluster.local slots=1\n",
    ),
    (
        "IntelMPI with slots",
        hostfile_job("intelmpi-with-slots", "project-x", 1, mpiImplementation="Intel", slotsPerWorker=10),
        "",
        "intelmpi-with-slots-worker-0.intelmpi-with-slots.project-x.svc:10\n",
    ),
    (
        "IntelMPI with cluster domain",
        hostfile_job("intelmpi-with-slots", "project-x", 1, mpiImplementation="Intel"),
        "cluster.local",
        "intelmpi-with-slots-worker-0.intelmpi-with-slots.project-x.svc.cluster.local:1\n",
    ),
    (
        "MPICH with slots",
        hostfile_job("mpich-with-slots", "project-x", 1, mpiImplementation="MPICH", slotsPerWorker=10),
        "",
        "mpich-with-slots-worker-0.mpich-with-slots.project-x.svc:10\n",
    ),
    (
        "MPICH with cluster domain",
        hostfile_job("mpich-with-slots", "project-x", 1, mpiImplementation="MPICH"),
        "cluster.local",
        "mpich-with-slots-worker-0.mpich-with-slots.project-x.svc.cluster.local:1\n",
    ),
    (
        "MPICH launcher as worker",
        hostfile_job("m", "ns", 1, mpiImplementation="MPICH", slotsPerWorker=4, runLauncherAsWorker=True),
        "",
        "m-launcher.m.ns.svc:4\nm-worker-0.m.ns.svc:4\n",
    ),
    (
        "IntelMPI launcher as worker with a custom domain",
        hostfile_job("x", "ns", 1, mpiImplementation="Intel", slotsPerWorker=10, runLauncherAsWorker=True),
        "example.org",
        "x-launcher.x.ns.svc.example.org:10\nx-worker-0.x.ns.svc.example.org:10\n",
    ),
    (
        "slots 0 are written as 0",
        hostfile_job("pi", "default", 2, mpiImplementation="OpenMPI", slotsPerWorker=0),
        "",
        "pi-worker-0.pi.default.svc slots=0\npi-worker-1.pi.default.svc slots=0\n",
    ),
    (
        "no Worker spec",
        hostfile_job("pi", "default", None, mpiImplementation="OpenMPI"),
        "",
        "",
    ),
    (
        "no Worker spec, launcher as worker",
        hostfile_job("pi", "default", None, mpiImplementation="OpenMPI", runLauncherAsWorker=True),
        "",
        "pi-launcher.pi.default.svc slots=1\n",
    ),
    (
        "worker replicas unset",
        mpijob("pi", "default", mpiImplementation="OpenMPI", mpiReplicaSpecs={"Worker": {}}),
        "",
        "",
    ),
    (
        "twelve workers in index order",
        hostfile_job("w", "d", 12, mpiImplementation="OpenMPI"),
        "",
        "".join(f"w-worker-{i}.w.d.svc slots=1\n" for i in range(12)),
    ),
]


@pytest.mark.parametrize(
    ("job", "domain", "want"), [c[1:] for c in HOSTFILE_CASES], ids=[c[0] for c in HOSTFILE_CASES]
)
def test_hostfile(job: Job, domain: str, want: str) -> None:
    assert hostfile(job, domain) == want


# (id, job, running worker pod names, cluster domain, discover_hosts.sh)
DISCOVER_CASES = [
    (
        "no cluster domain, launcher as worker disabled, no running pods",
        mpijob("test-job", "default", mpiImplementation="OpenMPI"),
        [],
        "",
        "#!/bin/sh\n",
    ),
    (
        "no cluster domain, launcher as worker disabled, with running pods",
        mpijob("test-job", "default", mpiImplementation="OpenMPI"),
        ["test-job-worker-0", "test-job-worker-1"],
        "",
        "#!/bin/sh\necho test-job-worker-0.test-job.default.svc\n"
        "echo test-job-worker-1.test-job.default.svc\n",
    ),
    (
        "no cluster domain, launcher as worker enabled, no running pods",
        mpijob("test-job", "default", mpiImplementation="OpenMPI", runLauncherAsWorker=True),
        [],
        "",
        "#!/bin/sh\necho test-job-launcher.test-job.default.svc\n",
    ),
    (
        "no cluster domain, launcher as worker enabled, with running pods",
        mpijob("test-job", "default", mpiImplementation="OpenMPI", runLauncherAsWorker=True),
        ["test-job-worker-0", "test-job-worker-1"],
        "",
        "#!/bin/sh\necho test-job-launcher.test-job.default.svc\n"
        "echo test-job-worker-0.test-job.default.svc\necho test-job-worker-1.test-job.default.svc\n",
    ),
    (
        "with cluster domain, launcher as worker disabled, with running pods",
        mpijob("test-job", "tenant-a", mpiImplementation="OpenMPI"),
        ["test-job-worker-0"],
        "cluster.local",
        "#!/bin/sh\necho test-job-worker-0.test-job.tenant-a.svc.cluster.local\n",
    ),
    (
        "with cluster domain, launcher as worker enabled, with running pods",
        mpijob("test-job", "tenant-a", mpiImplementation="OpenMPI", runLauncherAsWorker=True),
        ["test-job-worker-0"],
        "cluster.local",
        "#!/bin/sh\necho test-job-launcher.test-job.tenant-a.svc.cluster.local\n"
        "echo test-job-worker-0.test-job.tenant-a.svc.cluster.local\n",
    ),
    (
        "pods are sorted by name",
        mpijob("test-job", "default", mpiImplementation="OpenMPI"),
        ["test-job-worker-2", "test-job-worker-0", "test-job-worker-1"],
        "",
        "#!/bin/sh\necho test-job-worker-0.test-job.default.svc\n"
        "echo test-job-worker-1.test-job.default.svc\necho test-job-worker-2.test-job.default.svc\n",
    ),
    (
        "pods are sorted as strings, w-10 before w-2",
        mpijob("w", "d", mpiImplementation="OpenMPI"),
        ["w-worker-2", "w-worker-10", "w-worker-1", "w-worker-0"],
        "",
        "#!/bin/sh\necho w-worker-0.w.d.svc\necho w-worker-1.w.d.svc\necho w-worker-10.w.d.svc\n"
        "echo w-worker-2.w.d.svc\n",
    ),
    (
        "Intel lists hosts without slots",
        mpijob("i", "d", mpiImplementation="Intel", slotsPerWorker=8),
        ["i-worker-0"],
        "",
        "#!/bin/sh\necho i-worker-0.i.d.svc\n",
    ),
    (
        "running pods given as a generator",
        mpijob("g", "d", mpiImplementation="OpenMPI", runLauncherAsWorker=True),
        (f"g-worker-{i}" for i in (1, 0)),
        "example.org",
        "#!/bin/sh\necho g-launcher.g.d.svc.example.org\necho g-worker-0.g.d.svc.example.org\n"
        "echo g-worker-1.g.d.svc.example.org\n",
    ),
]


@pytest.mark.parametrize(
    ("job", "running", "domain", "want"), [c[1:] for c in DISCOVER_CASES], ids=[c[0] for c in DISCOVER_CASES]
)
def test_discover_hosts(job: Job, running: Any, domain: str, want: str) -> None:
    assert discover_hosts(job, running, domain) == want


@pytest.mark.parametrize(
    ("job", "running", "domain", "want"),
    [
        (
            hostfile_job("pi", "default", 2),
            ["pi-worker-1"],
            "",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "pi-config", "namespace": "default", "labels": {"app": "pi"}},
                "data": {
                    "hostfile": "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n",
                    "discover_hosts.sh": "#!/bin/sh\necho pi-worker-1.pi.default.svc\n",
                },
            },
        ),
        (
            hostfile_job(
                "x", "ns", 1, mpiImplementation="Intel", slotsPerWorker=10, runLauncherAsWorker=True
            ),
            [],
            "cluster.local",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x-config", "namespace": "ns", "labels": {"app": "x"}},
                "data": {
                    "hostfile": "x-launcher.x.ns.svc.cluster.local:10\n"
                    "x-worker-0.x.ns.svc.cluster.local:10\n",
                    "discover_hosts.sh": "#!/bin/sh\necho x-launcher.x.ns.svc.cluster.local\n",
                },
            },
        ),
    ],
    ids=["OpenMPI, one running worker", "Intel, launcher as worker, cluster domain"],
)
def test_build_configmap(job: Job, running: list[str], domain: str, want: dict[str, Any]) -> None:
    assert build_configmap(job, running, domain) == want


# --------------------------------------------------------------------------------------------------------
# Launcher Job (TestNewLauncherAndWorker: wantLauncher)
# --------------------------------------------------------------------------------------------------------


def launcher_job(
    job: str,
    namespace: str,
    template_spec: dict[str, Any],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    launcher_host: str = "-",
    resolve: str = "",
    **job_spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": {**(labels or {}), **role_labels(job, "launcher")}}
    if annotations:
        metadata["annotations"] = annotations
    # Ours, not upstream's: a launcher container that chose no policy keeps its log's tail when it fails,
    # and the launcher waits for its workers in an init container after the template's own.
    template_spec = {
        **template_spec,
        "containers": [
            {"terminationMessagePolicy": "FallbackToLogsOnError", **c} for c in template_spec["containers"]
        ],
        "initContainers": [
            *template_spec.get("initContainers", []),
            wait_for_workers(template_spec["containers"][0], launcher_host=launcher_host, resolve=resolve),
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{job}-launcher", "namespace": namespace, "labels": {"app": job}},
        "spec": {
            **job_spec,
            "podReplacementPolicy": "Failed",
            "template": {"metadata": metadata, "spec": template_spec},
        },
    }


def wait_for_workers(
    first: dict[str, Any], bound: int = 300, launcher_host: str = "-", resolve: str = ""
) -> dict[str, Any]:
    """The init container the hook adds: container[0]'s image, env, mounts, user and resources, our script
    (with Hydra, ``resolve``: the launcher's own name, which must resolve before mpiexec starts)."""
    copied = ("image", "imagePullPolicy", "env", "envFrom", "volumeMounts", "securityContext", "resources")
    command = ["sh", "-c", WAIT_SCRIPT, "wait-for-workers", str(bound), launcher_host]
    return {
        "name": "wait-for-workers",
        "command": [*command, resolve] if resolve else command,
        **{key: first[key] for key in copied if first.get(key)},
    }


def default_launcher_spec(job: str, env: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return {
        "hostname": f"{job}-launcher",
        "subdomain": job,
        "restartPolicy": "OnFailure",
        "containers": [
            {
                "env": env,
                "volumeMounts": [
                    {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                    {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                ],
            }
        ],
        "volumes": [ssh_volume(job), config_volume(job)],
        **extra,
    }


# Open MPI 5 (PRRTE) reads its own names; verified against PRRTE's sources, prte_info and real runs.
PRTE_SLOTS_1 = [
    {"name": "PRTE_MCA_prte_keep_fqdn_hostnames", "value": "true"},
    {"name": "PRTE_MCA_prte_default_hostfile", "value": "/etc/mpi/hostfile"},
    {"name": "PRTE_MCA_plm_ssh_args", "value": "-o ConnectionAttempts=10"},
    {"name": "PRTE_MCA_prte_set_default_slots", "value": "1"},
]
OMPI_SLOTS_1 = [
    *LAUNCHER_ENV,
    *OMPI_ENV,
    {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
    *PRTE_SLOTS_1,
]
# With runLauncherAsWorker PRRTE must resolve the hostfile's names to see its own FQDN as local.
OMPI_AS_WORKER_SLOTS_1 = [*OMPI_SLOTS_1, {"name": "PRTE_MCA_prte_do_not_resolve", "value": "false"}]

# (id, MPIJob spec, expected launcher Job)
LAUNCHER_CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "defaults",
        {"mpiReplicaSpecs": default_replicas()},
        launcher_job("foo", "bar", default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV])),
    ),
    (
        "launcher-as-worker",
        {"runLauncherAsWorker": True, "mpiReplicaSpecs": default_replicas()},
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", OMPI_AS_WORKER_SLOTS_1),
            labels={INDEX: "0"},
            launcher_host="foo-launcher",
        ),
    ),
    (
        "overrides",
        {
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "slotsPerWorker": 5,
            "mpiImplementation": "Intel",
            "runPolicy": {"ttlSecondsAfterFinished": 1, "activeDeadlineSeconds": 2, "backoffLimit": 3},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "restartPolicy": "OnFailure",
                    "template": {
                        "metadata": {"labels": {"foo": "bar"}},
                        "spec": {
                            "hostNetwork": True,
                            "containers": [
                                {
                                    "env": [{"name": "FOO", "value": "bar"}],
                                    "securityContext": {"runAsUser": 1000},
                                    "volumeMounts": [{"name": "fool-vol", "mountPath": "/mnt/foo"}],
                                },
                                {},
                            ],
                            "volumes": [{"name": "foo-vol"}],
                        },
                    },
                },
                "Worker": {
                    "template": {
                        "spec": {
                            "hostNetwork": True,
                            "containers": [
                                {"command": ["/entrypoint.sh"], "env": [{"name": "FOO", "value": "bar"}]}
                            ],
                        }
                    }
                },
            },
        },
        launcher_job(
            "foo",
            "bar",
            {
                "hostNetwork": True,
                "dnsPolicy": "ClusterFirstWithHostNet",
                "hostname": "foo-launcher",
                "subdomain": "foo",
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "securityContext": {"runAsUser": 1000},
                        "env": [
                            {"name": "FOO", "value": "bar"},
                            *LAUNCHER_ENV,
                            *INTEL_ENV,
                            {"name": "I_MPI_PERHOST", "value": "5"},
                            *NVIDIA_DISABLE_ENV,
                        ],
                        "volumeMounts": [
                            {"name": "fool-vol", "mountPath": "/mnt/foo"},
                            {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
                            {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                        ],
                    },
                    {},
                ],
                "volumes": [{"name": "foo-vol"}, ssh_volume("foo", default_mode=False), config_volume("foo")],
                "securityContext": {"fsGroup": 1000},
            },
            labels={"foo": "bar"},
            resolve="foo-launcher.foo.bar.svc",
            ttlSecondsAfterFinished=1,
            activeDeadlineSeconds=2,
            backoffLimit=3,
        ),
    ),
    (
        "MPICH has no slots variable",
        {"mpiImplementation": "MPICH", "slotsPerWorker": 3, "mpiReplicaSpecs": default_replicas()},
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", [*LAUNCHER_ENV, *MPICH_ENV, *NVIDIA_DISABLE_ENV]),
            resolve="foo-launcher.foo.bar.svc",
        ),
    ),
    (
        "Intel launcher as worker",
        {"mpiImplementation": "Intel", "runLauncherAsWorker": True, "mpiReplicaSpecs": default_replicas()},
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec(
                "foo", [*LAUNCHER_ENV, *INTEL_ENV, {"name": "I_MPI_PERHOST", "value": "1"}]
            ),
            labels={INDEX: "0"},
            launcher_host="foo-launcher",
            resolve="foo-launcher.foo.bar.svc",
        ),
    ),
    (
        "runLauncherAsWorker false is like unset",
        {"runLauncherAsWorker": False, "mpiReplicaSpecs": default_replicas()},
        launcher_job("foo", "bar", default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV])),
    ),
    (
        "launcher without a Worker spec",
        {"mpiReplicaSpecs": {"Launcher": {"template": one_container()}}},
        launcher_job("foo", "bar", default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV])),
    ),
    (
        "ExitCode restart policy becomes Never",
        {"mpiReplicaSpecs": {"Launcher": {"restartPolicy": "ExitCode", "template": one_container()}}},
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV], restartPolicy="Never"),
        ),
    ),
    (
        "template restartPolicy overridden by replica restartPolicy",
        {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "restartPolicy": "Never",
                    "template": {"spec": {"restartPolicy": "Always", "containers": [{}]}},
                }
            }
        },
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV], restartPolicy="Never"),
        ),
    ),
    (
        "template restartPolicy overridden by the default",
        {
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"restartPolicy": "Never", "containers": [{}]}}}
            }
        },
        launcher_job("foo", "bar", default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV])),
    ),
    (
        "template labels and annotations kept, controller-uid stripped, ours win",
        {
            "runLauncherAsWorker": True,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "template": {
                        "metadata": {
                            "labels": {
                                "controller-uid": "0d6b0b5e",
                                "team": "hpc",
                                JOB_ROLE: "worker",
                                INDEX: "7",
                            },
                            "annotations": {"sidecar.istio.io/inject": "false"},
                        },
                        "spec": {"containers": [{}]},
                    }
                }
            },
        },
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", OMPI_AS_WORKER_SLOTS_1),
            labels={"team": "hpc", INDEX: "0"},
            launcher_host="foo-launcher",
            annotations={"sidecar.istio.io/inject": "false"},
        ),
    ),
    (
        "user env kept before ours, duplicates included",
        {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "launcher",
                                    "image": "mpi:1",
                                    "command": ["mpirun", "-n", "2", "/pi"],
                                    "env": [
                                        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                                        {"name": "K_MPI_JOB_ROLE", "value": "mine"},
                                    ],
                                },
                                {"name": "sidecar", "env": [{"name": "A", "value": "1"}]},
                            ],
                            "initContainers": [{"name": "init", "image": "busybox"}],
                        }
                    }
                }
            }
        },
        launcher_job(
            "foo",
            "bar",
            {
                "hostname": "foo-launcher",
                "subdomain": "foo",
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "name": "launcher",
                        "image": "mpi:1",
                        "command": ["mpirun", "-n", "2", "/pi"],
                        "env": [
                            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                            {"name": "K_MPI_JOB_ROLE", "value": "mine"},
                            *OMPI_SLOTS_1,
                            *NVIDIA_DISABLE_ENV,
                        ],
                        "volumeMounts": [
                            {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                            {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                        ],
                    },
                    {"name": "sidecar", "env": [{"name": "A", "value": "1"}]},
                ],
                "initContainers": [{"name": "init", "image": "busybox"}],
                "volumes": [ssh_volume("foo"), config_volume("foo")],
            },
        ),
    ),
    (
        "quantities canonical",
        {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "resources": {
                                        "limits": {"cpu": 1, "memory": "1024Mi", "nvidia.com/gpu": 1},
                                        "requests": {"cpu": "1000m", "memory": "1.5Gi"},
                                    }
                                }
                            ],
                            "initContainers": [{"resources": {"requests": {"cpu": 0.5}}}],
                            "volumes": [
                                {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2048Mi"}}
                            ],
                        }
                    }
                }
            }
        },
        launcher_job(
            "foo",
            "bar",
            {
                "hostname": "foo-launcher",
                "subdomain": "foo",
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "resources": {
                            "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                            "requests": {"cpu": "1", "memory": "1536Mi"},
                        },
                        "env": [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV],
                        "volumeMounts": [
                            {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                            {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                        ],
                    }
                ],
                "initContainers": [{"resources": {"requests": {"cpu": "500m"}}}],
                "volumes": [
                    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                    ssh_volume("foo"),
                    config_volume("foo"),
                ],
            },
        ),
    ),
    (
        "ttl, activeDeadline and backoffLimit of 0 copied",
        {
            "runPolicy": {"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 0, "backoffLimit": 0},
            "mpiReplicaSpecs": default_replicas(),
        },
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV]),
            ttlSecondsAfterFinished=0,
            activeDeadlineSeconds=0,
            backoffLimit=0,
        ),
    ),
    (
        "user dnsPolicy replaced with hostNetwork",
        {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "template": {"spec": {"hostNetwork": True, "dnsPolicy": "Default", "containers": [{}]}}
                }
            }
        },
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec(
                "foo",
                [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV],
                hostNetwork=True,
                dnsPolicy="ClusterFirstWithHostNet",
            ),
        ),
    ),
    (
        "hostNetwork false leaves dnsPolicy alone",
        {"mpiReplicaSpecs": {"Launcher": {"template": {"spec": {"hostNetwork": False, "containers": [{}]}}}}},
        launcher_job(
            "foo",
            "bar",
            default_launcher_spec("foo", [*OMPI_SLOTS_1, *NVIDIA_DISABLE_ENV], hostNetwork=False),
        ),
    ),
]


@pytest.mark.parametrize(
    ("spec", "want"), [c[1:] for c in LAUNCHER_CASES], ids=[c[0] for c in LAUNCHER_CASES]
)
def test_build_launcher(spec: dict[str, Any], want: dict[str, Any]) -> None:
    assert launcher(mpijob(**copy.deepcopy(spec))) == want


def test_a_launcher_container_keeps_the_termination_message_policy_it_chose() -> None:
    replicas = default_replicas()
    containers = replicas["Launcher"]["template"]["spec"]["containers"]
    containers.append({"name": "sidecar", "image": "busybox", "terminationMessagePolicy": "File"})
    built = launcher(mpijob(mpiReplicaSpecs=replicas))["spec"]["template"]["spec"]["containers"]
    assert [c["terminationMessagePolicy"] for c in built] == ["FallbackToLogsOnError", "File"]


# --------------------------------------------------------------------------------------------------------
# Worker Pods (TestNewLauncherAndWorker: wantWorker)
# --------------------------------------------------------------------------------------------------------


def worker_pod(
    job: str,
    namespace: str,
    index: int,
    spec: dict[str, Any],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    replica_index: str | None = None,
) -> dict[str, Any]:
    name = f"{job}-worker-{index}"
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {**(labels or {}), **role_labels(job, "worker"), INDEX: replica_index or str(index)},
    }
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"hostname": name, "subdomain": job, **spec},
    }


def default_worker_spec(
    job: str, namespace: str, domain: str = "cluster.local", **extra: Any
) -> dict[str, Any]:
    return {
        "dnsConfig": {"searches": [f"{job}.{namespace}.svc.{domain}"]},
        "restartPolicy": "Never",
        "containers": [
            {
                "command": SSHD,
                "env": WORKER_ENV,
                "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
            }
        ],
        "volumes": [ssh_volume(job)],
        **extra,
    }


# (id, MPIJob spec, cluster domain, worker index, expected Pod)
WORKER_CASES: list[tuple[str, dict[str, Any], str, int, dict[str, Any]]] = [
    (
        "defaults",
        {"mpiReplicaSpecs": default_replicas()},
        "",
        0,
        worker_pod("foo", "bar", 0, default_worker_spec("foo", "bar")),
    ),
    (
        "launcher-as-worker",
        {"runLauncherAsWorker": True, "mpiReplicaSpecs": default_replicas()},
        "",
        0,
        worker_pod("foo", "bar", 0, default_worker_spec("foo", "bar"), replica_index="1"),
    ),
    (
        "overrides",
        LAUNCHER_CASES[2][1],
        "",
        12,
        worker_pod(
            "foo",
            "bar",
            12,
            {
                "hostNetwork": True,
                "dnsPolicy": "ClusterFirstWithHostNet",
                "dnsConfig": {"searches": ["foo.bar.svc.cluster.local"]},
                "restartPolicy": "Never",
                "containers": [
                    {
                        "command": ["/entrypoint.sh"],
                        "env": [{"name": "FOO", "value": "bar"}, *WORKER_ENV],
                        "volumeMounts": [{"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"}],
                    }
                ],
                "volumes": [ssh_volume("foo", default_mode=False)],
                "securityContext": {"fsGroup": 1000},
            },
        ),
    ),
    (
        "launcher-as-worker shifts the index label of worker 3",
        {"runLauncherAsWorker": True, "mpiReplicaSpecs": default_replicas(replicas=4)},
        "",
        3,
        worker_pod("foo", "bar", 3, default_worker_spec("foo", "bar"), replica_index="4"),
    ),
    (
        "cluster domain configured",
        {"mpiReplicaSpecs": default_replicas()},
        "example.org",
        1,
        worker_pod("foo", "bar", 1, default_worker_spec("foo", "bar", "example.org")),
    ),
    (
        "args without command get no default command",
        {
            "mpiReplicaSpecs": {
                "Worker": {"template": {"spec": {"containers": [{"args": ["-c", "sleep 1"]}]}}}
            }
        },
        "",
        0,
        worker_pod(
            "foo",
            "bar",
            0,
            default_worker_spec(
                "foo",
                "bar",
                containers=[
                    {
                        "args": ["-c", "sleep 1"],
                        "env": WORKER_ENV,
                        "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                    }
                ],
            ),
        ),
    ),
    (
        "empty command and args get the default command",
        {
            "mpiReplicaSpecs": {
                "Worker": {"template": {"spec": {"containers": [{"command": [], "args": []}]}}}
            }
        },
        "",
        0,
        worker_pod(
            "foo",
            "bar",
            0,
            default_worker_spec(
                "foo",
                "bar",
                containers=[
                    {
                        "command": SSHD,
                        "args": [],
                        "env": WORKER_ENV,
                        "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                    }
                ],
            ),
        ),
    ),
    (
        "user dnsConfig kept, search appended",
        {
            "mpiReplicaSpecs": {
                "Worker": {
                    "template": {
                        "spec": {
                            "dnsConfig": {
                                "nameservers": ["10.0.0.10"],
                                "searches": ["corp.example"],
                                "options": [{"name": "ndots", "value": "2"}],
                            },
                            "containers": [{}],
                        }
                    }
                }
            }
        },
        "example.org",
        0,
        worker_pod(
            "foo",
            "bar",
            0,
            default_worker_spec(
                "foo",
                "bar",
                dnsConfig={
                    "nameservers": ["10.0.0.10"],
                    "searches": ["corp.example", "foo.bar.svc.example.org"],
                    "options": [{"name": "ndots", "value": "2"}],
                },
            ),
        ),
    ),
    (
        "template labels and annotations kept, controller-uid stripped, ours win",
        {
            "mpiReplicaSpecs": {
                "Worker": {
                    "template": {
                        "metadata": {
                            "labels": {
                                "controller-uid": "0d6b0b5e",
                                "team": "hpc",
                                JOB_ROLE: "launcher",
                                INDEX: "9",
                            },
                            "annotations": {"prometheus.io/scrape": "true"},
                        },
                        "spec": {"containers": [{}]},
                    }
                }
            }
        },
        "",
        2,
        worker_pod(
            "foo",
            "bar",
            2,
            default_worker_spec("foo", "bar"),
            labels={"team": "hpc"},
            annotations={"prometheus.io/scrape": "true"},
        ),
    ),
    (
        "ExitCode restart policy becomes Never",
        {"mpiReplicaSpecs": {"Worker": {"restartPolicy": "ExitCode", "template": one_container()}}},
        "",
        0,
        worker_pod("foo", "bar", 0, default_worker_spec("foo", "bar")),
    ),
    (
        "OnFailure restart policy overrides the template's",
        {
            "mpiReplicaSpecs": {
                "Worker": {
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"restartPolicy": "Always", "containers": [{}]}},
                }
            }
        },
        "",
        0,
        worker_pod("foo", "bar", 0, default_worker_spec("foo", "bar", restartPolicy="OnFailure")),
    ),
    (
        "only the first container is decorated, user volumes first",
        {
            "mpiReplicaSpecs": {
                "Worker": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "w", "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                                {"name": "sidecar"},
                            ],
                            "volumes": [{"name": "data", "emptyDir": {}}],
                        }
                    }
                }
            }
        },
        "",
        0,
        worker_pod(
            "foo",
            "bar",
            0,
            default_worker_spec(
                "foo",
                "bar",
                containers=[
                    {
                        "name": "w",
                        "command": SSHD,
                        "env": WORKER_ENV,
                        "volumeMounts": [
                            {"name": "data", "mountPath": "/data"},
                            {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                        ],
                    },
                    {"name": "sidecar"},
                ],
                volumes=[{"name": "data", "emptyDir": {}}, ssh_volume("foo")],
            ),
        ),
    ),
    (
        "quantities canonical",
        {
            "mpiReplicaSpecs": {
                "Worker": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "resources": {
                                        "limits": {"cpu": 2, "memory": "1024Mi"},
                                        "requests": {"cpu": 0.5},
                                    }
                                }
                            ],
                            "overhead": {"cpu": "250m", "memory": "131072Ki"},
                        }
                    }
                }
            }
        },
        "",
        0,
        worker_pod(
            "foo",
            "bar",
            0,
            default_worker_spec(
                "foo",
                "bar",
                containers=[
                    {
                        "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
                        "command": SSHD,
                        "env": WORKER_ENV,
                        "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                    }
                ],
                overhead={"cpu": "250m", "memory": "128Mi"},
            ),
        ),
    ),
]


@pytest.mark.parametrize(
    ("spec", "domain", "index", "want"), [c[1:] for c in WORKER_CASES], ids=[c[0] for c in WORKER_CASES]
)
def test_build_worker(spec: dict[str, Any], domain: str, index: int, want: dict[str, Any]) -> None:
    job = mpijob(**copy.deepcopy(spec))
    assert workers(job, domain).build(index) == want


@pytest.mark.parametrize("spec", [c[1] for c in WORKER_CASES], ids=[c[0] for c in WORKER_CASES])
def test_builders_do_not_mutate_the_mpijob(spec: dict[str, Any]) -> None:
    raw = copy.deepcopy(spec)
    job = mpijob(**raw)
    before = copy.deepcopy(job)
    factory = workers(job, "example.org")
    pods = [factory.build(0), factory.build(1)]
    assert job == before
    assert raw == spec
    # Two pods differ only in their identity.
    for pod in pods:
        pod["metadata"].pop("name")
        pod["metadata"]["labels"].pop(INDEX)
        pod["spec"].pop("hostname")
    assert pods[0] == pods[1]


@pytest.mark.parametrize("spec", [c[1] for c in LAUNCHER_CASES], ids=[c[0] for c in LAUNCHER_CASES])
def test_build_launcher_does_not_mutate_the_mpijob(spec: dict[str, Any]) -> None:
    raw = copy.deepcopy(spec)
    job = mpijob(**raw)
    before = copy.deepcopy(job)
    first = launcher(job)
    assert job == before
    assert launcher(job) == first
    assert raw == spec


# --------------------------------------------------------------------------------------------------------
# Service
# --------------------------------------------------------------------------------------------------------


def service(job: str, namespace: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": job, "namespace": namespace, "labels": {"app": job}},
        "spec": {"clusterIP": "None", "selector": {OPERATOR: "mpi-operator", JOB_NAME: job}, **extra},
    }


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"mpiReplicaSpecs": default_replicas()}, service("foo", "bar")),
        ({"runLauncherAsWorker": False, "mpiReplicaSpecs": default_replicas()}, service("foo", "bar")),
        (
            {"runLauncherAsWorker": True, "mpiReplicaSpecs": default_replicas()},
            service("foo", "bar", publishNotReadyAddresses=True),
        ),
    ],
    ids=["runLauncherAsWorker unset", "runLauncherAsWorker false", "runLauncherAsWorker true"],
)
def test_build_service(spec: dict[str, Any], want: dict[str, Any]) -> None:
    assert build_service(mpijob(**spec)) == want


# --------------------------------------------------------------------------------------------------------
# SSH Secret
# --------------------------------------------------------------------------------------------------------

KEYS = SeededKeys(b"s" * 32)


def _require(condition: bool, message: str) -> None:
    """Fail with ``message`` only: pytest's assertion rewriting would print the key material."""
    if not condition:
        pytest.fail(message, pytrace=False)


def secret_object(job: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{job}-ssh", "namespace": namespace, "labels": {"app": job}},
        "type": "kubernetes.io/ssh-auth",
        "data": data,
    }


OBSERVED_DATA = {"ssh-privatekey": "cHJpdmF0ZQ==", "ssh-publickey": "cHVibGlj"}


@pytest.mark.parametrize(
    "data",
    [
        OBSERVED_DATA,
        {**OBSERVED_DATA, "extra": "eA=="},
    ],
    ids=["both keys", "both keys and an extra one (upstream would regenerate)"],
)
def test_ssh_secret_reuses_observed_data_verbatim(data: dict[str, str]) -> None:
    observed = ObservedSecret(metadata=Meta(name="foo-ssh", namespace="bar"), data=dict(data))
    built = build_ssh_secret(mpijob(), observed, KEYS)
    assert built == secret_object("foo", "bar", data)
    assert built["data"] is not observed.data


def _generated(job: Job, observed: ObservedSecret | None, keys: SeededKeys = KEYS) -> dict[str, str]:
    secret = build_ssh_secret(job, observed, keys)
    _require(
        {k: v for k, v in secret.items() if k != "data"}
        == {k: v for k, v in secret_object("foo", "bar", {}).items() if k != "data"},
        "secret metadata/type differ",
    )
    _require(sorted(secret["data"]) == ["ssh-privatekey", "ssh-publickey"], "secret keys differ")
    return secret["data"]


@pytest.mark.parametrize(
    "observed",
    [
        None,
        ObservedSecret(metadata=Meta(name="foo-ssh"), data=None),
        ObservedSecret(metadata=Meta(name="foo-ssh"), data={}),
        ObservedSecret(metadata=Meta(name="foo-ssh"), data={"ssh-privatekey": "cHJpdmF0ZQ=="}),
        ObservedSecret(metadata=Meta(name="foo-ssh"), data={"ssh-publickey": "cHVibGlj"}),
    ],
    ids=["absent", "no data", "empty data", "public key missing", "private key missing"],
)
def test_ssh_secret_generated_when_not_usable(observed: ObservedSecret | None) -> None:
    data = _generated(mpijob(), observed)
    private_pem = base64.b64decode(data["ssh-privatekey"])
    public_line = base64.b64decode(data["ssh-publickey"])
    _require(private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----\n"), "private key is not an EC PEM")
    _require(private_pem.endswith(b"-----END EC PRIVATE KEY-----\n"), "private key PEM is not terminated")
    key = serialization.load_pem_private_key(private_pem, password=None)
    _require(isinstance(key, ec.EllipticCurvePrivateKey), "private key is not an EC key")
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    _require(key.curve.name == "secp521r1", "private key is not P-521")
    _require(public_line.startswith(b"ecdsa-sha2-nistp521 "), "public key line has the wrong type")
    _require(public_line.endswith(b"\n") and public_line.count(b"\n") == 1, "public key line not one line")
    _require(len(public_line.split(b" ")) == 2, "public key line should have no comment")
    public = serialization.load_ssh_public_key(public_line.rstrip(b"\n"))
    _require(public == key.public_key(), "public key does not match the private key")


def test_seeded_ssh_keys_are_stable_per_uid_and_seed() -> None:
    first = _generated(mpijob(), None)
    again = _generated(mpijob(), None)
    from_other_instance = _generated(mpijob(), None, SeededKeys(b"s" * 32))
    other_uid = build_ssh_secret(
        with_defaults(
            MPIJob.model_validate({"metadata": {"name": "foo", "namespace": "bar", "uid": "uid-2"}})
        ),
        None,
        KEYS,
    )["data"]
    other_seed = _generated(mpijob(), None, SeededKeys(b"t" * 32))
    same = first == again == from_other_instance
    _require(same, "same seed and UID gave different keys")
    for name, other in (("another UID", other_uid), ("another seed", other_seed)):
        for field in ("ssh-privatekey", "ssh-publickey"):
            differs = first[field] != other[field]
            _require(differs, f"{field} did not change with {name}")


def test_ssh_key_pair_repr_hides_the_private_key() -> None:
    pair = KEYS("uid-1")
    text = repr(pair)
    pem_body = b"".join(pair.private_pem.splitlines()[1:-1]).decode()
    _require("PRIVATE" not in text and pem_body[:24] not in text, "repr() shows the private key")
    _require("redacted" in text, "repr() does not say the private key is redacted")
    _require(repr(KEYS) == "SeededKeys(<redacted>)", "repr() of SeededKeys shows the seed")


def test_seeded_keys_reject_a_short_seed() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        SeededKeys(b"s" * 31)


# --------------------------------------------------------------------------------------------------------
# fsGroup for a key off /root/.ssh (deviation from upstream: the key is 0440, never world-readable)
# --------------------------------------------------------------------------------------------------------

# (id, sshAuthMountPath, pod securityContext, container[0] securityContext, expected pod securityContext)
FS_GROUP_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any] | None]] = [
    ("root path: untouched", "/root/.ssh", {}, {"runAsUser": 1000}, None),
    (
        "user's fsGroup kept",
        "/home/u/.ssh",
        {"fsGroup": 7, "runAsUser": 5},
        {},
        {"fsGroup": 7, "runAsUser": 5},
    ),
    (
        "container runAsGroup first",
        "/home/u/.ssh",
        {"runAsGroup": 3},
        {"runAsGroup": 4, "runAsUser": 5},
        {"runAsGroup": 3, "fsGroup": 4},
    ),
    (
        "pod runAsGroup before runAsUser",
        "/home/u/.ssh",
        {"runAsGroup": 3},
        {"runAsUser": 5},
        {"runAsGroup": 3, "fsGroup": 3},
    ),
    (
        "container runAsUser",
        "/home/u/.ssh",
        {"runAsUser": 6},
        {"runAsUser": 5},
        {"runAsUser": 6, "fsGroup": 5},
    ),
    ("pod runAsUser", "/home/u/.ssh", {"runAsUser": 6}, {}, {"runAsUser": 6, "fsGroup": 6}),
    ("root user skipped", "/home/u/.ssh", {}, {"runAsUser": 0}, {"fsGroup": 1000}),
    ("nothing known: mpiuser's 1000", "/home/u/.ssh", {}, {}, {"fsGroup": 1000}),
]


@pytest.mark.parametrize(
    ("path", "pod_context", "container_context", "want"),
    [c[1:] for c in FS_GROUP_CASES],
    ids=[c[0] for c in FS_GROUP_CASES],
)
def test_fs_group_for_a_non_root_key(
    path: str, pod_context: dict[str, Any], container_context: dict[str, Any], want: dict[str, Any] | None
) -> None:
    container: dict[str, Any] = {"name": "c"}
    if container_context:
        container["securityContext"] = container_context
    template: dict[str, Any] = {"spec": {"containers": [container]}}
    if pod_context:
        template["spec"]["securityContext"] = pod_context
    replicas = {"Launcher": {"template": template}, "Worker": {"replicas": 1, "template": template}}
    job = mpijob(sshAuthMountPath=path, mpiReplicaSpecs=copy.deepcopy(replicas))
    assert job.launcher_spec is not None and job.worker_spec is not None
    launcher_spec = build_launcher_job(job, job.launcher_spec)["spec"]["template"]["spec"]
    worker_spec = WorkerFactory(job, job.worker_spec, "").build(0)["spec"]
    assert launcher_spec.get("securityContext") == want
    assert worker_spec.get("securityContext") == want


def test_seeded_keys_without_a_uid_are_random_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Two jobs without metadata.uid must not share a derived key (issue 7); the hook's log says so."""
    seed = tmp_path / "seed"
    seed.write_bytes(b"s" * 32)
    monkeypatch.setenv("MPI_OPERATOR_SSH_KEY_SEED_FILE", str(seed))
    keys = Settings().keys
    no_uid = with_defaults(MPIJob.model_validate({"metadata": {"name": "foo", "namespace": "bar"}}))
    with caplog.at_level("WARNING", logger="mpi_operator_hook.keys"):
        first = build_ssh_secret(no_uid, None, keys)["data"]
        second = build_ssh_secret(no_uid, None, keys)["data"]
    assert first["ssh-privatekey"] != second["ssh-privatekey"]
    assert [r.getMessage() for r in caplog.records] == [UNSEEDED_MESSAGE] * 2
    assert all(first["ssh-privatekey"] not in r.getMessage() for r in caplog.records)
    with_uid = with_defaults(MPIJob.model_validate({"metadata": {"name": "foo", "uid": "u-1"}}))
    assert build_ssh_secret(with_uid, None, keys)["data"] == build_ssh_secret(with_uid, None, keys)["data"]
