"""Kubernetes' own gang scheduling (the Workload API, ``scheduling.k8s.io/v1beta1`` on 1.37, ``v1alpha2`` on
1.36: the node's release) with the real kube-scheduler on the real node: a group is bound whole or not at
all, and inside one topology domain.

The harness checks here make the PodGroups and pause Pods by hand: they prove the cluster (gates, the
scheduler, kubelet-less nodes as topology domains) does what the hook's ``kubernetes`` backend relies on.
They are not tests of the hook.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import doctor, gang, kubeletless, runs, workloads
from tests.node.conftest import RealNode
from tests.node.node import NODE_NAME

HOLD_SECONDS = 20.0  # how long an unschedulable group is watched staying wholly unbound
BIND_SECONDS = 60.0  # from creation to every Pod of a group that fits bound (~1-3 s seen)


def _create_pods(kube: Kube, ns: str, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        kube.create("pods", ns, pod)


def _pods(kube: Kube, ns: str, prefix: str) -> list[dict[str, Any]]:
    return [p for p in kube.list("pods", ns) if p["metadata"]["name"].startswith(prefix)]


def _delete_pods(kube: Kube, ns: str, prefix: str) -> None:
    for pod in _pods(kube, ns, prefix):
        kube.delete("pods", ns, pod["metadata"]["name"], grace=0)
    wait_for(lambda: not _pods(kube, ns, prefix), 60, f"Pods {prefix}* gone")


def test_harness_the_scheduler_binds_a_hand_made_gang_whole_or_not_at_all(
    real_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Harness check (PodGroups and Pods made by hand): three Pods that each fit but not all together.
    Without a group the scheduler starts two of them; in a gang of three, none; a gang of two that fits is
    bound whole, and the PodGroup says which."""
    kube = real_node.kube
    free = workloads.settled_free_cpu(kube, gang.INSTALLED)
    each = f"{free // 2}m"  # two fit, three do not
    assert free // 2 * 3 > free >= free // 2 * 2 > 0, free

    workloads.create_pod_group(kube, ns, "three", 3)
    _create_pods(kube, ns, [workloads.pause_pod(f"three-{i}", each, "three") for i in range(3)])
    watch = workloads.Watch(lambda: {"three": _pods(kube, ns, "three-")})
    watch.hold(HOLD_SECONDS)
    assert watch.most("three") == 0, watch.samples
    verdict = workloads.scheduled(kube, ns, "three")
    assert (verdict.get("status"), verdict.get("reason")) == ("False", "Unschedulable"), verdict
    _delete_pods(kube, ns, "three-")

    _create_pods(kube, ns, [workloads.pause_pod(f"loose-{i}", each) for i in range(3)])
    loose = workloads.Watch(lambda: {"loose": _pods(kube, ns, "loose-")})
    loose.until(lambda counts: counts["loose"] >= 2, BIND_SECONDS, "two loose Pods bound")
    loose.hold(5)
    assert loose.most("loose") == 2, loose.samples
    _delete_pods(kube, ns, "loose-")

    workloads.create_pod_group(kube, ns, "two", 2)
    began = time.monotonic()
    _create_pods(kube, ns, [workloads.pause_pod(f"two-{i}", each, "two") for i in range(2)])
    pair = workloads.Watch(lambda: {"two": _pods(kube, ns, "two-")})
    pair.until(lambda counts: counts["two"] == 2, BIND_SECONDS, "the gang of two bound")
    wait_for(lambda: workloads.scheduled(kube, ns, "two").get("status") == "True", 30, "two Scheduled")
    record_property(
        "e2e_summary",
        f"gang harness: {free}m free, Pods of {each}: gang of 3 bound {watch.most('three')} of 3 over "
        f"{HOLD_SECONDS:.0f} s, 3 without a group bound {loose.most('loose')}, gang of 2 bound 2 of 2 in "
        f"{time.monotonic() - began:.1f} s",
    )


RACK = "topology.example.com/rack"
# Kubelet-less nodes: name -> (labels, CPUs). Rack a holds two Pods of 1500m, rack b four.
RACKS = {f"gang-{rack}{i}": ({RACK: rack}, cpu) for rack, cpu in (("a", "2"), ("b", "4")) for i in (1, 2)}


def _rack(node: str) -> str:
    return RACKS[node][0][RACK] if node in RACKS else f"none ({node})"


# Only nodes with a rack (the kubelet-less ones): the real node has none.
IN_A_RACK = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": RACK, "operator": "Exists"}]}]
        }
    }
}


def test_harness_a_hand_made_gang_lands_in_one_rack_of_kubeletless_nodes(
    real_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Harness check: four Nodes without a kubelet in racks ``a`` (2 x 2 CPUs) and ``b`` (2 x 4 CPUs); a gang
    of three Pods of 1500m with the rack as its topology fits only in ``b`` as a whole (``a`` holds two),
    and the scheduler binds all three there."""
    kube = real_node.kube
    with kubeletless.nodes(kube, RACKS):
        workloads.create_pod_group(kube, ns, "racked", 3, topology_key=RACK)
        extra = {"tolerations": [kubeletless.TOLERATION], "affinity": IN_A_RACK}
        _create_pods(
            kube, ns, [workloads.pause_pod(f"racked-{i}", "1500m", "racked", **extra) for i in range(3)]
        )
        watch = workloads.Watch(lambda: {"racked": _pods(kube, ns, "racked-")})
        took = watch.until(lambda counts: counts["racked"] == 3, BIND_SECONDS, "the racked gang bound")
        placed = sorted(p["spec"]["nodeName"] for p in _pods(kube, ns, "racked-"))
        assert {_rack(n) for n in placed} == {"b"}, placed
        assert workloads.scheduled(kube, ns, "racked").get("status") == "True"
    record_property(
        "e2e_summary", f"gang harness: 3 x 1500m with topology {RACK} bound in {took:.1f} s to {placed}"
    )


# ---- the hook's backend: MPI_OPERATOR_GANG_SCHEDULING=kubernetes, by deploy/overlays/kubernetes ----

RUN_SECONDS = 240.0  # two gang jobs that cannot run together, one after the other (~30 s seen)


def test_without_gang_scheduling_a_job_too_big_for_the_node_starts_in_part(
    real_node: RealNode, ns: str, record_property: pytest.RecordProperty
) -> None:
    """The contrast, on the quick start's install (no gang scheduling; this test runs before the module's
    backend fixture switches the hook): three Pods that each fit but not all together; two start."""
    kube = real_node.kube
    assert gang.gang_setting(kube) == ""
    free = workloads.settled_free_cpu(kube, gang.INSTALLED)
    runs.apply(kube, ns, gang.pi("big", free // 2))
    watch = workloads.Watch(lambda: {"big": gang.job_pods(kube, ns, "big")})
    watch.until(lambda counts: counts["big"] >= 2, BIND_SECONDS, "two of the job's Pods bound")
    watch.hold(5)
    assert watch.most("big") == 2, watch.samples
    record_property(
        "e2e_summary", f"no gang: 3 Pods of {free // 2}m on {free}m free, {watch.most('big')} of 3 bound"
    )


@pytest.fixture(scope="module")
def backend(real_node: RealNode) -> Iterator[Kube]:
    """The hook switched to the backend by its overlay for the tests that ask for it, then back to the quick
    start's ``deploy/`` (later tests expect no gang scheduling)."""
    gang.install(real_node, gang.OVERLAY)
    assert gang.gang_setting(real_node.kube) == "kubernetes"
    kube = real_node.kube
    gang.wait_until_declared(kube, lambda ns, name: workloads.get(kube, "podgroups", ns, name))
    try:
        yield real_node.kube
    finally:
        gang.install(real_node, gang.QUICK_START)
        assert gang.gang_setting(real_node.kube) == ""


def _gang_children(kube: Kube, ns: str, name: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    return workloads.get(kube, "workloads", ns, name), workloads.get(kube, "podgroups", ns, name)


def test_a_gang_job_too_big_for_the_node_binds_no_pod_and_says_why(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    kube = backend
    free = workloads.settled_free_cpu(kube, gang.INSTALLED)
    runs.apply(kube, ns, gang.pi("big", free // 2))
    wait_for(lambda: len(gang.job_pods(kube, ns, "big")) == 3, BIND_SECONDS, "the job's three Pods")
    watch = workloads.Watch(lambda: {"big": gang.job_pods(kube, ns, "big")})
    watch.hold(HOLD_SECONDS)
    assert watch.most("big") == 0, watch.samples
    workload, group = _gang_children(kube, ns, "big")
    assert workload is not None and group is not None
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    verdict = workloads.condition(group, workloads.SCHEDULED)
    assert (verdict.get("status"), verdict.get("reason")) == ("False", "Unschedulable"), verdict
    pods = gang.job_pods(kube, ns, "big")
    assert {p["spec"].get("schedulingGroup", {}).get("podGroupName") for p in pods} == {"big"}
    reasons = gang.unscheduled_reasons(pods)
    assert reasons and all(r.startswith("Unschedulable") for r in reasons), reasons
    # The MPIJob says why, with the scheduler's reason, while none of its Pods is bound: the hook read the
    # PodGroup's verdict in the sync it caused (long before the hold ended; the wait is only a margin).
    held = wait_for(lambda: gang.gang_held(kube, ns, "big"), 10, "the MPIJob's GangScheduled=False")
    assert watch.sample()["big"] == 0, watch.samples
    assert (held["status"], held["reason"]) == ("False", verdict.get("reason")), held
    assert held["message"].startswith(f"PodGroup big ({workloads.WORKLOAD_API}) is not scheduled: "), held
    assert str(verdict.get("message", "")).rstrip(" .") in held["message"], (held, verdict)
    conditions = jobs.conditions(jobs.get(kube, ns, "big"))
    assert "Running" not in conditions or conditions["Running"]["status"] == "False", conditions
    assert list(conditions)[-1] == "Created", conditions  # STATE stays the job's
    # The doctor names the held gang before the Pods' own "Insufficient cpu" (true of each, caused by it).
    said = doctor.doctor(kube.kubeconfig, ns, "big", "-o", "json")
    assert said.code == 1 and said.check == "podgroup-cannot-be-met", said
    record_property(
        "e2e_summary",
        f"gang: 3 Pods of {free // 2}m on {free}m free, {watch.most('big')} of 3 bound over "
        f"{HOLD_SECONDS:.0f} s; PodGroup: {verdict.get('message')}; Pods: {sorted(reasons)}; MPIJob: "
        + ", ".join(f"{t}={c['status']} {c.get('reason')}" for t, c in conditions.items())
        + f"; mpijob doctor: {said.json['problem']['summary']}",
    )


def test_two_gang_jobs_that_fit_only_one_at_a_time_run_one_after_the_other(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    seen = gang.one_after_the_other(backend, ns, gang.INSTALLED, RUN_SECONDS)
    first, second = seen.first, seen.second
    record_property(
        "e2e_summary",
        f"gang: two jobs of 3 x {seen.each}m on {seen.free}m free applied at once: {first} whole at "
        f"{seen.whole[first]:.1f} s, {second} at {seen.whole[second]:.1f} s, both Succeeded at"
        f" {seen.took:.1f} s ({seen.checked:.0f} s with the checks); {seen.samples} samples, no partial"
        " start",
    )


ZONE = "topology.example.com/zone"


def test_a_gang_job_runs_in_the_topology_domain_of_its_annotation(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    """The node labelled with a zone: a job whose annotation names that key runs there; one naming a key no
    node has stays wholly unscheduled."""
    kube = backend
    kube.patch("nodes", None, NODE_NAME, {"metadata": {"labels": {ZONE: "z1"}}})
    try:
        runs.apply(kube, ns, gang.pi("zoned", 400, **{gang.TOPOLOGY_ANNOTATION: ZONE}))
        absent = {gang.TOPOLOGY_ANNOTATION: "topology.example.com/none"}
        runs.apply(kube, ns, gang.pi("nowhere", 100, **absent))
        began = time.monotonic()
        runs.succeeded(kube, ns, "zoned")
        took = time.monotonic() - began
        runs.assert_ran_on_hostfile(kube, ns, "zoned", 2)
        _, zoned = _gang_children(kube, ns, "zoned")
        assert zoned is not None and zoned["spec"]["schedulingConstraints"] == {"topology": [{"key": ZONE}]}
        assert workloads.condition(zoned, workloads.SCHEDULED).get("status") == "True", zoned
        wait_for(lambda: len(gang.job_pods(kube, ns, "nowhere")) == 3, BIND_SECONDS, "nowhere's three Pods")
        nowhere = workloads.Watch(lambda: {"nowhere": gang.job_pods(kube, ns, "nowhere")})
        nowhere.hold(max(0.0, HOLD_SECONDS - (time.monotonic() - began)))
        assert nowhere.most("nowhere") == 0, nowhere.samples
        verdict = workloads.scheduled(kube, ns, "nowhere")
        assert (verdict.get("status"), verdict.get("reason")) == ("False", "Unschedulable"), verdict
    finally:
        kube.patch("nodes", None, NODE_NAME, {"metadata": {"labels": {ZONE: None}}})
    record_property(
        "e2e_summary",
        f"gang topology: {ZONE} job Succeeded in {took:.1f} s; a key no node has: 0 of 3 bound over "
        f"{HOLD_SECONDS:.0f} s ({verdict.get('message')})",
    )


def test_a_gang_job_lands_in_one_rack_of_kubeletless_nodes(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Racks ``a`` (2 nodes x 2 CPUs) and ``b`` (2 x 4 CPUs) of Nodes without a kubelet; a job of three Pods
    of 1500m whose annotation names the rack key fits as a whole only in ``b`` (``a`` holds two): all three
    are bound there. They never run (no kubelet): binding is what is asserted."""
    kube = backend
    job = gang.pi("racked", 1500, **{gang.TOPOLOGY_ANNOTATION: RACK})
    for spec in gang.pod_specs(job):
        spec["tolerations"] = [kubeletless.TOLERATION]
        spec["affinity"] = IN_A_RACK
    with kubeletless.nodes(kube, RACKS):
        runs.apply(kube, ns, job)
        watch = workloads.Watch(lambda: {"racked": gang.job_pods(kube, ns, "racked")})
        took = watch.until(lambda counts: counts["racked"] == 3, BIND_SECONDS, "the racked job bound")
        placed = sorted(p["spec"]["nodeName"] for p in gang.job_pods(kube, ns, "racked"))
        assert {_rack(n) for n in placed} == {"b"}, placed
        assert watch.partial_start("racked", 3) == [], watch.samples
        assert workloads.scheduled(kube, ns, "racked").get("status") == "True"
        kube.kubectl("-n", ns, "delete", "mpijob", "racked", "--wait=false")
    record_property("e2e_summary", f"gang racks: 3 x 1500m bound in {took:.1f} s, all in rack b: {placed}")


def test_a_pending_gang_job_suspended_and_resumed_runs_and_its_workload_goes_with_it(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Pending (three Pods that do not fit together), suspended: its Pods go; edited to fit while suspended
    and resumed: it runs to Succeeded through the gang; deleted: its Workload and PodGroup go."""
    kube = backend
    free = workloads.settled_free_cpu(kube, gang.INSTALLED)
    runs.apply(kube, ns, gang.pi("held", free // 2))
    wait_for(lambda: len(gang.job_pods(kube, ns, "held")) == 3, BIND_SECONDS, "the job's three Pods")
    unschedulable = lambda: workloads.scheduled(kube, ns, "held").get("reason") == "Unschedulable"  # noqa: E731
    wait_for(unschedulable, 60, "PodGroup held Unschedulable")
    kube.patch("mpijobs", ns, "held", {"spec": {"runPolicy": {"suspend": True}}})
    jobs.wait_condition(kube, ns, "held", "Suspended")
    wait_for(lambda: not gang.job_pods(kube, ns, "held"), 120, "the suspended job's Pods gone")
    suspended = _gang_children(kube, ns, "held")
    resumed = gang.pi("held", free // 3)
    resumed["spec"]["runPolicy"]["suspend"] = False
    began = time.monotonic()
    runs.apply(kube, ns, resumed)
    runs.succeeded(kube, ns, "held")
    took = time.monotonic() - began
    runs.assert_ran_on_hostfile(kube, ns, "held", 2)
    workload, group = _gang_children(kube, ns, "held")
    assert workload is not None and group is not None
    kube.kubectl("-n", ns, "delete", "mpijob", "held")
    wait_for(lambda: _gang_children(kube, ns, "held") == (None, None), 90, "the Workload and PodGroup gone")
    record_property(
        "e2e_summary",
        f"gang suspend: while suspended Workload {'kept' if suspended[0] else 'gone'}, PodGroup "
        f"{'kept' if suspended[1] else 'gone'}; resumed at {free // 3}m to Succeeded in {took:.1f} s",
    )


def test_the_pi_example_runs_through_the_gang(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    """``examples/pi/pi.yaml`` as it is, on the hook switched with ``deploy/overlays/kubernetes``."""
    kube = backend
    began = time.monotonic()
    kube.kubectl("-n", ns, "apply", "-f", str(runs.EXAMPLES / "pi.yaml"))
    job = runs.succeeded(kube, ns, "pi")
    took = time.monotonic() - began
    runs.assert_ran_on_hostfile(kube, ns, "pi", 2)
    group = workloads.get(kube, "podgroups", ns, "pi")
    verdict = workloads.condition(group, workloads.SCHEDULED)
    assert (verdict.get("status"), verdict.get("reason")) == ("True", "Scheduled"), group
    assert group is not None and group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    workers = jobs.worker_pods(kube, ns, "pi")
    assert [w["spec"]["schedulingGroup"] for w in workers] == [{"podGroupName": "pi"}] * 2
    launcher = kube.get("jobs", ns, "pi-launcher")
    assert launcher is not None
    assert launcher["spec"]["template"]["spec"]["schedulingGroup"] == {"podGroupName": "pi"}
    assert jobs.conditions(job)["Succeeded"]["status"] == "True"
    record_property("e2e_summary", f"gang: examples/pi/pi.yaml apply -> Succeeded in {took:.1f} s")


def test_workers_scaled_up_on_a_running_job_join_the_podgroup_it_has(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    """A running job of one worker scaled to two. The Workload API's PodGroup is immutable: the hook's
    PodGroup of minCount 3 replaces it (Metacontroller's Recreate), but the apiserver keeps the old one,
    marked for deletion, while its Pods run (finalizer ``scheduling.k8s.io/podgroup-protection``); the new
    worker joins that one and is bound (the other backends update minMember first: test_node_gangs.py)."""
    kube = backend
    each = workloads.settled_free_cpu(kube, gang.INSTALLED) // 4
    job = gang.sized(runs.gated("grow"), each)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    runs.apply(kube, ns, job)
    runs.running(kube, ns, "grow")
    samples = gang.scale_up(kube, ns, "grow", lambda: _min_count(kube, ns, "grow"), BIND_SECONDS)
    group = workloads.get(kube, "podgroups", ns, "grow") or {}
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2, group
    kept = wait_for(lambda: _protected(kube, ns, "grow"), 30, "the old PodGroup marked for deletion, kept")
    kube.kubectl("-n", ns, "delete", "mpijob", "grow", "--wait=false")
    record_property(
        "e2e_summary",
        f"gang scaling: workers 1 -> 2 on a running job: the new worker bound at {samples[-1].seconds:.1f} s"
        f" in the PodGroup of minCount 2, which is marked for deletion and kept by {kept}",
    )


def _min_count(kube: Kube, ns: str, name: str) -> int:
    group = workloads.get(kube, "podgroups", ns, name) or {}
    return int(group.get("spec", {}).get("schedulingPolicy", {}).get("gang", {}).get("minCount", 0))


def _protected(kube: Kube, ns: str, name: str) -> str | None:
    """The finalizers that keep the PodGroup ``name`` once it is marked for deletion, or None."""
    metadata = (workloads.get(kube, "podgroups", ns, name) or {}).get("metadata", {})
    finalizers = metadata.get("finalizers") or []
    return ", ".join(finalizers) if metadata.get("deletionTimestamp") and finalizers else None


def _with_priority(job: dict[str, Any], priority_class: str) -> dict[str, Any]:
    """``job`` with ``priority_class`` on its launcher and workers (the PodGroup takes it, as Volcano's)."""
    for spec in gang.pod_specs(job):
        spec["priorityClassName"] = priority_class
    return job


def _preempted(pods: list[dict[str, Any]]) -> set[str]:
    """The Pods the scheduler marked for preemption (DisruptionTarget=True, PreemptionByScheduler)."""
    return {
        p["metadata"]["uid"]
        for p in pods
        for c in p["status"].get("conditions") or []
        if c["type"] == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
    }


def test_a_higher_priority_gang_preempts_a_lower_one_whole_and_the_lower_job_says_why(
    backend: Kube, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Kubernetes 1.37 (v1beta1): the PodGroups carry the jobs' PriorityClass and ``disruptionMode: all``.
    A low-priority gang job runs on the whole node; a high-priority one arrives: the scheduler preempts
    every Pod of the low gang at once (none is left holding CPU), the low MPIJob says so
    (GangScheduled=False PreemptionByScheduler), the high job Succeeds, then the low one runs again and
    Succeeds."""
    if workloads.WORKLOAD_API != "scheduling.k8s.io/v1beta1":
        pytest.skip("workload-aware preemption: the Workload API's v1beta1 (Kubernetes 1.37)")
    kube = backend
    classes = {f"{ns}-low": 100, f"{ns}-high": 1000}
    for name, value in classes.items():
        made = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        kube.create("priorityclasses", None, {**made, "value": value})
    try:
        each = workloads.settled_free_cpu(kube, gang.INSTALLED) // 3  # three Pods fit, four do not
        runs.apply(kube, ns, _with_priority(gang.sized(runs.gated("low"), each), f"{ns}-low"))
        runs.running(kube, ns, "low")
        first = {p["metadata"]["uid"] for p in gang.job_pods(kube, ns, "low")}
        began = time.monotonic()
        runs.apply(kube, ns, _with_priority(gang.pi("high", each), f"{ns}-high"))
        marked: set[str] = set()
        said: dict[str, Any] = {}

        def high_runs_and_low_said_why() -> bool:
            marked.update(_preempted(gang.job_pods(kube, ns, "low")) & first)
            held = gang.gang_held(kube, ns, "low")
            if held is not None and held["reason"] == "PreemptionByScheduler":
                said.update(held)
            return bool(said) and bool(workloads.bound(gang.job_pods(kube, ns, "high")))

        wait_for(high_runs_and_low_said_why, RUN_SECONDS, "high bound and low saying why")
        runs.succeeded(kube, ns, "high")
        high_done = time.monotonic() - began
        left = first & {p["metadata"]["uid"] for p in gang.job_pods(kube, ns, "low")}
        groups = {n: workloads.get(kube, "podgroups", ns, n) or {} for n in ("low", "high")}
        runs.running(kube, ns, "low")
        runs.open_gate(kube, ns, "low")
        runs.succeeded(kube, ns, "low")
    finally:
        for name in classes:
            kube.delete("priorityclasses", None, name)
    assert left == set(), "a Pod of the preempted gang outlived it"
    assert marked == first, (marked, first)  # all three, the launcher included: the gang, not one Pod
    assert said["message"].startswith(
        "PodGroup low (scheduling.k8s.io/v1beta1) is preempted by the scheduler"
    )
    assert "preempting to accommodate a higher priority" in said["message"], said
    for name, group in groups.items():
        assert (group["spec"]["priorityClassName"], group["spec"].get("priority")) == (
            f"{ns}-{name}",
            classes[f"{ns}-{name}"],
        ), group["spec"]
        assert group["spec"]["disruptionMode"] == {"all": {}}
    record_property(
        "e2e_summary",
        f"gang preemption (1.37): 3 x {each}m low gang running; high gang arrived: {len(marked)} of 3 low"
        f" Pods marked DisruptionTarget PreemptionByScheduler, none left; low said GangScheduled=False"
        f" {said['reason']}: {said['message'][:160]}; high Succeeded at {high_done:.1f} s; low ran again"
        " and Succeeded",
    )
