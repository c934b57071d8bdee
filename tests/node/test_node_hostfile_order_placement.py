"""An ordered hostfile (``mpi-operator-hook/hostfile-order: topology``) on the real control plane: sorted by
the nodes the real kube-scheduler bound the workers to, written before the launcher exists, never
rewritten; and what the order adds to a job's start on the real node.

The placement test binds a 6-worker job to 8 Nodes without a kubelet (kubeletless.py), two per rack, racks
``r1`` and ``r2`` in blocks ``b1`` and ``b2``, each with room for one worker; the node names run against the
label order. Metacontroller runs it under deploy/metacontroller-rbac's narrowed ClusterRole (the suite's
install otherwise keeps Metacontroller's own wildcard role), so the customize hook's Nodes are read with the
rules we ship.

The timing test runs examples/pi on the real node with and without the order (by ``kubernetes.io/hostname``,
which the node carries: one domain, so the order is upstream's), each with ``runLauncherAsWorker`` too, and
once more with workers placed only after the launcher's wait began: that launcher mounted a pending hostfile
and waits for the kubelet to refresh it. ``MPI_HOOK_NODE_ORDER_REPEATS`` runs each variant but the last that
many times (default 1).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import gang, kubeletless, repeats, runs, watches, workloads
from tests.node.conftest import RealNode
from tests.node.hookpods import hook_metric, hook_pods
from tests.node.metacontroller import rollout
from tests.node.node import NODE_NAME
from tests.support.hostfiles import slot_hosts

BLOCK = "example.com/block"
RACK = "example.com/rack"
ORDER = "mpi-operator-hook/hostfile-order"
ORDER_LABELS = "mpi-operator-hook/hostfile-order-labels"
PENDING = "# mpi-operator-hook: hostfile order pending"
FINAL = "# mpi-operator-hook: hostfile ordered by node labels"
WORKERS = 6
WORKER_MILLICORES = 600  # one per 1-CPU node
BIND_SECONDS = 60.0
HOOK = ("mpi-operator", "deployment/mpi-operator-hook")
RBAC = "deploy/metacontroller-rbac/"
WILDCARD_BINDING = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/metacontroller"


def _topology() -> dict[str, tuple[dict[str, str], str]]:
    """8 nodes of 1 CPU, 2 per rack: b1/r1 holds order-n8 and order-n7, ..., b2/r2 order-n2 and order-n1.
    Sorted by labels the names run backwards, so neither name nor creation order is the expected order."""
    found: dict[str, tuple[dict[str, str], str]] = {}
    number = 8
    for block in ("b1", "b2"):
        for rack in ("r1", "r2"):
            for _ in range(2):
                found[f"order-n{number}"] = ({BLOCK: block, RACK: rack}, "1")
                number -= 1
    return found


NODES = _topology()
ON_KUBELETLESS = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": BLOCK, "operator": "Exists"}]}]
        }
    }
}


def _placed_job(name: str) -> dict[str, Any]:
    """examples/pi with 6 workers of 600m, ordered by block then rack, its Pods only on the kubelet-less
    nodes (the launcher too: it never runs)."""
    job = gang.pi(name, WORKER_MILLICORES, **{ORDER: "topology", ORDER_LABELS: f"{BLOCK}, {RACK}"})
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = WORKERS
    runs.launcher(job)["args"] = ["-n", str(WORKERS), "/home/mpiuser/pi"]
    for spec in gang.pod_specs(job):
        spec["tolerations"] = [kubeletless.TOLERATION]
        spec["affinity"] = ON_KUBELETLESS
    return job


@contextmanager
def _narrowed_metacontroller_rbac(node: RealNode) -> Iterator[None]:
    """deploy/metacontroller-rbac/ as its kustomization says (apply it, delete Metacontroller's wildcard
    binding); afterwards the wildcard binding back and the narrowed objects gone, as the quick start left
    them."""
    kube = node.kube
    saved = kube.request("GET", WILDCARD_BINDING)
    runner = node.runner()
    runner.run(f"kubectl apply -k {RBAC}")
    runner.run("kubectl delete clusterrolebinding metacontroller")
    try:
        yield
    finally:
        binding = {
            "apiVersion": saved["apiVersion"],
            "kind": saved["kind"],
            "metadata": {"name": "metacontroller", "labels": saved["metadata"].get("labels") or {}},
            "roleRef": saved["roleRef"],
            "subjects": saved["subjects"],
        }
        kube.request("POST", WILDCARD_BINDING.rsplit("/", 1)[0], binding)
        runner.run(f"kubectl delete -k {RBAC}")


def _runs_of(values: list[Any]) -> list[Any]:
    """``values`` with consecutive repeats collapsed: a value seen twice here was not contiguous."""
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


def _expected_order(
    workers: list[dict[str, Any]], labels: dict[str, dict[str, str]]
) -> list[tuple[str, str]]:
    """(host, node) sorted by the node's block, rack, then node name, then worker index."""

    def key(pod: dict[str, Any]) -> tuple[str, str, str, int]:
        node = pod["spec"]["nodeName"]
        index = int(pod["metadata"]["name"].rsplit("-", 1)[1])
        return labels[node][BLOCK], labels[node][RACK], node, index

    return [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in sorted(workers, key=key)]


def _poke(kube: Kube, ns: str, name: str, value: str) -> None:
    """An annotation changed on the MPIJob: Metacontroller syncs it."""
    kube.patch("mpijobs", ns, name, {"metadata": {"annotations": {"test.example.com/poke": value}}})


def test_a_kubeletless_topology_orders_the_hostfile_once_and_for_good(
    real_node: RealNode, ns: str, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    kube = real_node.kube
    name = "placed"
    with (
        _narrowed_metacontroller_rbac(real_node),
        kubeletless.nodes(kube, NODES) as names,
        watches.watching(kube, ns, "configmaps", tmp_path) as configmaps,
        watches.watching(kube, ns, "jobs", tmp_path) as launcher_jobs,
    ):
        began = time.monotonic()
        runs.apply(kube, ns, _placed_job(name))
        wait_for(lambda: len(jobs.worker_pods(kube, ns, name)) == WORKERS, BIND_SECONDS, "the workers")
        created = time.monotonic() - began
        workers = wait_for(
            lambda: len(w := workloads.bound(jobs.worker_pods(kube, ns, name))) == WORKERS and w,
            BIND_SECONDS,
            lambda: f"{WORKERS} workers bound: {gang.unscheduled_reasons(jobs.worker_pods(kube, ns, name))}",
        )
        bound = time.monotonic() - began
        final = wait_for(
            lambda: (c := jobs.config(kube, ns, name))["hostfile"].startswith(FINAL) and c,
            30,
            lambda: f"the final hostfile; have {jobs.config(kube, ns, name)}",
        )
        launcher = wait_for(
            lambda: workloads.bound(jobs.launcher_pods(kube, ns, name)),
            BIND_SECONDS,
            "the launcher Pod bound",
        )[0]
        launched = time.monotonic() - began

        labels = {n: (kube.get("nodes", None, n) or {})["metadata"]["labels"] for n in names}
        order = _expected_order(workers, labels)
        assert {node for _, node in order} <= names and launcher["spec"]["nodeName"] in names
        assert len({node for _, node in order}) == WORKERS, order  # one worker per node
        header = f"{FINAL} {BLOCK}, {RACK}\n"
        assert final["hostfile"].splitlines()[0] + "\n" == header, final["hostfile"]
        assert slot_hosts(final["hostfile"]) == [host for host, _ in order], (final["hostfile"], order)
        table = f"# line host node {BLOCK} {RACK}\n" + "".join(
            f"{i} {host} {node} {labels[node][BLOCK]} {labels[node][RACK]}\n"
            for i, (host, node) in enumerate(order, 1)
        )
        assert final["hostfile-order"] == table
        # Consecutive lines share the finest domain they can: each block, rack and node in one run.
        blocks = [labels[node][BLOCK] for _, node in order]
        racks = [(labels[node][BLOCK], labels[node][RACK]) for _, node in order]
        for domains in (blocks, racks, [node for _, node in order]):
            assert len(_runs_of(domains)) == len(set(domains)), (domains, order)

        # Written pending, then final; the launcher Job created after the final write.
        versions = configmaps.of(f"{name}-config")
        assert versions[0].kind == "ADDED" and versions[0].obj["data"]["hostfile"].startswith(PENDING)
        finals = [v for v in versions if v.obj["data"]["hostfile"].startswith(FINAL)]
        assert finals, [v.obj["data"]["hostfile"] for v in versions]
        first_final = finals[0]
        job_added = launcher_jobs.of(f"{name}-launcher")[0]
        assert job_added.kind == "ADDED"
        assert first_final.version < job_added.version, (first_final.version, job_added.version)

        # Stable: re-syncs, then a restart of the hook's Pods and a sync by the new ones, rewrite nothing.
        stored = kube.get("configmaps", ns, f"{name}-config")
        assert stored is not None and stored["data"] == final
        for value in ("1", "2"):
            _poke(kube, ns, name, value)
            time.sleep(3)
        before = set(hook_pods(kube))
        rollout(kube, *HOOK, restart=True)
        assert not before & set(hook_pods(kube)), "the hook's Pods were not replaced"
        synced = f'mpi_operator_job_info{{launcher="{name}-launcher",namespace="{ns}"}}'
        pokes = iter(range(3, 1000))

        def synced_by_new_pods() -> bool:
            # Poked again each time: a sync answered by an old Pod still in the Service's endpoints (or one
            # failed meanwhile) leaves nothing to sync afterwards.
            _poke(kube, ns, name, str(next(pokes)))
            time.sleep(2)
            return hook_metric(kube, synced) >= 1

        wait_for(synced_by_new_pods, 120, "a sync of the job by the new hook Pods")
        time.sleep(3)
        after = kube.get("configmaps", ns, f"{name}-config")
        assert after is not None and after["data"] == stored["data"]
        assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
        rewrites = [v.version for v in configmaps.of(f"{name}-config") if v.version > first_final.version]
        assert rewrites == [], rewrites
        # The launcher Job was created once, never replaced.
        assert [e.kind for e in launcher_jobs.of(f"{name}-launcher") if e.kind != "MODIFIED"] == ["ADDED"]
        kube.kubectl("-n", ns, "delete", "mpijob", name, "--wait=false")

    pending = [v.obj["data"]["hostfile"].splitlines()[0] for v in versions if v.version < first_final.version]
    print(f"hostfile versions before the final one: {pending}")
    print(f"hostfile:\n{final['hostfile']}hostfile-order:\n{final['hostfile-order']}")
    record_property(
        "e2e_summary",
        f"ordered hostfile on kubelet-less racks: {WORKERS} workers created in {created:.1f} s, bound in "
        f"{bound:.1f} s, launcher bound {launched:.1f} s after apply; "
        f"order {[f'{h}@{n}' for h, n in order]}; "
        f"{len(pending)} pending versions; unchanged over 3 syncs and a hook restart",
    )


# ---- what the order adds to a job's start, on the real node ----

HOSTNAME = "kubernetes.io/hostname"
REPEATS = int(os.environ.get("MPI_HOOK_NODE_ORDER_REPEATS", "1"))
# name -> (ordered, runLauncherAsWorker)
VARIANTS = {
    "plain": (False, False),
    "ordered": (True, False),
    "law": (False, True),
    "ordered-law": (True, True),
}


@dataclass(frozen=True)
class Started:
    variant: str
    marks: dict[str, float]  # seconds from apply to: job (the launcher Job), final (the final hostfile
    # stored), mpirun (the launcher's main container started, after wait-for-workers), succeeded
    waited: str  # what wait-for-workers said
    hostfile: str  # the ConfigMap's when mpirun started
    finished_header: str  # its first line once the job is done and its workers gone


def _pi(name: str, ordered: bool, launcher_as_worker: bool) -> dict[str, Any]:
    job = runs.example("pi.yaml", name)
    ranks = 3 if launcher_as_worker else 2
    # No mapping flag: for an ordered job the hook makes the sequential mapper Open MPI's default.
    runs.launcher(job)["args"] = ["-n", str(ranks), "/home/mpiuser/pi"]
    if launcher_as_worker:
        job["spec"]["runLauncherAsWorker"] = True
    if ordered:
        job["metadata"]["annotations"] = {ORDER: "topology", ORDER_LABELS: HOSTNAME}
    return job


def _container_started(pod: dict[str, Any], name: str, kind: str = "containerStatuses") -> bool:
    statuses = pod.get("status", {}).get(kind) or []
    return any(s["name"] == name and {"running", "terminated"} & set(s["state"]) for s in statuses)


def _timed(
    kube: Kube, ns: str, variant: str, job: dict[str, Any], release: Callable[[], None] | None = None
) -> Started:
    """Apply ``job`` and poll it to Succeeded, marking when each step was first seen; ``release`` is
    called once the launcher's ``wait-for-workers`` runs."""
    name = job["metadata"]["name"]
    marks: dict[str, float] = {}
    hostfile = ""
    began = time.monotonic()
    runs.apply(kube, ns, job)
    while "succeeded" not in marks:
        now = time.monotonic() - began
        status = jobs.get(kube, ns, name).get("status") or {}
        assert now < runs.RUN_SECONDS, f"{name}: {marks} after {now:.0f} s: {status}"
        launchers = jobs.launcher_pods(kube, ns, name)
        if "job" not in marks and kube.get("jobs", ns, f"{name}-launcher"):
            marks["job"] = now
        if "final" not in marks and (kube.get("configmaps", ns, f"{name}-config") or {}).get("data", {}).get(
            "hostfile", ""
        ).startswith(FINAL):
            marks["final"] = now
        waiting = any(_container_started(p, "wait-for-workers", "initContainerStatuses") for p in launchers)
        if release is not None and waiting and "released" not in marks:
            release()
            marks["released"] = now
        if "mpirun" not in marks and any(_container_started(p, "mpi-launcher") for p in launchers):
            marks["mpirun"] = now
            hostfile = jobs.config(kube, ns, name)["hostfile"]
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        assert conditions.get("Failed") != "True", status
        if conditions.get("Succeeded") == "True":
            marks["succeeded"] = now
        time.sleep(0.25)
    log = kube.kubectl("-n", ns, "logs", f"job/{name}-launcher", "-c", "wait-for-workers").stdout
    waited = " | ".join(line.removeprefix("wait-for-workers: ") for line in log.splitlines())
    wait_for(lambda: not jobs.worker_pods(kube, ns, name), 60, f"the workers of {name} deleted")
    finished = jobs.config(kube, ns, name)["hostfile"].splitlines()[0]
    return Started(variant, marks, waited, hostfile, finished)


def _assert_ranks_follow(kube: Kube, ns: str, name: str, hostfile: str, launcher_as_worker: bool) -> None:
    """The ordered hostfile mpirun started on is final, in upstream's order (one node), and rank i ran on its
    i-th line."""
    assert hostfile.startswith(f"{FINAL} {HOSTNAME}"), hostfile
    hosts = slot_hosts(hostfile)
    expected = ([f"{name}-launcher"] if launcher_as_worker else []) + [f"{name}-worker-{i}" for i in range(2)]
    assert hosts == expected, hostfile
    log = runs.launcher_log(kube, ns, name)
    placed = runs.ranks(log)
    assert [placed.get(rank) for rank in range(len(hosts))] == hosts, log
    assert f"Workers: {len(hosts)}" in log, log


def test_what_the_order_adds_to_the_pi_jobs_start(
    real_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    kube = real_node.kube
    workloads.settled_free_cpu(kube, gang.INSTALLED)  # earlier tests' Pods gone: nothing waits for CPU
    done: list[Started] = []
    for attempt in range(1, REPEATS + 1):
        for variant, (ordered, launcher_as_worker) in VARIANTS.items():
            name = f"{variant}-{attempt}"
            done.append(_timed(kube, ns, variant, _pi(name, ordered, launcher_as_worker)))
            if ordered:
                _assert_ranks_follow(kube, ns, name, done[-1].hostfile, launcher_as_worker)
                # Done, its workers gone: the hostfile it ran on stays.
                assert done[-1].finished_header == done[-1].hostfile.splitlines()[0], done[-1]
                if launcher_as_worker:
                    pod = jobs.launcher_pods(kube, ns, name)[0]["metadata"]["name"]
                    assert f"; launcher Pod {pod} (" in done[-1].waited, done[-1].waited
            else:
                runs.assert_ran_on_hostfile(kube, ns, name, 3 if launcher_as_worker else 2)
            repeats.delete(kube, ns, name)
    done.append(_late_workers(kube, ns))
    lines = [
        f"{s.variant:17} "
        + "  ".join(f"{k} {v:5.1f}" for k, v in s.marks.items())
        + f"\n{'':17} wait-for-workers: {s.waited}\n{'':17} once done: {s.finished_header}"
        for s in done
    ]
    print("seconds from apply\n" + "\n".join(lines))
    record_property(
        "e2e_summary",
        "ordered start, apply -> mpirun / Succeeded: "
        + ", ".join(f"{s.variant} {s.marks['mpirun']:.1f}/{s.marks['succeeded']:.1f} s" for s in done),
    )


LATE = "mpi-hook-test/order-late"


def _late_workers(kube: Kube, ns: str) -> Started:
    """Ordered with ``runLauncherAsWorker``, the workers placeable only once the node gets a label, which it
    gets once the launcher's wait runs: the launcher mounts a pending hostfile, and ``mpirun`` starts only
    after the kubelet refreshed it with the final one (this node's kubelet: ``syncFrequency: 10s``)."""
    name = "late"
    job = _pi(name, True, True)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {LATE: "true"}
    label = lambda value: kube.patch("nodes", None, NODE_NAME, {"metadata": {"labels": {LATE: value}}})  # noqa: E731
    try:
        started = _timed(kube, ns, "ordered-law-late", job, lambda: label("true"))
    finally:
        label(None)
    marks = started.marks
    assert marks["released"] < marks["final"] < marks["mpirun"], marks
    _assert_ranks_follow(kube, ns, name, started.hostfile, launcher_as_worker=True)
    pod = jobs.launcher_pods(kube, ns, name)[0]["metadata"]["name"]
    assert f"; launcher Pod {pod} (" in started.waited, started.waited
    repeats.delete(kube, ns, name)
    return started
