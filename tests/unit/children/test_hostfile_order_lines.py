"""The hostfile order as the ConfigMap writes it: the order header, the hosts, the order table
(``hostfile-order``)."""

from __future__ import annotations

from app.api.hostfile_order_annotations import ORDER_ANNOTATION
from app.children import hostfile_order_lines
from app.children.configmap import build_configmap
from app.children.hostfile_order_lines import HostfileOrder, Placement
from tests.support.builders import mpijob
from tests.support.observed import defaulted

RACK = "example.com/rack"


def test_a_final_order_writes_its_hosts_sorted_with_its_labels_and_a_table() -> None:
    job = defaulted(
        mpijob().impl("MPICH").slots(2).set("metadata.annotations", {ORDER_ANNOTATION: "topology"})
    )
    order = HostfileOrder(
        (RACK,), (Placement("pi-worker-1", "n1", ("r1",)), Placement("pi-worker-0", "n9", (None,)))
    )
    data = build_configmap(job, [], "", order)["data"]
    assert data["hostfile"] == (
        f"{hostfile_order_lines.FINAL} {RACK}\npi-worker-1.pi.default.svc:2\npi-worker-0.pi.default.svc:2\n"
    )
    assert data["hostfile-order"] == f"# line host node {RACK}\n1 pi-worker-1 n1 r1\n2 pi-worker-0 n9 -\n"


def test_a_pending_order_says_how_many_hosts_are_bound() -> None:
    order = HostfileOrder((RACK,), (Placement("a", "n1", ("r1",)), Placement("b", "", (None,))))
    assert order.header() == f"{hostfile_order_lines.PENDING}, 1 of 2 hosts bound to nodes\n"
    assert order.table().endswith("2 b - -\n")


def test_a_launcher_as_workers_order_names_its_pod() -> None:
    order = HostfileOrder((), (Placement("pi-launcher", "n1", ()),), "pi-launcher-x")
    assert (
        order.header() == f"{hostfile_order_lines.FINAL} (none: by node name); launcher Pod pi-launcher-x\n"
    )


def test_the_table_stops_at_its_bound() -> None:
    placements = tuple(Placement(f"pi-worker-{i}", "n" * 200, ()) for i in range(1000))
    table = HostfileOrder((), placements).table()
    assert len(table.encode()) <= hostfile_order_lines.MAX_TABLE_BYTES + 64
    assert table.endswith(" more hosts not shown\n")


def test_a_job_that_did_not_opt_in_has_no_table() -> None:
    assert "hostfile-order" not in build_configmap(defaulted(), [], "")["data"]


def test_open_mpi_gets_a_bare_line_per_slot_and_the_launcher_by_its_short_name() -> None:
    """The sequential mapper's form (one rank per line); the default mapper counts the same slots."""
    builder = (
        mpijob().slots(2).launcher_as_worker().set("metadata.annotations", {ORDER_ANNOTATION: "topology"})
    )
    order = HostfileOrder(
        (), (Placement("pi-worker-0", "n1", ()), Placement("pi-launcher", "n2", ())), "pi-launcher-x"
    )
    hosts = build_configmap(defaulted(builder), [], "", order)["data"]["hostfile"].splitlines()[1:]
    assert hosts == ["pi-worker-0.pi.default.svc"] * 2 + ["pi-launcher"] * 2


def test_what_a_request_sends_never_breaks_a_line_of_the_hostfile_or_its_table() -> None:
    order = HostfileOrder(
        (RACK,), (Placement("pi-worker-0", "n1\nevil", ("r 1\n#",)),), "pi-launcher\nx slots=9"
    )
    assert order.header().count("\n") == 1 and "x slots" not in order.header()
    assert order.table().splitlines()[1] == "1 pi-worker-0 n1?evil r?1??"
