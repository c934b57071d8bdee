"""Operations in the middle of a job: a rolling restart of the hook, a restart of Metacontroller, a deleted
worker Pod. The job is the gated pi (runs.gated): Running, its launcher waiting to call mpirun."""

from __future__ import annotations

from typing import Any

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import runs
from tests.node.conftest import RealNode
from tests.node.metacontroller import restart_metacontroller, rollout

HOOK = ("mpi-operator", "deployment/mpi-operator-hook")


def _seen(kube: Kube, ns: str) -> dict[str, Any]:
    """What the job can see: its children (by uid), its Pods' restarts, its conditions."""
    pods = {
        p["metadata"]["name"]: [c["restartCount"] for c in p["status"]["containerStatuses"]]
        for p in kube.list("pods", ns)
    }
    conditions = {t: (c["status"], c["reason"]) for t, c in jobs.conditions(jobs.get(kube, ns, "pi")).items()}
    return {"children": jobs.uids(kube, ns), "pods": pods, "conditions": conditions}


def test_hook_rolling_restart_and_metacontroller_restart_change_nothing_the_job_sees(
    real_node: RealNode, ns: str
) -> None:
    kube = real_node.kube
    runs.apply(kube, ns, runs.gated("pi"))
    runs.running(kube, ns, "pi")
    before = _seen(kube, ns)
    pods_before = {p["metadata"]["uid"] for p in kube.list("pods", HOOK[0])}
    rollout(kube, *HOOK, restart=True)
    serving = {
        p["metadata"]["uid"] for p in kube.list("pods", HOOK[0]) if not p["metadata"].get("deletionTimestamp")
    }
    assert serving and not pods_before & serving, "the hook's Pods were not all replaced"
    restart_metacontroller(kube)
    # A child event after the restarts: the new Metacontroller syncs the job through the new hook Pods.
    kube.patch("pods", ns, "pi-worker-0", {"metadata": {"annotations": {"test.example.com/poke": "1"}}})
    runs.running(kube, ns, "pi")
    assert _seen(kube, ns) == before
    runs.open_gate(kube, ns, "pi")
    runs.succeeded(kube, ns, "pi")
    runs.assert_ran_on_hostfile(kube, ns, "pi", 2)


def test_a_deleted_worker_pod_comes_back(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    runs.apply(kube, ns, runs.gated("pi"))
    runs.running(kube, ns, "pi")
    old = kube.get("pods", ns, "pi-worker-1")
    assert old is not None
    kube.kubectl("-n", ns, "delete", "pod", "pi-worker-1")

    def replaced() -> bool:
        pod = kube.get("pods", ns, "pi-worker-1") or {"metadata": {"uid": old["metadata"]["uid"]}}
        ready = any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in pod.get("status", {}).get("conditions", [])
        )
        return pod["metadata"]["uid"] != old["metadata"]["uid"] and ready

    wait_for(replaced, runs.RUN_SECONDS, "a new, Ready pi-worker-1")
    runs.open_gate(kube, ns, "pi")
    runs.succeeded(kube, ns, "pi")
    placed = runs.assert_ran_on_hostfile(kube, ns, "pi", 2)
    assert sorted(placed.values()) == ["pi-worker-0", "pi-worker-1"]
