"""``hostfile_order``: hosts sorted by their nodes' labels once every host is bound (missing labels last,
then node name, then index order), the launcher-as-worker placed by its Pod's node, and the launcher
Job held until the final hostfile is stored."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.hostfile_order_annotations import LABELS_ANNOTATION, ORDER_ANNOTATION
from app.children.configmap import hostfile
from app.core.policies import hostfile_order
from app.core.policies.hostfile_order import TopologyOrder
from tests.support.builders import MPIJobBuilder, mpijob
from tests.support.observed import BLOCK, RACK, TOPOLOGY_NODES, defaulted, launcher_pod, observed, worker

LABELS = (BLOCK, RACK)
BY_LABELS = TopologyOrder(LABELS)
# n6 has no label at all.
NODES: dict[str, dict[str, str]] = {**TOPOLOGY_NODES, "n6": {}}


def ordered(builder: MPIJobBuilder | None = None, **annotations: str) -> MPIJobBuilder:
    builder = builder or mpijob()
    return builder.set("metadata.annotations", {ORDER_ANNOTATION: "topology", **annotations})


def hosts_on(*nodes: str, **how: Any) -> dict[int, Any]:
    """Workers 0..n-1 bound to these nodes ("" = not bound yet)."""
    return {i: worker(i, node=node, **how) for i, node in enumerate(nodes)}


def order_of(builder: MPIJobBuilder, workers: dict[int, Any], **seen: Any) -> list[str]:
    job = defaulted(builder)
    decision = hostfile_order.decide(job, observed(None, workers, **seen), BY_LABELS, finished_before=False)
    assert decision.order is not None
    return decision.order.hosts


# id: (nodes of workers 0..n-1, the hostfile's order of worker indices)
ORDERS: dict[str, tuple[tuple[str, ...], list[int]]] = {
    "sorted by block, then rack": (("n4", "n1", "n3", "n2"), [1, 3, 2, 0]),
    "a node without the rack comes after its block's racks": (("n5", "n2", "n1"), [2, 1, 0]),
    "a node without any label comes last": (("n6", "n4", "n1"), [2, 1, 0]),
    "an unknown node is a node without labels, then by name": (("zz", "n6", "n1"), [2, 1, 0]),
    "one node's Pods are neighbours, by index": (("n2", "n1", "n2", "n1"), [1, 3, 0, 2]),
    "equal nodes keep index order": (("n1", "n1", "n1"), [0, 1, 2]),
}


@pytest.mark.parametrize(("nodes", "want"), ORDERS.values(), ids=ORDERS.keys())
def test_the_order_of_bound_workers(nodes: tuple[str, ...], want: list[int]) -> None:
    builder = ordered(mpijob().workers(len(nodes)))
    got = order_of(builder, hosts_on(*nodes), node_labels=NODES)
    assert got == [f"pi-worker-{i}" for i in want]


def test_values_compare_byte_by_byte_as_kueue_orders_domains() -> None:
    nodes = {"a": {BLOCK: "rack-2"}, "b": {BLOCK: "rack-10"}}
    got = order_of(ordered(), hosts_on("a", "b"), node_labels=nodes)
    assert got == ["pi-worker-1", "pi-worker-0"]


def test_pending_until_every_worker_is_bound_keeps_upstreams_order() -> None:
    job = defaulted(ordered(mpijob().workers(3)))
    seen = observed(None, hosts_on("n4", "", "n1"), node_labels=NODES)
    decision = hostfile_order.decide(job, seen, BY_LABELS, finished_before=False)
    assert decision.order is not None and not decision.order.final
    assert decision.order.hosts == ["pi-worker-0", "pi-worker-1", "pi-worker-2"]
    assert decision.order.bound == 2
    assert not decision.launcher_may_start


def test_a_missing_worker_is_not_bound() -> None:
    job = defaulted(ordered(mpijob().workers(2)))
    decision = hostfile_order.decide(
        job,
        observed(None, hosts_on("n1"), node_labels=NODES),
        BY_LABELS,
        finished_before=False,
    )
    assert decision.order is not None and decision.order.bound == 1 and not decision.launcher_may_start


def test_the_launcher_starts_only_once_the_final_hostfile_is_stored() -> None:
    job = defaulted(ordered())
    workers = hosts_on("n3", "n1")
    final = hostfile_order.decide(
        job, observed(None, workers, node_labels=NODES), BY_LABELS, finished_before=False
    )
    assert final.order is not None and final.order.final and not final.launcher_may_start
    written = hostfile(job, "", final.order)
    stored = observed(None, workers, node_labels=NODES, stored_config={"hostfile": written})
    assert hostfile_order.decide(job, stored, BY_LABELS, finished_before=False).launcher_may_start
    # A worker replaced on another node changes the order: not the stored one any more.
    moved = observed(None, hosts_on("n3", "n4"), node_labels=NODES, stored_config={"hostfile": written})
    assert not hostfile_order.decide(job, moved, BY_LABELS, finished_before=False).launcher_may_start


def test_a_replaced_worker_joins_the_order_at_its_new_node() -> None:
    builder = ordered(mpijob().workers(3))
    before = order_of(builder, hosts_on("n3", "n1", "n2"), node_labels=NODES)
    after = order_of(builder, hosts_on("n3", "n4", "n2"), node_labels=NODES)
    assert before == ["pi-worker-1", "pi-worker-2", "pi-worker-0"]
    assert after == ["pi-worker-2", "pi-worker-0", "pi-worker-1"]


def test_the_launcher_as_worker_takes_its_place_by_its_pods_node() -> None:
    builder = ordered(mpijob().launcher_as_worker())
    launcher = launcher_pod(node="n3", suffix="b")
    got = order_of(builder, hosts_on("n4", "n1"), node_labels=NODES, launcher_pods=[launcher])
    assert got == ["pi-worker-1", "pi-launcher", "pi-worker-0"]


def test_the_launcher_as_worker_is_pending_until_its_pod_is_bound_and_may_start_at_once() -> None:
    job = defaulted(ordered(mpijob().launcher_as_worker()))
    seen = observed(None, hosts_on("n4", "n1"), node_labels=NODES, launcher_pods=[launcher_pod(suffix="b")])
    decision = hostfile_order.decide(job, seen, BY_LABELS, finished_before=False)
    assert decision.order is not None and not decision.order.final
    assert decision.launcher_may_start  # its own wait-for-workers holds mpirun (launcher_wait)


def test_the_launcher_pod_of_this_try_places_the_launcher() -> None:
    failed = launcher_pod("Failed", suffix="a", node="n1", created="2026-05-04T09:00:00Z")
    retry = launcher_pod("Pending", suffix="b", node="n4", created="2026-05-04T09:01:00Z")
    job = defaulted(ordered(mpijob().launcher_as_worker()))
    seen = observed(None, hosts_on("n3", "n1"), node_labels=NODES, launcher_pods=[failed, retry])
    order = hostfile_order.decide(job, seen, BY_LABELS, finished_before=False).order
    assert order is not None and order.launcher_pod == "pi-launcher-b"
    assert order.hosts == ["pi-worker-1", "pi-worker-0", "pi-launcher"]


def test_a_job_that_did_not_opt_in_keeps_upstreams_hostfile_and_starts_as_before() -> None:
    decision = hostfile_order.decide(
        defaulted(), observed(None, hosts_on("n4", "n1")), None, finished_before=False
    )
    assert decision.order is None and decision.launcher_may_start


def test_suspended_job_without_workers_is_pending() -> None:
    job = defaulted(ordered(mpijob().suspend()))
    decision = hostfile_order.decide(job, observed(), BY_LABELS, finished_before=False)
    assert decision.order is not None and decision.order.bound == 0 and not decision.launcher_may_start


def test_no_labels_orders_by_node_name() -> None:
    job = defaulted(ordered(**{LABELS_ANNOTATION: ""}))
    order = hostfile_order.decide(
        job, observed(None, hosts_on("b", "a")), TopologyOrder(()), finished_before=False
    ).order
    assert order is not None and order.hosts == ["pi-worker-1", "pi-worker-0"]


def kueue_rank_assignment(
    ranks: int, nodes: dict[str, dict[str, str]], levels: tuple[str, ...], per_node: int
) -> list[str]:
    """Kueue TAS's rank-based placement: domains sorted byte-wise by their level values (the finest being
    the hostname), rank r on the r-th free slot in that order."""
    ordered_nodes = sorted(nodes, key=lambda n: (tuple(nodes[n][level] for level in levels), n))
    slots = [node for node in ordered_nodes for _ in range(per_node)]
    return slots[:ranks]


@pytest.mark.parametrize("per_node", [1, 2])
def test_kueue_tas_rank_order_is_already_ours(per_node: int) -> None:
    """With the same levels, the index order Kueue gives is the order we sort to: the hostfile keeps it."""
    nodes = {f"node-{i}": {BLOCK: f"b{i % 2}", RACK: f"rack-{i % 3 + 1}0"} for i in range(6)}
    placed = kueue_rank_assignment(6, nodes, LABELS, per_node)
    got = order_of(ordered(mpijob().workers(6)), hosts_on(*placed), node_labels=nodes)
    assert got == [f"pi-worker-{i}" for i in range(6)]


def test_kueue_tas_with_the_launcher_as_rank_0() -> None:
    """Kueue offsets the workers' ranks by one for runLauncherAsWorker (the launcher is rank 0)."""
    nodes = {f"node-{i}": {BLOCK: f"b{i // 2}", RACK: f"r{i}"} for i in range(4)}
    launcher_node, *worker_nodes = kueue_rank_assignment(4, nodes, LABELS, 1)
    launcher = launcher_pod(node=launcher_node, suffix="k")
    got = order_of(
        ordered(mpijob().workers(3).launcher_as_worker()),
        hosts_on(*worker_nodes),
        node_labels=nodes,
        launcher_pods=[launcher],
    )
    assert got == ["pi-launcher", "pi-worker-0", "pi-worker-1", "pi-worker-2"]


VALUES = st.sampled_from(["a", "b", "rack-10", "rack-2", ""])
NODE_LABELS = st.dictionaries(st.sampled_from(LABELS), VALUES.filter(bool), max_size=2)


@settings(max_examples=200, deadline=None)
@given(
    bindings=st.lists(st.sampled_from(["n1", "n2", "n3", "x", ""]), min_size=1, max_size=8),
    nodes=st.dictionaries(st.sampled_from(["n1", "n2", "n3"]), NODE_LABELS),
    shuffle=st.randoms(use_true_random=False),
)
def test_any_bindings_give_a_permutation_sorted_by_node_whatever_the_order_nodes_come_in(
    bindings: list[str], nodes: dict[str, dict[str, str]], shuffle: Any
) -> None:
    builder = ordered(mpijob().workers(len(bindings)))
    got = order_of(builder, hosts_on(*bindings), node_labels=nodes)
    assert sorted(got) == sorted(f"pi-worker-{i}" for i in range(len(bindings)))
    items = list(nodes.items())
    shuffle.shuffle(items)
    assert order_of(builder, hosts_on(*bindings), node_labels=dict(items)) == got
    if all(bindings):  # final: neighbours by node labels, then node name, then index

        def key(host: str) -> tuple[Any, ...]:
            index = int(host.rsplit("-", 1)[1])
            labels = nodes.get(bindings[index], {})
            return (*((labels.get(k) is None, labels.get(k, "")) for k in LABELS), bindings[index], index)

        assert got == sorted(got, key=key)
    else:
        assert got == [f"pi-worker-{i}" for i in range(len(bindings))]


def test_a_finished_job_keeps_the_hostfile_it_ran_on() -> None:
    """Its workers may be gone (cleanPodPolicy): the order stays what the ranks ran in, as stored."""
    job = defaulted(ordered())
    stored = {"hostfile": "# the order it ran on\n", "hostfile-order": "# line host node\n", "other": "x"}
    seen = observed(None, {}, node_labels=NODES, stored_config=stored)
    decision = hostfile_order.decide(job, seen, BY_LABELS, finished_before=True)
    assert decision.kept == {"hostfile": "# the order it ran on\n", "hostfile-order": "# line host node\n"}
    running = hostfile_order.decide(job, seen, BY_LABELS, finished_before=False)
    assert running.kept is None and running.order is not None and not running.order.final


def test_a_launcher_pod_that_ended_keeps_its_place_until_a_retry_replaces_it() -> None:
    """The sync that sees the launcher succeed (before the finished status is stored) keeps the order it ran
    on; a retry's new Pod takes over."""
    job = defaulted(ordered(mpijob().launcher_as_worker()))
    done = launcher_pod("Succeeded", suffix="a", node="n3", created="2026-05-04T09:00:00Z")
    seen = observed(None, hosts_on("n4", "n1"), node_labels=NODES, launcher_pods=[done])
    order = hostfile_order.decide(job, seen, BY_LABELS, finished_before=False).order
    assert order is not None and order.final and order.launcher_pod == "pi-launcher-a"
    retry = launcher_pod("Pending", suffix="b", created="2026-05-04T09:01:00Z")
    seen = observed(None, hosts_on("n4", "n1"), node_labels=NODES, launcher_pods=[done, retry])
    order = hostfile_order.decide(job, seen, BY_LABELS, finished_before=False).order
    assert order is not None and not order.final
