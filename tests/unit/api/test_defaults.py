"""``with_defaults`` against upstream ``SetDefaults_MPIJob`` (pkg/apis/kubeflow/v2beta1/default_test.go).

The first five cases carry upstream's test names; the others pin the rules those cases imply: a value the
user set is kept even when it is falsy (0, ``false``) or invalid (validation, not defaulting, rejects it),
and only an empty string or an absent field is defaulted.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from app.api.defaults import Job, Replica, with_defaults
from app.api.types import MPIJob

# What every defaulted spec carries when the user set none of these fields (upstream "base defaults").
BASE = {
    "slotsPerWorker": 1,
    "runLauncherAsWorker": False,
    "runPolicy": {"cleanPodPolicy": "None"},
    "sshAuthMountPath": "/root/.ssh",
    "launcherCreationPolicy": "AtStartup",
    "mpiImplementation": "OpenMPI",
}

CONTAINERS = {"spec": {"containers": [{"name": "main", "image": "mpi:latest"}]}}

OVERRIDDEN_RUN_POLICY = {
    "cleanPodPolicy": "Running",
    "ttlSecondsAfterFinished": 2,
    "activeDeadlineSeconds": 3,
    "backoffLimit": 4,
}


def _replica(replica: Replica) -> dict[str, Any]:
    return {
        "replicas": replica.replicas,
        "restartPolicy": replica.restart_policy,
        "template": replica.template,
    }


def _spec(job: Job) -> dict[str, Any]:
    """The defaulted job in the MPIJob's wire shape, to compare with upstream's expected specs."""
    run_policy = job.run_policy.model_dump(by_alias=True, exclude_none=True)
    spec: dict[str, Any] = {
        "slotsPerWorker": job.slots_per_worker,
        "runLauncherAsWorker": job.run_launcher_as_worker,
        "runPolicy": {"cleanPodPolicy": job.clean_pod_policy, **run_policy},
        "sshAuthMountPath": job.ssh_auth_mount_path,
        "launcherCreationPolicy": job.launcher_creation_policy,
        "mpiImplementation": job.mpi_implementation,
    }
    if job.has_replica_specs:
        replicas = {"Launcher": job.launcher_spec, "Worker": job.worker_spec}
        spec["mpiReplicaSpecs"] = {k: _replica(v) for k, v in replicas.items() if v is not None}
    return spec


# (id, spec as the user wrote it, the complete defaulted spec)
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("base defaults", {}, BASE),
    (
        "base defaults overridden (intel)",
        {
            "slotsPerWorker": 10,
            "runLauncherAsWorker": False,
            "runPolicy": OVERRIDDEN_RUN_POLICY,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiImplementation": "Intel",
            "launcherCreationPolicy": "AtStartup",
        },
        {
            "slotsPerWorker": 10,
            "runLauncherAsWorker": False,
            "runPolicy": OVERRIDDEN_RUN_POLICY,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiImplementation": "Intel",
            "launcherCreationPolicy": "AtStartup",
        },
    ),
    (
        "base defaults overridden (mpich)",
        {
            "slotsPerWorker": 10,
            "runLauncherAsWorker": False,
            "runPolicy": OVERRIDDEN_RUN_POLICY,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiImplementation": "MPICH",
            "launcherCreationPolicy": "AtStartup",
        },
        {
            "slotsPerWorker": 10,
            "runLauncherAsWorker": False,
            "runPolicy": OVERRIDDEN_RUN_POLICY,
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiImplementation": "MPICH",
            "launcherCreationPolicy": "AtStartup",
        },
    ),
    (
        "launcher defaults",
        {"mpiReplicaSpecs": {"Launcher": {}}},
        {
            **BASE,
            "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "restartPolicy": "OnFailure", "template": {}}},
        },
    ),
    (
        "worker defaults",
        {"mpiReplicaSpecs": {"Worker": {}}},
        {**BASE, "mpiReplicaSpecs": {"Worker": {"replicas": 0, "restartPolicy": "Never", "template": {}}}},
    ),
    (
        "launcher and worker defaults, templates kept verbatim",
        {"mpiReplicaSpecs": {"Launcher": {"template": CONTAINERS}, "Worker": {"template": CONTAINERS}}},
        {
            **BASE,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "OnFailure", "template": CONTAINERS},
                "Worker": {"replicas": 0, "restartPolicy": "Never", "template": CONTAINERS},
            },
        },
    ),
    (
        "explicit replica values kept",
        {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never"},
                "Worker": {"replicas": 4, "restartPolicy": "OnFailure"},
            }
        },
        {
            **BASE,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": {}},
                "Worker": {"replicas": 4, "restartPolicy": "OnFailure", "template": {}},
            },
        },
    ),
    (
        "invalid replica values kept for validation to reject",
        {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 0, "restartPolicy": "Always"},
                "Worker": {"replicas": -1, "restartPolicy": "ExitCode"},
            }
        },
        {
            **BASE,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 0, "restartPolicy": "Always", "template": {}},
                "Worker": {"replicas": -1, "restartPolicy": "ExitCode", "template": {}},
            },
        },
    ),
    (
        "empty strings are defaulted",
        {
            "sshAuthMountPath": "",
            "mpiImplementation": "",
            "launcherCreationPolicy": "",
            "mpiReplicaSpecs": {"Launcher": {"restartPolicy": ""}, "Worker": {"restartPolicy": ""}},
        },
        {
            **BASE,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "OnFailure", "template": {}},
                "Worker": {"replicas": 0, "restartPolicy": "Never", "template": {}},
            },
        },
    ),
    (
        "nil replica spec is skipped (validation then says it is required)",
        {"mpiReplicaSpecs": {"Launcher": None}},
        {**BASE, "mpiReplicaSpecs": {}},
    ),
    ("empty replica spec map stays empty", {"mpiReplicaSpecs": {}}, {**BASE, "mpiReplicaSpecs": {}}),
    ("slotsPerWorker 0 kept", {"slotsPerWorker": 0}, {**BASE, "slotsPerWorker": 0}),
    ("negative slotsPerWorker kept", {"slotsPerWorker": -1}, {**BASE, "slotsPerWorker": -1}),
    (
        "runLauncherAsWorker false kept",
        {"runLauncherAsWorker": False},
        {**BASE, "runLauncherAsWorker": False},
    ),
    ("runLauncherAsWorker true kept", {"runLauncherAsWorker": True}, {**BASE, "runLauncherAsWorker": True}),
    (
        "cleanPodPolicy All kept",
        {"runPolicy": {"cleanPodPolicy": "All"}},
        {**BASE, "runPolicy": {"cleanPodPolicy": "All"}},
    ),
    (
        "unsupported cleanPodPolicy kept",
        {"runPolicy": {"cleanPodPolicy": "unknown"}},
        {**BASE, "runPolicy": {"cleanPodPolicy": "unknown"}},
    ),
    (
        "other runPolicy fields untouched",
        {
            "runPolicy": {
                "suspend": True,
                "managedBy": "kueue.x-k8s.io/multikueue",
                "backoffLimit": 0,
                "schedulingPolicy": {"minAvailable": 3, "queue": "q"},
            }
        },
        {
            **BASE,
            "runPolicy": {
                "cleanPodPolicy": "None",
                "suspend": True,
                "managedBy": "kueue.x-k8s.io/multikueue",
                "backoffLimit": 0,
                "schedulingPolicy": {"minAvailable": 3, "queue": "q"},
            },
        },
    ),
    (
        "launcherCreationPolicy WaitForWorkersReady kept",
        {"launcherCreationPolicy": "WaitForWorkersReady"},
        {**BASE, "launcherCreationPolicy": "WaitForWorkersReady"},
    ),
    (
        "launcherCreationPolicy is not an enum",
        {"launcherCreationPolicy": "Whenever"},
        {**BASE, "launcherCreationPolicy": "Whenever"},
    ),
    (
        "unsupported mpiImplementation kept",
        {"mpiImplementation": "Unknown"},
        {**BASE, "mpiImplementation": "Unknown"},
    ),
]


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_with_defaults(raw: dict[str, Any], want: dict[str, Any]) -> None:
    job = MPIJob.model_validate({"metadata": {"name": "foo", "namespace": "bar"}, "spec": raw})
    assert _spec(with_defaults(job)) == want


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_with_defaults_does_not_mutate_its_input(raw: dict[str, Any], want: dict[str, Any]) -> None:
    raw_copy = copy.deepcopy(raw)
    job = MPIJob.model_validate({"spec": raw})
    before = job.model_dump(by_alias=True)
    defaulted = with_defaults(job)
    assert defaulted is not job
    assert job.model_dump(by_alias=True) == before
    assert raw == raw_copy


def test_with_defaults_shares_templates_and_cannot_be_changed() -> None:
    """No deep copy: builders decorate copies of their own, and the defaulted job itself is frozen."""
    job = MPIJob.model_validate(
        {"spec": {"mpiReplicaSpecs": {"Launcher": {"template": copy.deepcopy(CONTAINERS)}}}}
    )
    defaulted = with_defaults(job)
    original = job.spec.mpi_replica_specs["Launcher"]  # type: ignore[index]
    assert defaulted.launcher_spec is not None and original is not None
    assert defaulted.launcher_spec.template is original.template
    with pytest.raises(dataclasses.FrozenInstanceError):
        defaulted.clean_pod_policy = "All"  # type: ignore[misc]


def test_with_defaults_leaves_metadata_and_status_alone() -> None:
    raw = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "foo", "namespace": "bar", "uid": "u-1", "generation": 3, "labels": {"a": "b"}},
        "spec": {},
        "status": {"conditions": [{"type": "Created", "status": "True", "reason": "MPIJobCreated"}]},
    }
    job = MPIJob.model_validate(raw)
    defaulted = with_defaults(job)
    assert defaulted.metadata == job.metadata
    assert defaulted.status == job.status
    assert (defaulted.name, defaulted.namespace) == ("foo", "bar")
