"""The customize hook's related resources, and how the sync request's ``related`` and ``controller`` decode.

PriorityClasses are asked for only where a PodGroup child is declared (an overlay is applied): only the
PodGroup's minResources needs them, and every PriorityClass change would otherwise sync every MPIJob.
"""

from __future__ import annotations

import orjson
import pytest

from app.core.config import SyncConfig
from app.core.customize import customize
from app.kube.request import decode_request
from tests.support.builders import controller, priority_class, sync_request

PARENT = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "metadata": {"name": "pi", "namespace": "ns"},
}
LAUNCHER_PODS = {
    "apiVersion": "v1",
    "resource": "pods",
    "namespace": "ns",
    "labelSelector": {
        "matchLabels": {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "launcher"}
    },
}
PRIORITY_CLASSES = {"apiVersion": "scheduling.k8s.io/v1", "resource": "priorityclasses"}


@pytest.mark.parametrize(
    ("podgroup", "want"),
    [
        (None, [LAUNCHER_PODS]),
        ("volcano", [LAUNCHER_PODS, PRIORITY_CLASSES]),
        ("plugins", [LAUNCHER_PODS, PRIORITY_CLASSES]),
    ],
)
def test_priority_classes_are_asked_for_with_a_podgroup_child(
    podgroup: str | None, want: list[object]
) -> None:
    body = orjson.dumps({"controller": controller(podgroup=podgroup), "parent": PARENT})
    assert customize(body, SyncConfig()) == {"relatedResources": want}


def test_a_podgroup_of_no_known_scheduler_asks_for_no_priority_classes() -> None:
    """The same rule as sync's: a PodGroup child counts only in an API version the hook can build."""
    other = controller()
    other["spec"]["childResources"].append({"apiVersion": "example.com/v1", "resource": "podgroups"})
    body = orjson.dumps({"controller": other, "parent": PARENT})
    assert customize(body, SyncConfig()) == {"relatedResources": [LAUNCHER_PODS]}


def test_customize_without_a_controller_asks_for_the_launcher_pods_only() -> None:
    assert customize(orjson.dumps({"parent": PARENT}), SyncConfig()) == {"relatedResources": [LAUNCHER_PODS]}


def test_priority_values_decode_from_related() -> None:
    classes = [priority_class("high", 100_010), priority_class("low", -5), priority_class("zero", 0)]
    request = sync_request(PARENT, podgroup="volcano", priority_classes=classes)
    assert request["related"]["PriorityClass.scheduling.k8s.io/v1"].keys() == {"high", "low", "zero"}
    decoded = decode_request(orjson.dumps(request))
    assert decoded.related.priority_values == {"high": 100_010, "low": -5, "zero": 0}


def test_priority_values_are_empty_without_priority_classes() -> None:
    assert decode_request(orjson.dumps(sync_request(PARENT))).related.priority_values == {}


@pytest.mark.parametrize("podgroup", [None, "volcano", "plugins"])
def test_controller_says_which_podgroup_kind_it_declares(podgroup: str | None) -> None:
    decoded = decode_request(orjson.dumps(sync_request(PARENT, podgroup=podgroup))).controller
    assert decoded.declares_child("v1", "pods")
    declared = {
        name
        for name, api_version in (
            ("volcano", "scheduling.volcano.sh/v1beta1"),
            ("plugins", "scheduling.x-k8s.io/v1alpha1"),
        )
        if decoded.declares_child(api_version, "podgroups")
    }
    assert declared == ({podgroup} if podgroup else set())


# --- Nodes, for a job whose hostfile is ordered by its nodes' labels ---------------------------------------

ZONE, RACK = "topology.kubernetes.io/zone", "example.com/rack"


def _ordered(**annotations: str) -> bytes:
    parent = {**PARENT, "metadata": {**PARENT["metadata"], "annotations": annotations}}
    return orjson.dumps({"controller": controller(), "parent": parent})


@pytest.mark.parametrize(
    ("annotations", "config", "selector", "want"),
    [
        ({}, SyncConfig(hostfile_order_labels=(ZONE,)), None, None),
        (
            {"mpi-operator-hook/hostfile-order": "index"},
            SyncConfig(hostfile_order_labels=(ZONE,)),
            None,
            None,
        ),
        (
            {"mpi-operator-hook/hostfile-order": "topology"},
            SyncConfig(hostfile_order_labels=(ZONE, RACK)),
            None,
            {"matchExpressions": [{"key": ZONE, "operator": "Exists"}]},
        ),
        (
            {"mpi-operator-hook/hostfile-order": "topology", "mpi-operator-hook/hostfile-order-labels": RACK},
            SyncConfig(hostfile_order_labels=(ZONE,)),
            None,
            {"matchExpressions": [{"key": RACK, "operator": "Exists"}]},
        ),
        (
            {"mpi-operator-hook/hostfile-order": "topology"},
            SyncConfig(hostfile_order_labels=(ZONE,)),
            {"matchLabels": {"pool": "gpu"}},
            {"matchLabels": {"pool": "gpu"}},
        ),
        # No labels: ordered by node name, which every Pod carries; no Node is needed.
        ({"mpi-operator-hook/hostfile-order": "topology"}, SyncConfig(), None, None),
    ],
    ids=["not asked", "index", "default labels", "own labels", "the hook's selector", "no labels"],
)
def test_nodes_are_asked_for_only_for_an_ordered_job_and_bounded_by_a_selector(
    annotations: dict[str, str], config: SyncConfig, selector: dict[str, object] | None, want: object
) -> None:
    rules = customize(_ordered(**annotations), config, selector)["relatedResources"]
    nodes = [r for r in rules if r["resource"] == "nodes"]
    assert nodes == (
        [] if want is None else [{"apiVersion": "v1", "resource": "nodes", "labelSelector": want}]
    )


def test_node_labels_and_pod_bindings_decode_from_the_request() -> None:
    body = orjson.dumps(
        {
            "parent": PARENT,
            "related": {
                "Node.v1": {
                    "n1": {"metadata": {"name": "n1", "labels": {ZONE: "z1"}}, "status": {"images": []}}
                }
            },
            "children": {
                "Pod.v1": {
                    "ns/pi-worker-0": {"metadata": {"name": "pi-worker-0"}, "spec": {"nodeName": "n1"}}
                }
            },
        }
    )
    request = decode_request(body)
    assert request.related.nodes is not None and request.related.nodes["n1"].metadata.labels == {ZONE: "z1"}
    assert request.children.pods is not None and request.children.pods["ns/pi-worker-0"].spec.nodeName == "n1"


def test_a_malformed_label_list_asks_for_no_nodes_and_does_not_fail() -> None:
    """The sync calls such a job invalid (validation); the customize hook must still answer."""
    body = _ordered(
        **{"mpi-operator-hook/hostfile-order": "topology", "mpi-operator-hook/hostfile-order-labels": "a b"}
    )
    rules = customize(body, SyncConfig(hostfile_order_labels=(ZONE,)))["relatedResources"]
    assert [r["resource"] for r in rules] == ["pods"]
