"""``mpijob render``: what a first sync would create, as YAML documents, with the SSH key redacted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

TINY = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: tiny
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: mpioperator/mpi-pi:openmpi
            command: [mpirun, -n, "2", /home/mpiuser/pi]
    Worker:
      replicas: 2
      template:
        metadata:
          labels:
            controller-uid: copied-by-the-user
        spec:
          containers:
          - name: worker
            image: mpioperator/mpi-pi:openmpi
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: not-an-mpijob
spec:
  containers:
  - name: c
    image: busybox
"""


def render(
    tmp_path: Path, text: str | None = None, *, path: str | None = None, gang: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``mpijob render`` on ``text`` (written to a file) or on ``path`` as given."""
    if path is None:
        file = tmp_path / "job.yaml"
        file.write_text(text or "")
        path = str(file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
    if gang:
        env["MPI_OPERATOR_GANG_SCHEDULING"] = gang
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "render", path],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def documents(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    docs = list(yaml.safe_load_all(done.stdout))
    assert all(isinstance(d, dict) for d in docs)
    return docs


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def test_render_prints_every_child_then_the_status(tmp_path: Path) -> None:
    done = render(tmp_path, TINY)
    *children, last = documents(done)
    assert [(c["kind"], c["metadata"]["name"]) for c in children] == [
        ("Service", "tiny"),
        ("ConfigMap", "tiny-config"),
        ("Secret", "tiny-ssh"),
        ("Pod", "tiny-worker-0"),
        ("Pod", "tiny-worker-1"),
        ("Job", "tiny-launcher"),
    ]
    for child in children:
        assert child["metadata"]["namespace"] == "default"
        assert "ownerReferences" not in child["metadata"]
    # The preview never prints key material.
    secret = children[2]
    assert secret["data"] == {"ssh-privatekey": "<redacted>", "ssh-publickey": "<redacted>"}
    assert "PRIVATE KEY" not in done.stdout
    assert "ecdsa-sha2" not in done.stdout
    # controller-uid belongs to Metacontroller: a user's copy is not passed on to the workers.
    for pod in children[3:5]:
        assert "controller-uid" not in pod["metadata"].get("labels", {})
    # Then the status a first sync would write.
    assert set(last) == {"status"}
    created = condition(last["status"], "Created")
    assert created is not None and created["status"] == "True"
    assert condition(last["status"], "Invalid") is None


@pytest.mark.parametrize(
    ("gang", "api_version"),
    [("volcano", "scheduling.volcano.sh/v1beta1"), ("coscheduler", "scheduling.x-k8s.io/v1alpha1")],
)
def test_render_with_gang_scheduling_shows_the_podgroup(tmp_path: Path, gang: str, api_version: str) -> None:
    """The preview assumes the overlay is applied: the PodGroup, and Pods that join it."""
    *children, last = documents(render(tmp_path, TINY, gang=gang))
    assert [(c["kind"], c["metadata"]["name"]) for c in children][3] == ("PodGroup", "tiny")
    assert children[3]["apiVersion"] == api_version
    assert children[3]["spec"]["minMember"] == 3
    assert {c["spec"]["schedulerName"] for c in children if c["kind"] == "Pod"} == {gang}
    assert children[-1]["spec"]["template"]["spec"]["schedulerName"] == gang
    assert condition(last["status"], "GangSchedulingUnavailable") is None


def test_render_keeps_the_namespace_of_the_file(tmp_path: Path) -> None:
    text = TINY.replace("  name: tiny\n", "  name: tiny\n  namespace: team-a\n")
    *children, _ = documents(render(tmp_path, text))
    assert {c["metadata"]["namespace"] for c in children} == {"team-a"}


def test_render_reads_standard_input(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "render", "-"],
        cwd=ROOT,
        env=env,
        input=TINY,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert [d.get("kind") for d in documents(done)] == [
        "Service",
        "ConfigMap",
        "Secret",
        "Pod",
        "Pod",
        "Job",
        None,
    ]


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        # Fails validation (upstream's wording and path).
        ("replicas: 2", "replicas: 0", "spec.mpiReplicaSpecs[Worker].replicas"),
        # Does not even parse as an MPIJob.
        ("replicas: 2", "replicas: two", 'spec.mpiReplicaSpecs[Worker].replicas: Invalid value: "two"'),
    ],
    ids=["worker-replicas-0", "worker-replicas-not-a-number"],
)
def test_render_of_an_invalid_job_prints_an_invalid_status(
    tmp_path: Path, old: str, new: str, path: str
) -> None:
    done = render(tmp_path, TINY.replace(old, new))
    assert done.returncode == 0
    docs = documents(done)
    # Nothing exists yet and an invalid job creates nothing: the status alone.
    assert len(docs) == 1 and set(docs[0]) == {"status"}
    invalid = condition(docs[0]["status"], "Invalid")
    assert invalid is not None and invalid["status"] == "True"
    assert path in invalid["message"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (POD, "MPIJob"),
        (TINY.replace("kubeflow.org/v2beta1", "kubeflow.org/v1"), "kubeflow.org/v2beta1"),
        ("- just\n- a list\n", "no MPIJob"),
        ("kind: [unclosed\n", ""),
    ],
    ids=["a-pod", "old-api-version", "a-yaml-list", "not-yaml"],
)
def test_render_of_something_else_exits_2_with_a_message(tmp_path: Path, text: str, message: str) -> None:
    done = render(tmp_path, text)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("mpijob: ")
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_render_of_a_missing_file_exits_2_with_a_message(tmp_path: Path) -> None:
    done = render(tmp_path, path=str(tmp_path / "no-such-job.yaml"))
    assert done.returncode == 2
    assert done.stderr.startswith("mpijob: ")
    assert "Traceback" not in done.stderr


def test_render_of_a_job_with_null_metadata_does_not_crash(tmp_path: Path) -> None:
    done = render(tmp_path, "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\nspec: {}\n")
    assert done.returncode in (0, 2)
    assert "Traceback" not in done.stderr
