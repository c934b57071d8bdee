"""The ordered hostfile over a job's life, through the fake Metacontroller with Nodes and bindings.

The hook asks for the Nodes in its customize answer; the fake selects them as the apiserver would and the
scheduler's bindings come as ``spec.nodeName``. Each step's request and response digest is recorded under
``tests/golden/lifecycle/hostfile-order-*/`` (``--update-golden``).
"""

from __future__ import annotations

from typing import Any

from app.api.hostfile_order_annotations import LABELS_ANNOTATION, ORDER_ANNOTATION
from app.children import hostfile_order_lines
from app.settings import Settings
from tests.hook.test_lifecycle import (
    CONFIGMAP,
    GOLDEN,
    LAUNCHER,
    SECRET,
    SERVICE,
    pod,
    steady,
)
from tests.support.builders import MPIJobBuilder, mpijob
from tests.support.metacontroller import FakeMetacontroller, Golden, Writes
from tests.support.observed import BLOCK, RACK, TOPOLOGY_NODES

SUFFIX = ".pi.default.svc"


def fake(scenario: str, update_golden: bool, **settings: Any) -> FakeMetacontroller:
    golden = Golden(GOLDEN / f"hostfile-order-{scenario}", update_golden)
    mc = FakeMetacontroller(
        golden=golden, settings=Settings(hostfile_order_labels=f"{BLOCK},{RACK}", **settings)
    )
    for name, labels in TOPOLOGY_NODES.items():
        mc.add_node(name, labels)
    mc.add_node("unlabelled", {})
    return mc


def ordered(builder: MPIJobBuilder, **annotations: str) -> dict[str, Any]:
    return builder.set("metadata.annotations", {ORDER_ANNOTATION: "topology", **annotations}).build()


def hostfile(mc: FakeMetacontroller) -> list[str]:
    configmap = mc.get("ConfigMap", "pi-config")
    assert configmap is not None
    lines: list[str] = configmap["data"]["hostfile"].splitlines()
    return lines


def settle(mc: FakeMetacontroller) -> None:
    """As ``steady``, with one sync more: the final hostfile is stored before the launcher is created."""
    assert mc.sync_until_steady(limit=8) <= 4
    steady(mc)


def bind(mc: FakeMetacontroller, **nodes: str) -> None:
    """``worker_0="n4"``: the scheduler binds each named worker."""
    for worker, node in nodes.items():
        mc.bind(f"pi-{worker.replace('_', '-')}", node)


def test_created_bound_then_the_launcher_on_the_final_order(update_golden: bool) -> None:
    """The launcher Job comes only in the sync after the one that stored the final hostfile, so its Pod mounts
    it; an MPICH job keeps host:N lines; a steady ordered job writes nothing."""
    mc = fake("create", update_golden)
    mc.apply_mpijob(ordered(mpijob().workers(3).impl("MPICH").slots(2)))

    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET, pod(0), pod(1), pod(2)])
    assert hostfile(mc)[0] == f"{hostfile_order_lines.PENDING}, 0 of 3 hosts bound to nodes"
    steady(mc)
    assert mc.names("Job") == []

    bind(mc, worker_0="n4", worker_1="n5")
    assert mc.sync() == Writes(updated=[CONFIGMAP])
    assert hostfile(mc)[0] == f"{hostfile_order_lines.PENDING}, 2 of 3 hosts bound to nodes"
    bind(mc, worker_2="n1")
    assert mc.sync() == Writes(updated=[CONFIGMAP])
    assert hostfile(mc) == [
        f"{hostfile_order_lines.FINAL} {BLOCK}, {RACK}",
        f"pi-worker-2{SUFFIX}:2",  # b1 r1
        f"pi-worker-1{SUFFIX}:2",  # b1, no rack
        f"pi-worker-0{SUFFIX}:2",  # b2 r2
    ]
    assert mc.names("Job") == []
    assert mc.sync() == Writes(created=[LAUNCHER])
    steady(mc)
    table = mc.get("ConfigMap", "pi-config")["data"][hostfile_order_lines.ORDER_KEY]  # type: ignore[index]
    assert table.splitlines()[1:] == [
        "1 pi-worker-2 n1 b1 r1",
        "2 pi-worker-1 n5 b1 -",
        "3 pi-worker-0 n4 b2 r2",
    ]

    # Finished, its workers cleaned up (cleanPodPolicy Running): the hostfile it ran on stays.
    ran_on = hostfile(mc)
    mc.workers_running()
    mc.start_launcher_pod()
    mc.finish_launcher("Complete")
    steady(mc)
    assert mc.names("Pod") == [] and hostfile(mc) == ran_on


def test_a_replaced_worker_joins_the_order_at_its_new_node(update_golden: bool) -> None:
    """Open MPI's form (a bare line per slot); the running launcher is kept while the order moves."""
    mc = fake("worker-replaced", update_golden)
    mc.apply_mpijob(ordered(mpijob().workers(2).slots(2)))
    mc.sync()
    bind(mc, worker_0="n3", worker_1="n2")
    settle(mc)
    assert mc.names("Job") == ["pi-launcher"]
    assert hostfile(mc)[1:] == [f"pi-worker-1{SUFFIX}"] * 2 + [f"pi-worker-0{SUFFIX}"] * 2

    mc.delete("Pod", "pi-worker-1")  # lost with its node: Metacontroller re-creates it
    assert mc.sync() == Writes(created=[pod(1)], updated=[CONFIGMAP])
    assert hostfile(mc)[0].startswith(hostfile_order_lines.PENDING)
    bind(mc, worker_1="n4")
    assert mc.sync() == Writes(updated=[CONFIGMAP])
    assert hostfile(mc)[1:] == [f"pi-worker-0{SUFFIX}"] * 2 + [f"pi-worker-1{SUFFIX}"] * 2
    steady(mc)
    assert mc.names("Job") == ["pi-launcher"]


def test_the_launcher_as_worker_is_placed_by_its_own_pod(update_golden: bool) -> None:
    """Created at once (its wait-for-workers holds mpirun); the hostfile names the Pod whose node placed it,
    and a retried launcher Pod on another node moves it."""
    mc = fake("launcher-as-worker", update_golden)
    mc.apply_mpijob(ordered(mpijob().workers(2).launcher_as_worker()))
    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET, pod(0), pod(1), LAUNCHER])
    bind(mc, worker_0="n4", worker_1="n1")
    steady(mc)
    assert hostfile(mc)[0].startswith(hostfile_order_lines.PENDING)

    first = mc.start_launcher_pod("Pending")
    mc.bind(first, "n3")
    steady(mc)
    assert hostfile(mc) == [
        f"{hostfile_order_lines.FINAL} {BLOCK}, {RACK}{hostfile_order_lines.LAUNCHER_POD}{first}",
        f"pi-worker-1{SUFFIX}",
        "pi-launcher",
        f"pi-worker-0{SUFFIX}",
    ]
    mc.set_launcher_pod(first, "Failed")
    retry = mc.start_launcher_pod("Pending")
    mc.bind(retry, "n2")
    steady(mc)
    assert hostfile(mc)[0].endswith(f"{hostfile_order_lines.LAUNCHER_POD}{retry}")
    assert hostfile(mc)[1:] == [f"pi-worker-1{SUFFIX}", "pi-launcher", f"pi-worker-0{SUFFIX}"]


def test_suspend_and_resume_order_the_new_pods(update_golden: bool) -> None:
    """Suspended: no workers, no launcher, the order pending again; resumed: the new Pods' nodes decide,
    and the launcher waits for the new final hostfile. The job's own labels and the hook's selector."""
    mc = fake("suspend-resume", update_golden, hostfile_order_node_selector=f"{RACK}")
    job = mpijob().workers(2)
    mc.apply_mpijob(ordered(job, **{LABELS_ANNOTATION: RACK}))
    mc.sync()
    bind(mc, worker_0="n2", worker_1="n1")
    settle(mc)
    assert hostfile(mc)[1:] == [f"pi-worker-1{SUFFIX}", f"pi-worker-0{SUFFIX}"]
    assert mc.names("Job") == ["pi-launcher"]

    mc.apply_mpijob(ordered(mpijob().workers(2).suspend(), **{LABELS_ANNOTATION: RACK}))
    steady(mc)
    assert (mc.names("Pod"), mc.names("Job")) == ([], [])
    assert hostfile(mc)[0] == f"{hostfile_order_lines.PENDING}, 0 of 2 hosts bound to nodes"

    mc.apply_mpijob(ordered(mpijob().workers(2).suspend(False), **{LABELS_ANNOTATION: RACK}))
    steady(mc)
    assert mc.names("Job") == []
    bind(mc, worker_0="n3", worker_1="n4")
    assert mc.sync() == Writes(updated=[CONFIGMAP])
    assert hostfile(mc)[1:] == [f"pi-worker-0{SUFFIX}", f"pi-worker-1{SUFFIX}"]  # r1 before r2
    assert mc.sync() == Writes(created=[LAUNCHER])
    steady(mc)
