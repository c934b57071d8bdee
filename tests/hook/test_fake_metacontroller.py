"""The fake Metacontroller enforces the contract: each test breaks ONE rule and expects the real reaction.

Where the real Metacontroller rejects the response, aborts the sync or would be driven into damage by it,
the fake raises ``ContractViolation`` and changes nothing; where it acts destructively (deletion by omission)
the fake does the same and the test checks that it happened. The rules are summarised in
``docs/architecture.md`` ("The Metacontroller contract").
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.support.builders import mpijob
from tests.support.metacontroller import (
    COMPOSITE_CONTROLLER,
    LAST_APPLIED,
    ContractViolation,
    FakeMetacontroller,
    stamp,
)

Response = dict[str, Any]
Edit = Callable[[Response], None]

CHILD_KINDS = {"Job.batch/v1", "Pod.v1", "Service.v1", "Secret.v1", "ConfigMap.v1"}
CHILDREN = [
    "Service.v1/pi",
    "ConfigMap.v1/pi-config",
    "Secret.v1/pi-ssh",
    "Pod.v1/pi-worker-0",
    "Pod.v1/pi-worker-1",
    "Job.batch/v1/pi-launcher",
]


# --- helpers -------------------------------------------------------------------------------------------


def composite_controller(*, version: str = "v2", customize: bool = True) -> dict[str, Any]:
    """The shipped CompositeController, edited."""
    controller = yaml.safe_load(COMPOSITE_CONTROLLER.read_text())
    hooks = controller["spec"]["hooks"]
    for hook in hooks.values():
        hook["version"] = version
    if not customize:
        del hooks["customize"]
    return controller


def fresh(controller: dict[str, Any] | None = None, **kwargs: Any) -> FakeMetacontroller:
    """A new MPIJob ``default/pi`` with 2 workers, never synced."""
    mc = FakeMetacontroller(controller, **kwargs)
    mc.apply_mpijob(mpijob().build())
    return mc


def steady(controller: dict[str, Any] | None = None) -> FakeMetacontroller:
    """The same job after the real hook has created everything and stopped writing."""
    mc = fresh(controller)
    mc.sync_until_steady()
    return mc


def tamper(mc: FakeMetacontroller, edit: Edit) -> None:
    """From now on the real hook answers, then ``edit`` breaks its answer in place."""
    real = mc.hook

    def hook(request: dict[str, Any]) -> Response:
        response = real(request)
        edit(response)
        return response

    mc.hook = hook


def replay(mc: FakeMetacontroller, edit: Edit | None = None) -> None:
    """From now on every sync gets the last real answer (optionally edited): a frozen desired state."""
    frozen = copy.deepcopy(mc.last_response)
    if edit is not None:
        edit(frozen)
    mc.hook = lambda request: copy.deepcopy(frozen)


def find(response: Response, kind: str, name: str) -> dict[str, Any]:
    return next(c for c in response["children"] if c["kind"] == kind and c["metadata"]["name"] == name)


def find_key(response: Response, key: str) -> dict[str, Any]:
    """``key`` as in ``Writes``: ``Job.batch/v1/pi-launcher``."""
    gvk, name = key.rsplit("/", 1)
    return find(response, gvk.split(".")[0], name)


def snapshot(mc: FakeMetacontroller) -> Any:
    return copy.deepcopy((mc.objects, mc.parent))


def stored(mc: FakeMetacontroller, kind: str, name: str) -> dict[str, Any]:
    obj = mc.get(kind, name)
    assert obj is not None, f"no {kind} {name}"
    return obj


# --- the positive case ---------------------------------------------------------------------------------


def test_the_real_hook_creates_the_six_children_then_goes_quiet() -> None:
    mc = fresh()

    first = mc.sync()

    assert sorted(first.created) == sorted(CHILDREN)
    assert (first.updated, first.deleted, first.status) == ([], [], 1)
    parent_uid = mc.parent["metadata"]["uid"]
    for key in CHILDREN:
        gvk, name = key.rsplit("/", 1)
        obj = mc.objects[(gvk, name)]
        meta = obj["metadata"]
        assert meta["labels"]["controller-uid"] == parent_uid
        assert [(r["kind"], r["uid"], r["controller"]) for r in meta["ownerReferences"]] == [
            ("MPIJob", parent_uid, True)
        ]
        assert LAST_APPLIED in meta["annotations"]
    assert mc.names("Pod") == ["pi-worker-0", "pi-worker-1"]
    assert mc.status["observedGeneration"] == 1

    mc.sync_until_steady()
    assert mc.sync().total == 0


# --- strict response ------------------------------------------------------------------------------


def _rename(old: str, new: str) -> Edit:
    return lambda r: r.__setitem__(new, r.pop(old))


BROKEN_RESPONSES: dict[str, Edit] = {
    "Children-capitalised": _rename("children", "Children"),
    "Status-capitalised": _rename("status", "Status"),
    "resyncAfter-typo": _rename("resyncAfterSeconds", "resyncAfter"),
    "status-missing": lambda r: r.pop("status"),
    "status-null": lambda r: r.__setitem__("status", None),
    "status-a-string": lambda r: r.__setitem__("status", "Running"),
    "children-missing": lambda r: r.pop("children"),
    "children-null": lambda r: r.__setitem__("children", None),
    "children-a-map": lambda r: r.__setitem__("children", {c["metadata"]["name"]: c for c in r["children"]}),
    "a-null-child": lambda r: r["children"].append(None),
    "resyncAfterSeconds-a-string": lambda r: r.__setitem__("resyncAfterSeconds", "30"),
    "resyncAfterSeconds-a-bool": lambda r: r.__setitem__("resyncAfterSeconds", True),
    "finalized-a-string": lambda r: r.__setitem__("finalized", "yes"),
}


@pytest.mark.parametrize(
    "value", [None, 0, 12, 2.5], ids=["resync-null", "resync-zero", "resync-int", "resync-float"]
)
def test_a_well_typed_resync_after_seconds_is_accepted(value: Any) -> None:
    mc = steady()
    tamper(mc, lambda r: r.__setitem__("resyncAfterSeconds", value))

    assert mc.sync().total == 0


# --- children the real Metacontroller rejects or mishandles ----------------------------


def _edit_child(kind: str, name: str, change: Callable[[dict[str, Any]], None]) -> Edit:
    return lambda r: change(find(r, kind, name))


def _add_child(child: dict[str, Any]) -> Edit:
    return lambda r: r["children"].append(copy.deepcopy(child))


def _duplicate(kind: str, name: str, *, drop_namespace: bool = False) -> Edit:
    def edit(r: Response) -> None:
        twin = copy.deepcopy(find(r, kind, name))
        if drop_namespace:
            twin["metadata"].pop("namespace", None)
        r["children"].append(twin)

    return edit


def _set_meta(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda c: c["metadata"].__setitem__(field, value)


def _generate_name(child: dict[str, Any]) -> None:
    child["metadata"]["generateName"] = child["metadata"].pop("name")[:-1]


VOLCANO_PODGROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "pi"},
    "spec": {"minMember": 3},
}

BROKEN_CHILDREN: dict[str, Edit] = {
    "worker-without-kind": _edit_child("Pod", "pi-worker-0", lambda c: c.pop("kind")),
    "launcher-without-apiVersion": _edit_child("Job", "pi-launcher", lambda c: c.pop("apiVersion")),
    "launcher-batch-v1beta1": _edit_child(
        "Job", "pi-launcher", lambda c: c.update(apiVersion="batch/v1beta1")
    ),
    "launcher-core-v1": _edit_child("Job", "pi-launcher", lambda c: c.update(apiVersion="v1")),
    "configmap-v2": _edit_child("ConfigMap", "pi-config", lambda c: c.update(apiVersion="v2")),
    "undeclared-volcano-podgroup": _add_child(VOLCANO_PODGROUP),
    "secret-without-metadata": _edit_child("Secret", "pi-ssh", lambda c: c.pop("metadata")),
    "service-without-name": _edit_child("Service", "pi", lambda c: c["metadata"].pop("name")),
    "service-empty-name": _edit_child("Service", "pi", _set_meta("name", "")),
    "worker-generateName": _edit_child("Pod", "pi-worker-1", _generate_name),
    "configmap-other-namespace": _edit_child("ConfigMap", "pi-config", _set_meta("namespace", "kube-system")),
    "worker-foreign-controller-uid": _edit_child(
        "Pod", "pi-worker-0", lambda c: c["metadata"].setdefault("labels", {}).update({"controller-uid": "x"})
    ),
    "duplicate-worker": _duplicate("Pod", "pi-worker-1"),
    "duplicate-worker-namespace-defaulted": _duplicate("Pod", "pi-worker-1", drop_namespace=True),
    "configmap-with-ownerReferences": _edit_child(
        "ConfigMap",
        "pi-config",
        _set_meta(
            "ownerReferences",
            [
                {
                    "apiVersion": "kubeflow.org/v2beta1",
                    "kind": "MPIJob",
                    "name": "pi",
                    "uid": "u",
                    "controller": True,
                }
            ],
        ),
    ),
}


# A malformed response, or a child the real Metacontroller rejects: either way nothing is applied.
REJECTED: dict[str, Edit] = {**BROKEN_RESPONSES, **BROKEN_CHILDREN}


@pytest.mark.parametrize("scenario", ["first-sync", "steady"])
@pytest.mark.parametrize("edit", REJECTED.values(), ids=REJECTED.keys())
def test_a_rejected_response_aborts_the_sync_before_anything_is_applied(scenario: str, edit: Edit) -> None:
    """No create, no update, no delete, no status write: the checks run before ``ManageChildren``."""
    mc = fresh() if scenario == "first-sync" else steady()
    before = snapshot(mc)
    tamper(mc, edit)

    with pytest.raises(ContractViolation):
        mc.sync()

    assert snapshot(mc) == before
    if scenario == "first-sync":
        assert mc.objects == {}
        assert "status" not in mc.parent


def test_a_foreign_controller_uid_on_the_first_sync_creates_nothing_and_writes_no_status() -> None:
    mc = fresh()
    tamper(mc, BROKEN_CHILDREN["worker-foreign-controller-uid"])

    with pytest.raises(ContractViolation, match="don't match parent selector"):
        mc.sync()

    assert mc.objects == {}
    assert "status" not in mc.parent
    assert mc.history == []


ACCEPTED_CHILDREN: dict[str, Callable[[FakeMetacontroller], Edit]] = {
    "own-controller-uid": lambda mc: _edit_child(
        "Pod",
        "pi-worker-0",
        lambda c: (
            c["metadata"].setdefault("labels", {}).update({"controller-uid": mc.parent["metadata"]["uid"]})
        ),
    ),
    "parent-namespace-explicit": lambda mc: _edit_child(
        "ConfigMap", "pi-config", _set_meta("namespace", "default")
    ),
    "namespace-omitted": lambda mc: _edit_child(
        "ConfigMap", "pi-config", lambda c: c["metadata"].pop("namespace")
    ),
}


@pytest.mark.parametrize("make_edit", ACCEPTED_CHILDREN.values(), ids=ACCEPTED_CHILDREN.keys())
def test_what_metacontroller_would_add_anyway_is_accepted(
    make_edit: Callable[[FakeMetacontroller], Edit],
) -> None:
    mc = fresh()
    tamper(mc, make_edit(mc))

    assert sorted(mc.sync().created) == sorted(CHILDREN)
    assert mc.sync_until_steady() >= 1


# --- deletion by omission -------------------------------------------------------------------------


@pytest.mark.parametrize("omitted", CHILDREN)
def test_an_omitted_child_is_deleted(omitted: str) -> None:
    mc = steady()
    tamper(mc, lambda r: r["children"].remove(find_key(r, omitted)))

    writes = mc.sync()

    assert writes.deleted == [omitted]
    assert (writes.created, writes.updated) == ([], [])
    gvk, name = omitted.rsplit("/", 1)
    assert (gvk, name) not in mc.objects


def test_an_omitted_worker_is_deleted_and_recreated_once_the_hook_returns_it_again() -> None:
    mc = steady()
    real = mc.hook
    tamper(mc, lambda r: r["children"].remove(find(r, "Pod", "pi-worker-1")))

    assert mc.sync().deleted == ["Pod.v1/pi-worker-1"]
    assert mc.get("Pod", "pi-worker-1") is None

    mc.hook = real
    assert mc.sync().created == ["Pod.v1/pi-worker-1"]


def test_returning_only_a_status_deletes_every_child() -> None:
    """Pitfall 1: ``children: []`` is not an error, it is "delete everything"."""
    mc = steady()
    tamper(mc, lambda r: r.__setitem__("children", []))

    writes = mc.sync()

    assert sorted(writes.deleted) == sorted(CHILDREN)
    assert mc.names("Pod") == mc.names("Job") == mc.names("ConfigMap") == []


def test_an_omitted_child_that_is_being_deleted_is_not_deleted_again() -> None:
    mc = steady()
    mc.delete("Pod", "pi-worker-1", graceful=True)
    replay(mc, lambda r: r["children"].remove(find(r, "Pod", "pi-worker-1")))

    writes = mc.sync()

    assert writes.total == 0
    assert stored(mc, "Pod", "pi-worker-1")["metadata"]["deletionTimestamp"]


def _new_image(child: dict[str, Any]) -> None:
    child["spec"]["containers"][0]["image"] = "mpioperator/mpi-pi:v2"


def _new_hostfile(child: dict[str, Any]) -> None:
    child["data"]["hostfile"] = "pi-worker-0.pi.default.svc slots=1\n"


@pytest.mark.parametrize(
    ("kind", "name", "change"),
    [("Pod", "pi-worker-1", _new_image), ("ConfigMap", "pi-config", _new_hostfile)],
    ids=["OnDelete-worker", "InPlace-configmap"],
)
def test_a_returned_child_that_is_being_deleted_is_untouched_until_gone_then_recreated(
    kind: str, name: str, change: Callable[[dict[str, Any]], None]
) -> None:
    mc = steady()
    mc.delete(kind, name, graceful=True)
    before = copy.deepcopy(stored(mc, kind, name))
    replay(mc, _edit_child(kind, name, change))

    assert mc.sync().total == 0
    assert stored(mc, kind, name) == before

    mc.finish_deletions()
    assert mc.get(kind, name) is None

    writes = mc.sync()
    gvk = next(k for k in CHILD_KINDS if k.startswith(f"{kind}."))
    assert (writes.created, writes.updated, writes.deleted) == ([f"{gvk}/{name}"], [], [])
    recreated = stored(mc, kind, name)
    assert "deletionTimestamp" not in recreated["metadata"]
    expected = copy.deepcopy(find(mc.last_response, kind, name))
    assert {k: v for k, v in recreated.items() if k not in ("metadata", "status")} == {
        k: v for k, v in expected.items() if k not in ("metadata", "status")
    }


# --- update strategies and the 3-way merge --------------------------------------------------------


ON_DELETE_CHANGES: dict[str, tuple[str, str, Callable[[dict[str, Any]], None]]] = {
    "worker-image": ("Pod", "pi-worker-0", _new_image),
    "worker-label": ("Pod", "pi-worker-1", lambda c: c["metadata"]["labels"].update(extra="1")),
    "secret-key": ("Secret", "pi-ssh", lambda c: c["data"].update({"ssh-privatekey": "cm90YXRlZA=="})),
    "launcher-deadline": ("Job", "pi-launcher", lambda c: c["spec"].update(activeDeadlineSeconds=60)),
    "launcher-template": ("Job", "pi-launcher", lambda c: _new_image(c["spec"]["template"])),
}


@pytest.mark.parametrize(("kind", "name", "change"), ON_DELETE_CHANGES.values(), ids=ON_DELETE_CHANGES.keys())
def test_an_on_delete_child_is_never_updated(
    kind: str, name: str, change: Callable[[dict[str, Any]], None]
) -> None:
    mc = steady()
    before = copy.deepcopy(stored(mc, kind, name))
    replay(mc, _edit_child(kind, name, change))

    assert mc.sync().total == 0
    assert stored(mc, kind, name) == before


def test_a_child_resource_without_update_strategy_is_on_delete() -> None:
    controller = composite_controller()
    for rule in controller["spec"]["childResources"]:
        if rule["resource"] == "configmaps":
            del rule["updateStrategy"]
    mc = steady(controller)
    before = copy.deepcopy(stored(mc, "ConfigMap", "pi-config"))
    replay(mc, _edit_child("ConfigMap", "pi-config", _new_hostfile))

    assert mc.sync().total == 0
    assert stored(mc, "ConfigMap", "pi-config") == before


IN_PLACE_CHANGES: dict[
    str, tuple[str, str, Callable[[dict[str, Any]], None], Callable[[dict[str, Any]], Any]]
] = {
    "configmap-data": (
        "ConfigMap",
        "pi-config",
        _new_hostfile,
        lambda o: o["data"]["hostfile"] == "pi-worker-0.pi.default.svc slots=1\n",
    ),
    "configmap-new-key": (
        "ConfigMap",
        "pi-config",
        lambda c: c["data"].update(extra="x"),
        lambda o: o["data"]["extra"] == "x",
    ),
    "service-spec": (
        "Service",
        "pi",
        lambda c: c["spec"].update(publishNotReadyAddresses=True),
        lambda o: o["spec"]["publishNotReadyAddresses"] is True,
    ),
    "service-label": (
        "Service",
        "pi",
        lambda c: c["metadata"]["labels"].update(tier="mpi"),
        lambda o: o["metadata"]["labels"]["tier"] == "mpi",
    ),
}


@pytest.mark.parametrize(
    ("kind", "name", "change", "check"), IN_PLACE_CHANGES.values(), ids=IN_PLACE_CHANGES.keys()
)
def test_an_in_place_child_is_updated_once_then_left_alone(
    kind: str, name: str, change: Callable[[dict[str, Any]], None], check: Callable[[dict[str, Any]], Any]
) -> None:
    mc = steady()
    gvk = next(k for k in CHILD_KINDS if k.startswith(f"{kind}."))
    replay(mc, _edit_child(kind, name, change))

    writes = mc.sync()

    assert (writes.updated, writes.created, writes.deleted) == ([f"{gvk}/{name}"], [], [])
    assert check(stored(mc, kind, name))
    assert mc.sync().total == 0


DROPPED_FIELDS: dict[str, tuple[str, str, list[str]]] = {
    "configmap-data-key": ("ConfigMap", "pi-config", ["data", "discover_hosts.sh"]),
    "configmap-label": ("ConfigMap", "pi-config", ["metadata", "labels", "app"]),
    "service-selector": ("Service", "pi", ["spec", "selector"]),
}


@pytest.mark.parametrize(("kind", "name", "path"), DROPPED_FIELDS.values(), ids=DROPPED_FIELDS.keys())
def test_a_field_the_hook_stops_setting_is_removed_from_an_in_place_child(
    kind: str, name: str, path: list[str]
) -> None:
    mc = steady()
    *parents, last = path

    def drop(child: dict[str, Any]) -> None:
        node = child
        for key in parents:
            node = node[key]
        del node[last]

    replay(mc, _edit_child(kind, name, drop))

    assert len(mc.sync().updated) == 1
    node = stored(mc, kind, name)
    for key in parents:
        node = node[key]
    assert last not in node
    assert mc.sync().total == 0


def test_a_field_someone_else_set_on_an_in_place_child_is_kept() -> None:
    """3-way merge: only fields recorded in last-applied are ours to remove."""
    mc = steady()
    replay(mc)
    config = stored(mc, "ConfigMap", "pi-config")
    config["metadata"]["annotations"]["note"] = "added by kubectl"
    config["data"]["user-key"] = "kept"

    assert mc.sync().total == 0
    config = stored(mc, "ConfigMap", "pi-config")
    assert config["metadata"]["annotations"]["note"] == "added by kubectl"
    assert config["data"]["user-key"] == "kept"


def test_the_hook_cannot_write_a_child_status() -> None:
    """child status is reverted before comparing (and ignored on create)."""
    lb = {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}
    mc = fresh()
    tamper(mc, _edit_child("Service", "pi", lambda c: c.update(status=lb)))
    mc.sync_until_steady()
    assert stored(mc, "Service", "pi").get("status") != lb

    mc = steady()
    replay(mc, _edit_child("Service", "pi", lambda c: c.update(status=lb)))
    mc.sync_until_steady()
    assert stored(mc, "Service", "pi").get("status") != lb


# --- status ---------------------------------------------------------------------------------------


def test_the_status_is_replaced_wholesale() -> None:
    mc = steady()
    assert "startTime" in mc.status
    tamper(mc, lambda r: r["status"].pop("startTime"))

    writes = mc.sync()

    assert writes.status == 1
    assert "startTime" not in mc.status
    assert mc.status["observedGeneration"] == 1


def test_an_empty_status_wipes_everything_but_observed_generation() -> None:
    mc = steady()
    tamper(mc, lambda r: r.__setitem__("status", {}))

    assert mc.sync().status == 1
    assert mc.status == {"observedGeneration": 1}


def test_observed_generation_is_injected_from_the_parent() -> None:
    mc = steady()
    replay(mc, lambda r: r["status"].update(observedGeneration=42))

    assert mc.sync().total == 0  # the injected value equals the stored one: no write
    assert mc.status["observedGeneration"] == 1

    mc.edit_spec("runPolicy.backoffLimit", 3)
    writes = mc.sync()

    assert writes.status == 1
    assert mc.status["observedGeneration"] == 2


def test_the_same_status_again_is_not_a_write() -> None:
    mc = steady()
    replay(mc)
    version = mc.parent["metadata"]["resourceVersion"]

    assert mc.sync().total == 0
    assert mc.parent["metadata"]["resourceVersion"] == version


def _first_condition(change: Callable[[dict[str, Any]], None]) -> Edit:
    return lambda r: change(r["status"]["conditions"][0])


def _duplicate_condition(r: Response) -> None:
    conditions = r["status"]["conditions"]
    conditions.append({**conditions[0], "status": "False"})


def _replica_status(**fields: Any) -> Edit:
    return lambda r: r["status"].setdefault("replicaStatuses", {}).setdefault("Worker", {}).update(fields)


INVALID_STATUSES: dict[str, Edit] = {
    "condition-status-true-lowercase": _first_condition(lambda c: c.update(status="true")),
    "condition-status-bool": _first_condition(lambda c: c.update(status=True)),
    "condition-without-type": _first_condition(lambda c: c.pop("type")),
    "condition-without-status": _first_condition(lambda c: c.pop("status")),
    "duplicate-condition-type": _duplicate_condition,
    "conditions-a-map": lambda r: r["status"].update(conditions={"Created": "True"}),
    "startTime-yesterday": lambda r: r["status"].update(startTime="yesterday"),
    "startTime-month-13": lambda r: r["status"].update(startTime="2026-13-04T09:00:00Z"),
    "startTime-no-timezone": lambda r: r["status"].update(startTime="2026-05-04T09:00:00"),
    "startTime-space-separator": lambda r: r["status"].update(startTime="2026-05-04 09:00:00Z"),
    "lastTransitionTime-hour-25": _first_condition(
        lambda c: c.update(lastTransitionTime="2026-05-04T25:00:00Z")
    ),
    "completionTime-a-number": lambda r: r["status"].update(completionTime=1777885200),
    "worker-active-a-string": _replica_status(active="2"),
    "replicaStatuses-a-list": lambda r: r["status"].update(replicaStatuses=[]),
}


@pytest.mark.parametrize("edit", INVALID_STATUSES.values(), ids=INVALID_STATUSES.keys())
def test_a_status_the_crd_schema_rejects_is_a_sync_error(edit: Edit) -> None:
    mc = steady()
    before = copy.deepcopy(mc.parent)
    tamper(mc, edit)

    with pytest.raises(ContractViolation):
        mc.sync()

    assert mc.parent == before


VALID_STATUSES: dict[str, Edit] = {
    "fractional-seconds": lambda r: r["status"].update(startTime="2026-05-04T09:00:00.123456Z"),
    "offset": lambda r: r["status"].update(startTime="2026-05-04T11:00:00+02:00"),
    "lowercase-t-and-z": lambda r: r["status"].update(startTime="2026-05-04t09:00:00z"),
    "condition-status-Unknown": _first_condition(lambda c: c.update(status="Unknown")),
}


@pytest.mark.parametrize("edit", VALID_STATUSES.values(), ids=VALID_STATUSES.keys())
def test_a_status_the_crd_schema_accepts_is_written(edit: Edit) -> None:
    mc = steady()
    replay(mc, edit)

    assert mc.sync().status == 1
    assert mc.sync().total == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r["status"].update(lastSyncedBy="hook"),
        _first_condition(lambda c: c.update(severity="Info")),
        _replica_status(ready=2),
    ],
    ids=["top-level", "in-a-condition", "in-replicaStatuses"],
)
def test_an_unknown_status_field_is_pruned_not_rejected(edit: Edit) -> None:
    """The apiserver drops fields outside the schema; Metacontroller then sees a diff on every sync."""
    mc = steady()
    replay(mc, edit)

    assert mc.sync().status == 1
    assert "lastSyncedBy" not in mc.status
    assert all("severity" not in c for c in mc.status["conditions"])
    assert "ready" not in mc.status.get("replicaStatuses", {}).get("Worker", {})
    with pytest.raises(AssertionError, match="still writing"):
        mc.sync_until_steady()


# --- a parent being deleted ----------------------------------------------------------------------


def test_a_parent_being_deleted_gets_its_status_but_its_children_are_not_managed() -> None:
    mc = steady()
    mc.parent["metadata"]["deletionTimestamp"] = stamp(mc.now)
    objects = copy.deepcopy(mc.objects)

    def edit(r: Response) -> None:
        r["children"] = []
        r["status"].pop("startTime")

    tamper(mc, edit)
    writes = mc.sync()

    assert (writes.deleted, writes.created, writes.updated, writes.status) == ([], [], [], 1)
    assert mc.objects == objects
    assert "startTime" not in mc.status


def test_a_parent_being_deleted_gets_no_new_children() -> None:
    mc = fresh()
    mc.parent["metadata"]["deletionTimestamp"] = stamp(mc.now)

    writes = mc.sync()

    assert (writes.created, writes.status) == ([], 1)
    assert mc.objects == {}


# --- request shape --------------------------------------------------------------------------------


def test_every_declared_child_kind_is_in_the_request_even_when_empty() -> None:
    controller = composite_controller()
    controller["spec"]["childResources"].append(
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "resource": "podgroups"}
    )
    mc = fresh(controller)

    request = mc.request()

    assert request["children"] == {
        key: {} for key in [*CHILD_KINDS, "PodGroup.scheduling.volcano.sh/v1beta1"]
    }
    assert request["finalizing"] is False
    assert request["controller"] == controller


@pytest.mark.parametrize(
    ("version", "prefix"), [("v1", ""), ("v2", "default/")], ids=["v1-name", "v2-ns/name"]
)
def test_children_and_related_keys_follow_the_hook_version(version: str, prefix: str) -> None:
    mc = steady(composite_controller(version=version))
    launcher_pod = mc.start_launcher_pod()

    request = mc.request()

    expected: dict[str, set[str]] = {key: set() for key in CHILD_KINDS}
    for key in CHILDREN:
        gvk, name = key.rsplit("/", 1)
        expected[gvk].add(f"{prefix}{name}")
    assert {gvk: set(group) for gvk, group in request["children"].items()} == expected
    assert set(request["related"]["Pod.v1"]) == {f"{prefix}{launcher_pod}"}


def test_launcher_pods_are_related_only_with_the_customize_hook_and_never_children() -> None:
    with_customize = steady()
    pod = with_customize.start_launcher_pod()
    request = with_customize.request()
    assert [o["metadata"]["name"] for o in request["related"]["Pod.v1"].values()] == [pod]
    assert pod not in {o["metadata"]["name"] for o in request["children"]["Pod.v1"].values()}

    without = steady(composite_controller(customize=False))
    pod = without.start_launcher_pod()
    request = without.request()
    assert request["related"] == {}
    assert pod not in {o["metadata"]["name"] for o in request["children"]["Pod.v1"].values()}


@pytest.mark.parametrize(("version", "delivered"), [("v1", set()), ("v2", {"high"})])
def test_priority_classes_are_related_with_a_podgroup_child_and_v2_hooks_only(
    version: str, delivered: set[str]
) -> None:
    controller = composite_controller(version=version)
    controller["spec"]["childResources"].append(
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "resource": "podgroups"}
    )
    mc = fresh(controller)
    mc.add_priority_class("high", 1000)
    assert set(mc.request()["related"]["PriorityClass.scheduling.k8s.io/v1"]) == delivered

    base = fresh(composite_controller(version=version))
    base.add_priority_class("high", 1000)
    assert set(base.request()["related"]) == {"Pod.v1"}


def _foreign(kind: str, name: str, *, owner_uid: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"foreign-{name}",
            "labels": labels or {},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "x",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "data": {"owner": "someone else"},
    }


def test_children_owned_by_someone_else_are_neither_listed_nor_deleted() -> None:
    mc = steady()
    uid = mc.parent["metadata"]["uid"]
    mc.objects[("Pod.v1", "intruder")] = _foreign("Pod", "intruder", owner_uid="rs-1")
    mc.objects[("Pod.v1", "labelled")] = _foreign(
        "Pod", "labelled", owner_uid="rs-2", labels={"controller-uid": uid}
    )
    launcher_pod = mc.start_launcher_pod()  # controlled by the launcher Job: a grandchild
    foreign = {
        key: copy.deepcopy(mc.objects[("Pod.v1", key)]) for key in ("intruder", "labelled", launcher_pod)
    }

    listed = {o["metadata"]["name"] for o in mc.request()["children"]["Pod.v1"].values()}
    assert listed == {"pi-worker-0", "pi-worker-1"}

    mc.sync_until_steady()
    assert all(writes.deleted == [] for writes in mc.history)
    assert {name: mc.objects[("Pod.v1", name)] for name in foreign} == foreign


def test_a_name_taken_by_someone_else_is_not_overwritten() -> None:
    """the create fails with a swallowed AlreadyExists; the foreign object stays as it is."""
    mc = fresh()
    squatter = _foreign("ConfigMap", "pi-config", owner_uid="rs-1")
    mc.objects[("ConfigMap.v1", "pi-config")] = copy.deepcopy(squatter)

    writes = mc.sync()

    assert "ConfigMap.v1/pi-config" not in writes.created + writes.updated
    assert stored(mc, "ConfigMap", "pi-config") == squatter
    mc.sync_until_steady()
    assert stored(mc, "ConfigMap", "pi-config") == squatter


# --- write loops ---------------------------------------------------------------------------------------


def _flip(edit: Callable[[Response, int], None]) -> Callable[[], Edit]:
    """A fresh edit whose effect depends on how often it has been called."""

    def make() -> Edit:
        calls = itertools.count()
        return lambda r: edit(r, next(calls))

    return make


def echo_observed(mc: FakeMetacontroller, kind: str, *, keep_owner_references: bool) -> None:
    """Pitfall 8: the hook returns the observed child instead of a freshly generated one."""
    real = mc.hook
    gvk = next(k for k in CHILD_KINDS if k.startswith(f"{kind}."))

    def hook(request: dict[str, Any]) -> Response:
        response = real(request)
        observed = copy.deepcopy(list(request["children"][gvk].values()))
        if not keep_owner_references:
            for child in observed:
                del child["metadata"]["ownerReferences"]
        response["children"] = [c for c in response["children"] if c["kind"] != kind] + observed
        return response

    mc.hook = hook


@pytest.mark.parametrize("kind", ["ConfigMap", "Service", "Pod", "Secret", "Job"])
def test_echoing_observed_children_is_refused_for_their_owner_references(kind: str) -> None:
    mc = steady()
    before = snapshot(mc)
    echo_observed(mc, kind, keep_owner_references=True)

    with pytest.raises(ContractViolation, match="ownerReferences"):
        mc.sync()

    assert snapshot(mc) == before


WRITE_LOOPS: dict[str, Callable[[FakeMetacontroller], None]] = {
    "status-counter": lambda mc: tamper(
        mc, _flip(lambda r, n: r["status"].update(lastReconcileTime=stamp(mc.now.replace(second=n % 60))))()
    ),
    "status-alternating": lambda mc: tamper(mc, _flip(lambda r, n: _replica_status(active=n % 2)(r))()),
    "status-float-for-an-integer": lambda mc: tamper(mc, _replica_status(active=2.0)),
    "status-unknown-field": lambda mc: tamper(mc, lambda r: r["status"].update(lastSyncedBy="hook")),
    "configmap-alternating": lambda mc: tamper(
        mc, _flip(lambda r, n: find(r, "ConfigMap", "pi-config")["data"].update(flip=str(n % 2)))()
    ),
    "echo-observed-configmap": lambda mc: echo_observed(mc, "ConfigMap", keep_owner_references=False),
    "echo-observed-service": lambda mc: echo_observed(mc, "Service", keep_owner_references=False),
}


@pytest.mark.parametrize("breaker", WRITE_LOOPS.values(), ids=WRITE_LOOPS.keys())
def test_a_hook_that_writes_on_every_sync_never_becomes_steady(
    breaker: Callable[[FakeMetacontroller], None],
) -> None:
    mc = steady()
    breaker(mc)

    with pytest.raises(AssertionError, match="still writing"):
        mc.sync_until_steady()


def test_a_pure_hook_passed_to_the_constructor_is_what_gets_called() -> None:
    calls: list[dict[str, Any]] = []

    def hook(request: dict[str, Any]) -> Response:
        calls.append(request)
        return {"status": {}, "children": []}

    mc = fresh(hook=hook)

    assert mc.sync_until_steady() == 2  # the first status write, then nothing
    assert len(calls) == 2
    assert mc.objects == {}
