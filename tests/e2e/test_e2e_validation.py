"""Bad specs are rejected by the real apiserver at ``kubectl apply`` time with our CRD's messages, verbatim.

These are the apiserver's own renderings (field path, "Invalid value", the CEL rule's message), which the
offline CRD tests (tests/packaging/test_crd.py) cannot show. Nothing is created for a rejected job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e import jobs
from tests.e2e.conftest import E2E

Job = dict[str, Any]
NOT_CHECKED = (
    "* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def _set(path: str, value: Any) -> Callable[[Job], None]:
    def edit(job: Job) -> None:
        *parents, leaf = path.split(".")
        node = job
        for key in parents:
            node = node.setdefault(key, {})
        if value is _DELETE:
            del node[leaf]
        else:
            node[leaf] = value

    return edit


_DELETE = object()
WORKER = "spec.mpiReplicaSpecs.Worker"
CASES: list[tuple[str, Callable[[Job], None], str]] = [
    (
        "launcher-replicas",
        _set("spec.mpiReplicaSpecs.Launcher.replicas", 2),
        "spec.mpiReplicaSpecs.Launcher.replicas: Invalid value: 2: must be 1",
    ),
    (
        "no-launcher",
        _set("spec.mpiReplicaSpecs.Launcher", _DELETE),
        "spec.mpiReplicaSpecs.Launcher: Required value: must have Launcher replica spec",
    ),
    (
        "no-worker-replicas",
        _set(f"{WORKER}.replicas", _DELETE),
        f"{WORKER}.replicas: Required value: must define number of replicas",
    ),
    (
        "zero-workers",
        _set(f"{WORKER}.replicas", 0),
        f"{WORKER}.replicas: Invalid value: 0: must be greater than or equal to 1",
    ),
    (
        "no-containers",
        _set(f"{WORKER}.template.spec.containers", []),
        f"{WORKER}.template.spec.containers: Required value: must define at least one container",
    ),
    (
        "negative-slots",
        _set("spec.slotsPerWorker", -1),
        "spec.slotsPerWorker: Invalid value: -1: "
        "spec.slotsPerWorker in body should be greater than or equal to 0",
    ),
    (
        "implementation",
        _set("spec.mpiImplementation", "OpenMP"),
        '\n* spec.mpiImplementation: Unsupported value: "OpenMP": '
        'supported values: "OpenMPI", "Intel", "MPICH"\n' + NOT_CHECKED,
    ),
    (
        "clean-pod-policy",
        _set("spec.runPolicy.cleanPodPolicy", "Some"),
        '\n* spec.runPolicy.cleanPodPolicy: Unsupported value: "Some": '
        'supported values: "All", "Running", "None"\n' + NOT_CHECKED,
    ),
    (
        "restart-policy",
        _set(f"{WORKER}.restartPolicy", "Always"),
        f'\n* {WORKER}.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"\n'
        + NOT_CHECKED,
    ),
    (
        "launcher-creation-policy",
        _set("spec.launcherCreationPolicy", "Later"),
        '\n* spec.launcherCreationPolicy: Unsupported value: "Later": supported values: "AtStartup", '
        '"WaitForWorkersReady"\n' + NOT_CHECKED,
    ),
    (
        "managed-by",
        _set("spec.runPolicy.managedBy", "example.com/other"),
        '\n* spec.runPolicy.managedBy: Unsupported value: "example.com/other": supported values: '
        '"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"\n' + NOT_CHECKED,
    ),
    (
        "name-too-long",
        _set("metadata.name", "x" * 60),
        "metadata.name: Invalid value: is too long: "
        "the hostname of the last worker, <name>-worker-<replicas-1>, "
        "must be no more than 63 characters (names up to 54 characters allow up to 10 workers, up to 52 "
        "characters up to 1000)",
    ),
]


def _apply(e2e: E2E, ns: str, job: Job) -> tuple[int, str]:
    done = e2e.kube.kubectl("apply", "-n", ns, "-f", "-", stdin=json.dumps(job), check=False)
    return done.returncode, done.stderr.strip()


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_spec_rejected_with_our_message(
    e2e: E2E, ns: str, edit: Callable[[Job], None], message: str
) -> None:
    job = jobs.manifest("bad")
    edit(job)
    code, stderr = _apply(e2e, ns, job)
    name = job["metadata"]["name"]
    assert (code, stderr) == (1, f'The MPIJob "{name}" is invalid: {message}')
    assert e2e.kube.list("mpijobs", ns) == []
    assert jobs.children(e2e.kube, ns) == {kind: set() for kind in jobs.CHILD_KINDS}


def test_managed_by_is_immutable(e2e: E2E, ns: str) -> None:
    job = jobs.manifest("fixed-manager")
    assert _apply(e2e, ns, job)[0] == 0
    job["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert _apply(e2e, ns, job) == (
        1,
        'The MPIJob "fixed-manager" is invalid: spec.runPolicy.managedBy: Invalid value: '
        "managedBy is immutable: it cannot be added, changed or removed after creation",
    )
