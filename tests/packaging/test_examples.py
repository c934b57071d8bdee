"""Every example in ``examples/`` goes through ``sync`` as a first sync and as a running job.

The gang-scheduled ones (``examples/gang/pi-<scheduler>.yaml``) run as their overlay deploys the hook: the
setting on and the PodGroup child declared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.hostfile_order_annotations import asks_topology_order
from app.settings import Settings
from tests.support import paths
from tests.support.builders import JOB_UID, observe, sync_request, with_job_status, with_pod_status
from tests.support.golden_cases import run
from tests.support.kube_schema import schema_errors

EXAMPLES = sorted((paths.ROOT / "examples").rglob("*.yaml"))


# examples/gang/<file> -> (the overlay's setting, its PodGroup child as tests.support.builders names it)
GANG = {
    "pi-volcano.yaml": ("volcano", "volcano"),
    "pi-scheduler-plugins.yaml": ("scheduler-plugins-scheduler", "plugins"),
    "pi-kubernetes.yaml": ("kubernetes", "kubernetes"),
}


def deployment(path: Path) -> tuple[Settings, str | None]:
    setting, podgroup = GANG.get(path.name, ("", None)) if path.parent.name == "gang" else ("", None)
    return Settings(gang_scheduling=setting), podgroup


def test_every_gang_example_is_known() -> None:
    assert {p.name for p in EXAMPLES if p.parent.name == "gang"} == set(GANG)


def load(path: Path) -> dict[str, Any]:
    job = yaml.safe_load(path.read_text())
    job["metadata"].update(namespace="default", uid=JOB_UID, generation=1)
    return job


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_first_sync(path: Path) -> None:
    job = load(path)
    settings, podgroup = deployment(path)
    response = run(sync_request(job, podgroup=podgroup), settings)
    conditions = {c["type"]: c for c in response["status"]["conditions"]}
    assert set(conditions) == {"Created"}, conditions
    workers = job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    kinds = sorted(c["kind"] for c in response["children"])
    gang = (["PodGroup"] if podgroup else []) + (["Workload"] if podgroup == "kubernetes" else [])
    expected = ["ConfigMap", "Secret", "Service", *["Pod"] * workers, *gang]
    # An ordered hostfile is final, and the launcher created, once the workers are bound.
    if job["spec"].get("launcherCreationPolicy", "AtStartup") == "AtStartup" and not asks_topology_order(
        job["metadata"].get("annotations", {})
    ):
        expected.append("Job")
    assert kinds == sorted(expected)
    for child in response["children"]:
        assert schema_errors(child) == []
    hostfile = next(c for c in response["children"] if c["kind"] == "ConfigMap")["data"]["hostfile"]
    assert len([line for line in hostfile.splitlines() if not line.startswith("#")]) == workers


def bound(pod: dict[str, Any]) -> dict[str, Any]:
    """A Pod the scheduler bound to a node of its own."""
    return {**pod, "spec": {**pod["spec"], "nodeName": f"node-of-{pod['metadata']['name']}"}}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_reaches_running(path: Path) -> None:
    """Workers Ready and Running, launcher Pod running: the job reports Running=True."""
    job = load(path)
    settings, podgroup = deployment(path)
    first = run(sync_request(job, podgroup=podgroup), settings)
    children = [
        with_pod_status(bound(observe(c)), "Running", ready=True) if c["kind"] == "Pod" else observe(c)
        for c in first["children"]
    ]
    job["status"] = first["status"]
    second = run(sync_request(job, children, podgroup=podgroup), settings)
    # An ordered job: the final hostfile is stored, then the launcher.
    if asks_topology_order(job["metadata"].get("annotations", {})):
        config = next(c for c in second["children"] if c["kind"] == "ConfigMap")
        children = [observe(config) if c["kind"] == "ConfigMap" else c for c in children]
        job["status"] = second["status"]
        second = run(sync_request(job, children, podgroup=podgroup), settings)
    launcher = next(c for c in second["children"] if c["kind"] == "Job")
    children.append(with_job_status(observe(launcher), active=1, ready=1))
    launcher_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job['metadata']['name']}-launcher-abcde",
            "namespace": "default",
            "labels": {
                "training.kubeflow.org/job-name": job["metadata"]["name"],
                "training.kubeflow.org/job-role": "launcher",
            },
        },
        "status": {"phase": "Running"},
    }
    job["status"] = second["status"]
    third = run(sync_request(job, children, [launcher_pod], podgroup=podgroup), settings)
    running = next(c for c in third["status"]["conditions"] if c["type"] == "Running")
    assert running["status"] == "True"
    workers = job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    assert third["status"]["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": workers}}
