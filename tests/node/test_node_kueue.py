"""Kueue itself (its controller manager and webhooks, built from its Go module: kueue.py) queues MPIJobs that
the hook runs, on the real node: admit, hold, preempt and resume, flavors, the readiness timeout, and a
missing queue. Each test says what it proved in its ``e2e_summary``.

Every job here asks 250m CPU and 256Mi per Pod (three Pods: 750m, 768Mi); the ClusterQueue's quota fits one
such job at a time unless a test says otherwise. Kueue only queues jobs labelled with a queue, so the rest of
the suite is untouched, and it is removed once this module is done.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from app.api.hostfile_order_annotations import LABELS_ANNOTATION, ORDER_ANNOTATION
from app.children.hostfile_order_lines import FINAL
from app.cli.doctor.queueing import QUEUE_LABEL
from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import doctor, gang, kubeletless, kueue, neighbours, quickstart, runs, workloads
from tests.node.conftest import RealNode
from tests.node.images import ROOT
from tests.node.node import NODE_NAME

CPU_MILLICORES = 250  # per Pod: a job of three asks 750m
ONE_JOB = {"cpu": "750m", "memory": "768Mi"}  # a ClusterQueue's quota: one job at a time
FLAVOR = "default-flavor"
QUEUE = "user-queue"


@pytest.fixture(scope="module")
def kueue_node(real_node: RealNode) -> Iterator[RealNode]:
    """Kueue installed from its own manifests for this module's tests, removed after them. On a given
    cluster (MPI_HOOK_NODE_KUBECONFIG), a Kueue installed there with ``kueue.CONFIGURATION`` is used."""
    cluster = real_node.cluster
    if cluster is None:
        if real_node.kube.get("deployments", kueue.NAMESPACE, kueue.DEPLOYMENT) is None:
            pytest.skip("no Kueue on the given cluster (install it with kueue.CONFIGURATION)")
        yield real_node
        return
    try:
        built = cluster.builds["kueue"].result()
    except RuntimeError as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"Kueue could not be built here: {err}")
    cluster.add_image(kueue.recipe(built))
    objects = kueue.manifests(built)
    began = time.monotonic()
    kueue.install(real_node.kube, objects)
    cluster.timings[f"Kueue {built.version} installed"] = time.monotonic() - began
    try:
        yield real_node
    finally:
        neighbours.uninstall(real_node.kube, objects)


def _queues(
    ns: str, flavor: dict[str, Any] | None = None, quota: dict[str, str] = ONE_JOB, **queue: Any
) -> list[dict[str, Any]]:
    """A flavor (with ``flavor`` as its spec), a ClusterQueue named after the namespace with ``quota`` (and
    ``queue`` in its spec), and the LocalQueue ``QUEUE``."""
    return [
        kueue.resource_flavor(f"{ns}-{FLAVOR}", **(flavor or {})),
        kueue.cluster_queue(ns, f"{ns}-{FLAVOR}", quota["cpu"], quota["memory"], **queue),
        kueue.local_queue(ns, QUEUE, ns),
    ]


def _queued(name: str, queue: str = QUEUE, **labels: str) -> dict[str, Any]:
    """examples/pi as ``name``, each Pod asking CPU_MILLICORES and 256Mi, labelled for ``queue``."""
    job = gang.pi(name, CPU_MILLICORES)
    job["metadata"]["labels"] = {QUEUE_LABEL: queue, **labels}
    return job


def _create(kube: Kube, ns: str, job: dict[str, Any]) -> dict[str, Any]:
    """``kubectl create``: the MPIJob as the apiserver stored it, after Kueue's webhook."""
    done = kube.kubectl("-n", ns, "create", "-o", "yaml", "-f", "-", stdin=yaml.safe_dump(job))
    stored: dict[str, Any] = yaml.safe_load(done.stdout)
    return stored


def _workload(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    job = jobs.get(kube, ns, name)
    (found,) = wait_for(lambda: kueue.workloads(kube, ns, job) or None, 60, f"the Workload of {name}")
    return found


def _pods_by_role(kube: Kube, ns: str, name: str) -> dict[str, list[dict[str, Any]]]:
    return {"launcher": jobs.launcher_pods(kube, ns, name), "worker": jobs.worker_pods(kube, ns, name)}


def _requests(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c.get("resources", {}).get("requests", {}) for c in spec.get("containers", [])]


def _pod_sets_match_pods(kube: Kube, ns: str, name: str) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """Each of the Workload's pod sets against the Pods the hook made for that role: the same count, and
    each Pod's containers asking what the pod set's template asks. Returns role -> (count, requests)."""
    workload = _workload(kube, ns, name)
    pod_sets = {p["name"]: p for p in workload["spec"]["podSets"]}
    assert set(pod_sets) == {"launcher", "worker"}, pod_sets
    pods = wait_for(
        lambda: (found := _pods_by_role(kube, ns, name))["worker"] and found["launcher"] and found,
        runs.RUN_SECONDS,
        f"{name}'s launcher and workers",
    )
    seen = {}
    for role, pod_set in pod_sets.items():
        wanted = _requests(pod_set["template"]["spec"])
        assert len(pods[role]) == pod_set["count"], (
            role,
            pod_set["count"],
            [p["metadata"]["name"] for p in pods[role]],
        )
        for pod in pods[role]:
            assert _requests(pod["spec"]) == wanted, (role, pod["metadata"]["name"], wanted)
        seen[role] = (pod_set["count"], wanted)
    return seen


def test_kueue_admits_a_queued_job_whose_workload_matches_the_pods_the_hook_makes(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Admit: Kueue's webhook suspends the job at creation; its Workload's pod sets are the Pods the hook then
    creates (also with ``runLauncherAsWorker`` and with two slots per worker); each job Succeeds and its
    Workload is Finished."""
    kube = kueue_node.kube
    variants = {
        "pi": {},
        "as-worker": {"runLauncherAsWorker": True},
        "two-slots": {"slotsPerWorker": 2},
    }
    summary = []
    with neighbours.applied(kube, _queues(ns)):
        for name, spec in variants.items():
            job = _queued(name)
            job["spec"].update(spec)
            stored = _create(kube, ns, job)
            assert stored["spec"]["runPolicy"].get("suspend") is True, stored["spec"]["runPolicy"]
            matched = _pod_sets_match_pods(kube, ns, name)
            runs.succeeded(kube, ns, name)
            finished = wait_for(
                lambda n=name: kueue.condition(_workload(kube, ns, n), "Finished").get("status") == "True",
                60,
                f"{name}'s Workload Finished",
            )
            assert finished
            summary.append(f"{name}: " + ", ".join(f"{r} x{c}" for r, (c, _) in matched.items()))
    record_property(
        "e2e_summary",
        "Kueue admit: created suspended by Kueue's webhook; Workload pod sets = the hook's Pods ("
        + "; ".join(summary)
        + f", each asking {CPU_MILLICORES}m); all Succeeded, Workloads Finished",
    )


def test_kueue_holds_the_second_of_two_jobs_that_fit_one_at_a_time(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Hold: two jobs created together; the second has no Pod at all until the first Succeeded, then runs."""
    kube = kueue_node.kube
    with neighbours.applied(kube, _queues(ns)):
        for name in ("first", "second"):
            _create(kube, ns, _queued(name))
            time.sleep(1)  # Kueue admits in creation order: "first" is first
        ended: dict[str, float] = {}

        def both_succeeded(_: dict[str, int]) -> bool:
            for name in ("first", "second"):
                if name not in ended and _succeeded(kube, ns, name):
                    ended[name] = time.monotonic() - watch.began
            return len(ended) == 2

        watch = workloads.Watch(lambda: {n: gang.job_pods(kube, ns, n) for n in ("first", "second")})
        watch.until(both_succeeded, 2 * runs.RUN_SECONDS, "both jobs Succeeded")
    # Kueue frees the quota when the job Succeeded, not when its Pods are gone: the first's workers may
    # still be terminating (cleanPodPolicy Running) when the second's start.
    second_started, leftover = next((t, c["first"]) for t, c in watch.samples if c["second"])
    assert second_started >= ended["first"] - watch.period, (ended, watch.samples)
    record_property(
        "e2e_summary",
        f"Kueue hold: first Succeeded at {ended['first']:.1f} s; second's first Pod at "
        f"{second_started:.1f} s (with {leftover} of the first's Pods still terminating), Succeeded at "
        f"{ended['second']:.1f} s; {len(watch.samples)} samples, no Pod of the second before",
    )


def _succeeded(kube: Kube, ns: str, name: str) -> bool:
    return jobs.conditions(jobs.get(kube, ns, name)).get("Succeeded", {}).get("status") == "True"


FAILURE_POLICY = {
    "maxRestarts": 1,
    "rules": [{"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]}],
}
OURS = {ORDER_ANNOTATION: "topology"}
USERS = {"example.com/team": "physics"}


def _as_written(job: dict[str, Any]) -> dict[str, Any]:
    """What a user wrote and must get back: spec (without ``runPolicy.suspend``, Kueue's to write), labels
    and annotations."""
    spec = copy.deepcopy(job["spec"])
    spec["runPolicy"].pop("suspend", None)
    metadata = job["metadata"]
    return {"spec": spec, "labels": metadata.get("labels"), "annotations": metadata.get("annotations")}


def _differences(before: Any, after: Any, path: str = "") -> list[str]:
    """Every path where ``after`` differs from ``before`` (a dropped, added or changed field)."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after)):
            if key not in after:
                found.append(f"{path}.{key} dropped")
            elif key not in before:
                found.append(f"{path}.{key} added")
            else:
                found += _differences(before[key], after[key], f"{path}.{key}")
        return found
    return [] if before == after else [f"{path} changed"]


def _event_reasons(kube: Kube, ns: str, name: str) -> list[tuple[str, str, str]]:
    """(source, reason, message) of every Event about the MPIJob, oldest first."""
    events = [e for e in kube.list("events", ns) if e["involvedObject"].get("name") == name]
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return [
        (
            (e.get("source") or {}).get("component") or e.get("reportingComponent") or "",
            e["reason"],
            e["message"],
        )
        for e in events
    ]


def _uids(kube: Kube, ns: str, name: str) -> set[str]:
    """The UIDs of the job's launcher Job and of its Pods (workers and launcher)."""
    launcher = kube.get("jobs", ns, f"{name}-launcher")
    found = {p["metadata"]["uid"] for p in gang.job_pods(kube, ns, name)}
    return found | ({launcher["metadata"]["uid"]} if launcher else set())


def _no_launcher_nor_workers(kube: Kube, ns: str, name: str) -> bool:
    return (
        kube.get("jobs", ns, f"{name}-launcher") is None
        and not jobs.worker_pods(kube, ns, name)
        and not jobs.launcher_pods(kube, ns, name)
    )


def test_kueue_preempts_a_low_priority_job_and_admits_it_again_with_nothing_lost(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Preempt: a low-priority job runs; a high-priority one arrives; Kueue suspends the low one, the hook
    removes its launcher and workers and says so (condition, Event); the high one Succeeds; the low one is
    admitted again and Succeeds. Its spec, labels and annotations are what the user wrote, before and
    after."""
    kube = kueue_node.kube
    made = [
        *_queues(ns, preemption={"withinClusterQueue": "LowerPriority"}),
        kueue.priority_class(f"{ns}-low", 10),
        kueue.priority_class(f"{ns}-high", 1000),
    ]
    with neighbours.applied(kube, made):
        low = gang.sized(runs.gated("low"), CPU_MILLICORES)
        low["metadata"]["labels"] = {QUEUE_LABEL: QUEUE, kueue.PRIORITY_LABEL: f"{ns}-low", **USERS}
        low["metadata"]["annotations"] = dict(OURS)
        low["spec"]["failurePolicy"] = FAILURE_POLICY
        _create(kube, ns, low)
        runs.running(kube, ns, "low")
        before = _as_written(jobs.get(kube, ns, "low"))
        first_run = _uids(kube, ns, "low")
        began = time.monotonic()
        _create(kube, ns, _queued("high", **{kueue.PRIORITY_LABEL: f"{ns}-high"}))
        suspended = jobs.wait_condition(kube, ns, "low", "Suspended", timeout=runs.RUN_SECONDS)
        # By UID: Kueue may admit low again before its first launcher Pod has finished terminating.
        wait_for(lambda: not first_run & _uids(kube, ns, "low"), 120, "low's first launcher and workers gone")
        emptied = time.monotonic() - began
        said = jobs.conditions(suspended)["Suspended"]
        runs.succeeded(kube, ns, "high")
        high_done = time.monotonic() - began
        runs.running(kube, ns, "low")
        runs.open_gate(kube, ns, "low")
        runs.succeeded(kube, ns, "low")
        after = _as_written(jobs.get(kube, ns, "low"))
        events = _event_reasons(kube, ns, "low")
    lost = _differences(before, after)
    assert lost == [], lost  # Kueue v0.17 keeps every field, ours included (docs/compatibility.md)
    assert after["spec"]["failurePolicy"] == FAILURE_POLICY
    preempted = [e for e in events if "kueue" in e[0] and e[1] == "Stopped" and "Preempted" in e[2]]
    assert preempted, events
    hooks = [e for e in events if e[1] == said["reason"]]
    assert hooks, (said, events)
    record_property(
        "e2e_summary",
        f"Kueue preempt: low's launcher and workers gone {emptied:.1f} s after high arrived; Suspended="
        f"{said['status']} {said['reason']}: {said['message']}; Kueue's Event: {preempted[0][2]}; high "
        f"Succeeded at {high_done:.1f} s; low admitted again and Succeeded; spec, labels and annotations "
        f"unchanged ({len(before['spec'])} spec fields, failurePolicy included)",
    )


POOL_LABEL = "example.com/pool"
SPOT = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}


def test_kueue_flavor_node_labels_and_tolerations_reach_the_launcher_and_the_workers(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Flavors: a ResourceFlavor with node labels and a toleration; Kueue writes them into both templates
    while the job is suspended, and the launcher and every worker the hook creates carry them."""
    kube = kueue_node.kube
    pool = f"kueue-{ns}"[:63]
    kube.patch("nodes", None, NODE_NAME, {"metadata": {"labels": {POOL_LABEL: pool}}})
    try:
        with neighbours.applied(kube, _queues(ns, {"nodeLabels": {POOL_LABEL: pool}, "tolerations": [SPOT]})):
            _create(kube, ns, _queued("pi"))
            pods = wait_for(
                lambda: (p := gang.job_pods(kube, ns, "pi")) and len(p) == 3 and p, runs.RUN_SECONDS, "3 Pods"
            )
            runs.succeeded(kube, ns, "pi")
    finally:
        kube.patch("nodes", None, NODE_NAME, {"metadata": {"labels": {POOL_LABEL: None}}})
    for pod in pods:
        spec = pod["spec"]
        assert spec.get("nodeSelector", {}).get(POOL_LABEL) == pool, (pod["metadata"]["name"], spec)
        assert SPOT in spec.get("tolerations", []), (pod["metadata"]["name"], spec.get("tolerations"))
    record_property(
        "e2e_summary",
        f"Kueue flavors: launcher and 2 workers carry nodeSelector {POOL_LABEL}={pool} and toleration "
        f"{SPOT['key']}; Succeeded",
    )


MISSING_IMAGE = "mpioperator/mpi-pi:does-not-exist"


def test_kueue_evicts_a_job_whose_workers_never_get_ready_and_runs_it_once_fixed(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """waitForPodsReady: workers whose image does not exist never get ready (the launcher waits for them);
    Kueue evicts the job after its timeout; the hook removes every Pod; Kueue's Event on the MPIJob and
    ``mpijob doctor`` say why; with the image fixed it Succeeds."""
    kube = kueue_node.kube
    with neighbours.applied(kube, _queues(ns)):
        job = _queued("pi")
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
        job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = MISSING_IMAGE
        _create(kube, ns, job)
        began = time.monotonic()
        wait_for(lambda: len(jobs.worker_pods(kube, ns, "pi")) == 2, runs.RUN_SECONDS, "2 workers")
        evicted = wait_for(
            lambda: (
                kueue.condition(_workload(kube, ns, "pi"), "Evicted").get("status") == "True"
                and _workload(kube, ns, "pi")
            ),
            180,
            "the Workload Evicted",
        )
        took = time.monotonic() - began
        verdict = kueue.condition(evicted, "Evicted")
        assert verdict["reason"] == "PodsReadyTimeout", verdict
        wait_for(lambda: _no_launcher_nor_workers(kube, ns, "pi"), 120, "no Pod left")
        said = doctor.doctor(kube.kubeconfig, ns, "pi", "-o", "json")
        stopped = [e for e in _event_reasons(kube, ns, "pi") if "kueue" in e[0] and e[1] == "Stopped"]
        fixed = {"spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
            {**job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0],
             "image": runs.launcher(job)["image"]}]}}}}}}  # fmt: skip
        kube.patch("mpijobs", ns, "pi", fixed)
        runs.succeeded(kube, ns, "pi", timeout=2 * runs.RUN_SECONDS)
    assert said.check == "queued-by-kueue", said
    assert verdict["message"] in said.json["problem"]["summary"], (verdict, said.json)
    assert any(verdict["message"] in e[2] for e in stopped), stopped
    record_property(
        "e2e_summary",
        f"Kueue waitForPodsReady ({kueue.PODS_READY_TIMEOUT}): evicted {took:.0f} s after creation, "
        f"{verdict['reason']}: {verdict['message']}; no Pod left; mpijob doctor: "
        f"{said.json['problem']['summary']}; image fixed: Succeeded",
    )


def test_a_job_for_a_missing_or_stopped_queue_stays_suspended_and_the_doctor_quotes_kueue(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Queue missing or stopped: no launcher and no worker (only the Service, ConfigMap and Secret a
    suspended job keeps), and ``mpijob doctor`` says it waits for Kueue, quoting Kueue's reason."""
    kube = kueue_node.kube
    stopped_queue = {
        **kueue.local_queue(ns, "stopped", ns),
        "spec": {"clusterQueue": ns, "stopPolicy": "Hold"},
    }
    quotes = {}
    with neighbours.applied(kube, [*_queues(ns), stopped_queue]):
        for name, queue in (("orphan", "nowhere"), ("held", "stopped")):
            _create(kube, ns, _queued(name, queue))
        for name, expected in (
            ("orphan", "LocalQueue nowhere doesn't exist"),
            ("held", "LocalQueue stopped is inactive"),
        ):
            said = doctor.wait_for_problem(kube.kubeconfig, ns, name, "queued-by-kueue", shows=expected)
            quotes[name] = said.json["problem"]["summary"]
            assert f"waiting for Kueue: {expected}" in quotes[name], quotes
        time.sleep(5)  # the hook has had every chance to start something
        for name in ("orphan", "held"):
            assert _no_launcher_nor_workers(kube, ns, name)
            assert jobs.get(kube, ns, name)["spec"]["runPolicy"]["suspend"] is True
    record_property(
        "e2e_summary", "Kueue missing/stopped queue: no Pod; mpijob doctor: " + " | ".join(quotes.values())
    )


GUIDE = ROOT / "docs" / "user-guide.md"
GUIDE_SECTION = "## Running under Kueue"


def test_the_user_guides_kueue_commands_run_as_written(
    kueue_node: RealNode, record_property: pytest.RecordProperty
) -> None:
    """The user guide's "Running under Kueue" block, command by command as pasted: the queues, the queued
    pi, its Workload listed, the job Succeeded, then removed."""
    (commands,) = quickstart.doc_blocks(GUIDE, GUIDE_SECTION)
    runner = kueue_node.runner()
    began = time.monotonic()
    try:
        said = {command: runner.run(command) for command in commands}
    finally:
        runner.run("kubectl delete --ignore-not-found -f docs/examples/pi-kueue.yaml")
        runner.run("kubectl delete --ignore-not-found -f docs/examples/kueue-queues.yaml")
    (listed,) = [out for command, out in said.items() if command == "kubectl get workloads.kueue.x-k8s.io"]
    assert "pi-queued" in listed, listed
    record_property(
        "e2e_summary",
        f"Kueue user guide: {len(commands)} commands as written, pi-queued Succeeded in "
        f"{time.monotonic() - began:.0f} s",
    )


TAS_RACK = "example.com/rack"
HOSTNAME = "kubernetes.io/hostname"
TAS_WORKERS = 4
TAS_QUOTA = {"cpu": "2", "memory": "2Gi"}  # the launcher and four workers
# Kubelet-less nodes (kubeletless.py): rack r1 holds one 250m Pod per node (two), rack r2 two per node (four):
# only r2 holds the four workers, on two nodes, and the launcher goes to r1.
_RACKS = (("d", "r1", "300m"), ("c", "r1", "300m"), ("b", "r2", "500m"), ("a", "r2", "500m"))
TAS_NODES = {f"kueue-tas-{name}": ({TAS_RACK: rack}, cpu) for name, rack, cpu in _RACKS}


def _tas_job(name: str) -> dict[str, Any]:
    """Four workers that must share one rack (Kueue's required topology), the hostfile in topology order by
    rack, every Pod tolerating the kubelet-less nodes' taint (nothing runs there: placement only)."""
    job = _queued(name)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = TAS_WORKERS
    job["metadata"]["annotations"] = {ORDER_ANNOTATION: "topology", LABELS_ANNOTATION: TAS_RACK}
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    worker.setdefault("metadata", {})["annotations"] = {kueue.REQUIRED_TOPOLOGY: TAS_RACK}
    for spec in gang.pod_specs(job):
        spec["tolerations"] = [kubeletless.TOLERATION]
    return job


def test_kueue_topology_aware_scheduling_puts_a_job_in_one_rack_and_the_hostfile_follows(
    kueue_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Topology: Kueue's TAS, on kubelet-less Nodes in two racks, places a job that asks for one rack where
    all four workers fit (r2), and with ``hostfile-order: topology`` the hostfile lists the workers by the
    rack and node Kueue chose for each."""
    kube = kueue_node.kube
    pool = {"example.com/kueue-tas": ns[:63]}
    topology = {
        "apiVersion": kueue.API,
        "kind": "Topology",
        "metadata": {"name": ns},
        "spec": {"levels": [{"nodeLabel": TAS_RACK}, {"nodeLabel": HOSTNAME}]},
    }
    flavor = {"nodeLabels": pool, "topologyName": ns, "tolerations": [kubeletless.TOLERATION]}
    wanted = {n: ({**labels, **pool}, cpu) for n, (labels, cpu) in TAS_NODES.items()}
    with (
        kubeletless.nodes(kube, wanted),
        neighbours.applied(kube, [topology, *_queues(ns, flavor, TAS_QUOTA)]),
    ):
        _create(kube, ns, _tas_job("racked"))
        workers = wait_for(
            lambda: (
                (w := jobs.worker_pods(kube, ns, "racked"))
                and len(w) == TAS_WORKERS
                and all(p["spec"].get("nodeName") for p in w)
                and w
            ),
            runs.RUN_SECONDS,
            "the workers bound",
        )
        placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in workers}
        hostfile = wait_for(
            lambda: FINAL in (h := jobs.config(kube, ns, "racked")["hostfile"]) and h,
            60,
            "the hostfile's final order",
        )
    racks = {TAS_NODES[node][0][TAS_RACK] for node in placed.values()}
    assert racks == {"r2"}, placed
    order = [line.split()[0].split(".")[0] for line in hostfile.splitlines() if line and line[0] != "#"]
    wanted_order = sorted(placed, key=lambda w: (placed[w], int(w.rsplit("-", 1)[1])))
    assert order == wanted_order, (hostfile, placed)
    record_property(
        "e2e_summary",
        f"Kueue TAS: 4 workers required in one rack, placed {placed} (rack r2 only); hostfile {order} (Kueue "
        "fills the domains in name order by worker index: its order and the topology order agree)",
    )
