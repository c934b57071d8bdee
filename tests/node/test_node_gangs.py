"""Gangs held by Volcano and by scheduler-plugins' coscheduler themselves, on the real node: the PodGroups the
hook writes, scheduled by the real schedulers (volcano.py: Volcano v1.14.1; coscheduler.py: scheduler-plugins
v0.34.7), each installed from its own manifests and the hook switched to it by its overlay
(``deploy/overlays/volcano``, ``deploy/overlays/scheduler-plugins``), as a user does.

The same scenarios per scheduler (the Workload API's are in test_node_gang.py): a gang that cannot fit binds
nothing and the MPIJob and ``mpijob doctor`` say that scheduler's reason; two jobs that fit one at a time
never both half-bound, and both Succeed; suspend, resume and delete, the PodGroup following; workers scaled
up, the PodGroup counting them before the new one exists. Volcano only: a Queue whose capability is smaller
than the gang holds it, and the MPIJob names the queue. Each test says what it measured in its
``e2e_summary``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from app.kube.gang import (
    SCHEDULER_PLUGINS_API_VERSION,
    SCHEDULER_PLUGINS_OVERLAY,
    VOLCANO_API_VERSION,
    VOLCANO_OVERLAY,
)
from tests.e2e import jobs
from tests.e2e.kube import ApiError, Kube, wait_for
from tests.node import coscheduler, doctor, gang, neighbours, runs, volcano, workloads
from tests.node.conftest import RealNode

HOLD_SECONDS = 15.0  # how long a gang that cannot fit is watched staying wholly unbound
BIND_SECONDS = 60.0
RUN_SECONDS = 240.0
INSTALLED = (*gang.INSTALLED, volcano.NAMESPACE, coscheduler.NAMESPACE)


@dataclass(frozen=True)
class Scheduler:
    """One gang scheduler as the tests use it."""

    name: str
    neighbour: ModuleType  # volcano or coscheduler: recipes, manifests, install
    api_version: str
    overlay: str
    namespace: str  # where its programs run


SCHEDULERS = {
    "volcano": Scheduler("volcano", volcano, VOLCANO_API_VERSION, VOLCANO_OVERLAY, volcano.NAMESPACE),
    "scheduler-plugins": Scheduler(
        "scheduler-plugins",
        coscheduler,
        SCHEDULER_PLUGINS_API_VERSION,
        SCHEDULER_PLUGINS_OVERLAY,
        coscheduler.NAMESPACE,
    ),
}


@dataclass(frozen=True)
class Backend:
    scheduler: Scheduler
    node: RealNode

    @property
    def kube(self) -> Kube:
        return self.node.kube

    def podgroup(self, ns: str, name: str) -> dict[str, Any] | None:
        group, version = self.scheduler.api_version.split("/")
        try:
            return dict(self.kube.request("GET", f"/apis/{group}/{version}/namespaces/{ns}/podgroups/{name}"))
        except ApiError as err:
            if err.status == 404:
                return None
            raise


@pytest.fixture(scope="module", params=list(SCHEDULERS))
def backend(real_node: RealNode, request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The scheduler installed from its own manifests (on a given cluster: the one installed there) and the
    hook switched to it by its overlay; back to the quick start's ``deploy/`` and the scheduler removed
    after its tests."""
    scheduler: Scheduler = SCHEDULERS[request.param]
    cluster, kube = real_node.cluster, real_node.kube
    objects: list[dict[str, Any]] = []
    if cluster is None:
        if not kube.list("pods", scheduler.namespace):
            pytest.skip(f"no {scheduler.name} on the given cluster")
    else:
        try:
            built = cluster.builds[scheduler.name].result()
        except RuntimeError as err:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"{scheduler.name} could not be built here: {err}")
        for recipe in scheduler.neighbour.recipes(built):
            cluster.add_image(recipe)
        objects = scheduler.neighbour.manifests(built)
        began = time.monotonic()
        scheduler.neighbour.install(kube, objects)
        cluster.timings[f"{scheduler.name} {built.version} installed"] = time.monotonic() - began
    gang.install(real_node, scheduler.overlay)
    backend = Backend(scheduler, real_node)
    gang.wait_until_declared(kube, lambda ns, name: backend.podgroup(ns, name))
    try:
        yield backend
    finally:
        gang.install(real_node, gang.QUICK_START)
        if objects:
            neighbours.uninstall(kube, objects)


def test_a_gang_too_big_for_the_node_binds_nothing_and_says_the_schedulers_reason(
    backend: Backend, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Three Pods that each fit but not all together: none is bound; the MPIJob's GangScheduled=False
    carries the scheduler's own reason (Volcano's PodGroup condition; the coscheduler's refused Pod), and
    ``mpijob doctor`` names the held gang."""
    kube, name = backend.kube, backend.scheduler.name
    free = workloads.settled_free_cpu(kube, INSTALLED)
    runs.apply(kube, ns, gang.pi("big", free // 2))
    wait_for(lambda: len(gang.job_pods(kube, ns, "big")) == 3, BIND_SECONDS, "the job's three Pods")
    watch = workloads.Watch(lambda: {"big": gang.job_pods(kube, ns, "big")})
    wait_for(lambda: gang.gang_held(kube, ns, "big"), 60, "the MPIJob's GangScheduled=False")
    watch.hold(HOLD_SECONDS)
    assert watch.most("big") == 0, watch.samples
    held = gang.gang_held(kube, ns, "big")  # the scheduler's word after the hold
    assert held is not None
    group = backend.podgroup(ns, "big")
    assert group is not None and group["spec"]["minMember"] == 3, group
    assert held["message"].startswith(f"PodGroup big ({backend.scheduler.api_version}) is "), held
    if name == "volcano":
        verdict = workloads.condition(group, "Unschedulable")
        assert group["status"]["phase"] in ("Pending", "Inqueue"), group["status"]
        assert (held["reason"], verdict["status"]) == (verdict["reason"], "True"), (held, verdict)
        assert verdict["message"].rstrip(" .") in held["message"], (held, verdict)
        words = verdict["message"]
    else:
        assert group["status"].get("phase") in ("Pending", "Scheduling"), group["status"]
        # The first refused worker's PodScheduled message, as the coscheduler said it in one of its Events
        # on that Pod (its message changes as the gang backs off: the MPIJob quotes the one the hook saw).
        quoted = re.search(r"\((big-worker-\d+): ", held["message"])
        assert held["reason"] == "Unschedulable" and quoted, held
        said_by = [
            e["message"][:80]
            for e in kube.list("events", ns)
            if e["involvedObject"]["name"] == quoted[1] and e["reason"] == "FailedScheduling"
        ]
        assert any(f"({quoted[1]}: {message}" in held["message"] for message in said_by), (held, said_by)
        words = "nodes are available"  # how each of its refusals begins
    # The doctor names the held gang with the scheduler's reason and words.
    said = doctor.doctor(kube.kubeconfig, ns, "big", "-o", "json")
    assert said.code == 1 and said.check == "podgroup-cannot-be-met", said
    summary = said.json["problem"]["summary"]
    assert f"({held['reason']}): " in summary and words[:40] in summary, (summary, words)
    record_property(
        "e2e_summary",
        f"{name} gang: 3 Pods of {free // 2}m on {free}m free, {watch.most('big')} of 3 bound over"
        f" {HOLD_SECONDS:.0f} s; MPIJob GangScheduled=False {held['reason']}: {held['message'][:220]};"
        f" mpijob doctor: {said.json['problem']['summary'][:160]}",
    )


def test_two_gangs_that_fit_one_at_a_time_run_one_after_the_other(
    backend: Backend, ns: str, record_property: pytest.RecordProperty
) -> None:
    seen = gang.one_after_the_other(backend.kube, ns, INSTALLED, RUN_SECONDS)
    first, second = seen.first, seen.second
    record_property(
        "e2e_summary",
        f"{backend.scheduler.name} gangs: two jobs of 3 x {seen.each}m on {seen.free}m free applied at once:"
        f" {first} whole at {seen.whole[first]:.1f} s, {second} at {seen.whole[second]:.1f} s (it waited"
        f" {seen.whole[second] - seen.whole[first]:.1f} s more, saying {seen.waited.get(second, 'nothing')}),"
        f" both Succeeded at {seen.took:.1f} s; no partial start",
    )


def test_suspend_resume_and_delete_the_podgroup_follows(
    backend: Backend, ns: str, record_property: pytest.RecordProperty
) -> None:
    """Held (does not fit), suspended: its Pods and PodGroup go; edited to fit and resumed: a PodGroup of the
    new size, every Pod bound; deleted: nothing of it is left."""
    kube, name = backend.kube, backend.scheduler.name
    free = workloads.settled_free_cpu(kube, INSTALLED)
    runs.apply(kube, ns, gang.pi("held", free // 2))
    wait_for(lambda: gang.gang_held(kube, ns, "held"), 60, "held's GangScheduled=False")
    kube.patch("mpijobs", ns, "held", {"spec": {"runPolicy": {"suspend": True}}})
    jobs.wait_condition(kube, ns, "held", "Suspended")
    wait_for(lambda: not gang.job_pods(kube, ns, "held"), 120, "the suspended job's Pods gone")
    wait_for(lambda: backend.podgroup(ns, "held") is None, 60, "the suspended job's PodGroup gone")
    resumed = gang.pi("held", free // 4)
    resumed["spec"]["runPolicy"]["suspend"] = False
    runs.apply(kube, ns, resumed)
    watch = workloads.Watch(lambda: {"held": gang.job_pods(kube, ns, "held")})
    took = watch.until(lambda counts: counts["held"] == 3, BIND_SECONDS, "the resumed job bound")
    group = backend.podgroup(ns, "held")
    assert group is not None and group["spec"]["minResources"]["cpu"] == f"{3 * (free // 4)}m", group
    assert gang.gang_held(kube, ns, "held") is None
    began = time.monotonic()
    kube.kubectl("-n", ns, "delete", "mpijob", "held")
    wait_for(lambda: backend.podgroup(ns, "held") is None, 90, "the PodGroup gone with the job")
    wait_for(lambda: not gang.job_pods(kube, ns, "held"), 120, "the job's Pods gone")
    record_property(
        "e2e_summary",
        f"{name} suspend: Pods and PodGroup gone while suspended; resumed at 3 x {free // 4}m: a new"
        f" PodGroup, all bound {took:.1f} s after the apply; deleted: PodGroup and Pods gone in"
        f" {time.monotonic() - began:.1f} s",
    )


def test_workers_scaled_up_join_a_podgroup_that_already_counts_them(
    backend: Backend, ns: str, record_property: pytest.RecordProperty
) -> None:
    """A running job of one worker scaled to two: the new worker Pod exists only once the PodGroup's
    minMember counts it (``gang.scale_up``), then it is bound."""
    kube, name = backend.kube, backend.scheduler.name
    free = workloads.settled_free_cpu(kube, INSTALLED)
    job = gang.sized(runs.gated("grow"), free // 4)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    runs.apply(kube, ns, job)
    runs.running(kube, ns, "grow")
    assert (backend.podgroup(ns, "grow") or {})["spec"]["minMember"] == 2
    samples = gang.scale_up(kube, ns, "grow", lambda: _min_member(backend, ns, "grow"), BIND_SECONDS)
    assert [s for s in samples if s.exists and s.size != 3] == [], samples
    counted = next(s.seconds for s in samples if s.size == 3)
    created = next(s.seconds for s in samples if s.exists)
    kube.kubectl("-n", ns, "delete", "mpijob", "grow", "--wait=false")
    record_property(
        "e2e_summary",
        f"{name} scaling: workers 1 -> 2 on a running job: PodGroup minMember 3 seen at {counted:.1f} s,"
        f" the new worker first seen at {created:.1f} s, bound at {samples[-1].seconds:.1f} s"
        f" ({len(samples)} samples)",
    )


def _min_member(backend: Backend, ns: str, name: str) -> int:
    return int((backend.podgroup(ns, name) or {}).get("spec", {}).get("minMember", 0))


def test_a_volcano_queue_smaller_than_the_gang_holds_it_and_the_job_names_the_queue(
    backend: Backend, ns: str, record_property: pytest.RecordProperty
) -> None:
    if backend.scheduler.name != "volcano":
        pytest.skip("Volcano's Queues")
    kube = backend.kube
    queue = f"{ns}-small"
    with neighbours.applied(kube, [volcano.queue(queue, "1")]):
        job = gang.pi("queued", 400)  # 3 x 400m: 1200m, the queue holds 1000m; the node has room
        job["spec"]["runPolicy"]["schedulingPolicy"] = {"queue": queue}
        runs.apply(kube, ns, job)
        held = wait_for(lambda: gang.gang_held(kube, ns, "queued"), 60, "queued's GangScheduled=False")
        watch = workloads.Watch(lambda: {"queued": gang.job_pods(kube, ns, "queued")})
        watch.hold(HOLD_SECONDS / 3)
        assert watch.most("queued") == 0, watch.samples
        assert f" in queue {queue}: " in held["message"], held
        said = doctor.doctor(kube.kubeconfig, ns, "queued", "-o", "json")
        assert said.check == "podgroup-cannot-be-met" and queue in said.json["problem"]["fix"], said.json
        kube.kubectl("-n", ns, "delete", "mpijob", "queued")
    record_property(
        "e2e_summary",
        f"volcano queue: capability cpu 1, a gang of 3 x 400m held, 0 of 3 bound; MPIJob:"
        f" {held['message'][:200]}",
    )
