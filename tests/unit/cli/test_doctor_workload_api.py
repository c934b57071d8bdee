"""``mpijob doctor`` and Kubernetes' Workload API: which version the cluster serves (its discovery), which the
CompositeController declares, and the one overlay to apply (``app/cli/doctor/workload_api.py``).

The checks judge recorded snapshots (the recorded running job, changed where the check looks); the reads are
made against tests/unit/cli/test_doctor_reads.py's MockTransport server, and only when the job shows a
Workload API gone wrong: no status at all, or the hook's GangSchedulingUnavailable for the ``kubernetes``
setting.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

import pytest

from app.cli.doctor.checks import diagnose
from app.cli.doctor.snapshot import Snapshot
from app.cluster.reads import CannotRead
from app.cluster.untrusted import Hostile
from tests.unit.cli.test_doctor import recorded
from tests.unit.cli.test_doctor_hostile import _mutated
from tests.unit.cli.test_doctor_reads import Server, _gather, _recorded

V1BETA1 = "scheduling.k8s.io/v1beta1"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
BOTH = ["workloads", "podgroups"]
CONTROLLER = "/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/mpi-operator-hook"
# The hook's notice, as f3379ad writes it, and as the hook wrote it before (one version, one overlay).
UNDECLARED = (
    "MPI_OPERATOR_GANG_SCHEDULING is 'kubernetes' but the CompositeController does not declare the PodGroup"
    " child (scheduling.k8s.io/v1beta1 (Kubernetes 1.37) or v1alpha2 (1.36) workloads and podgroups); apply"
    " deploy/overlays/kubernetes/ or deploy/overlays/kubernetes-1.36/. The job runs without gang scheduling."
)
UNDECLARED_BEFORE = (
    "MPI_OPERATOR_GANG_SCHEDULING is 'kubernetes' but the CompositeController does not declare the PodGroup"
    " child (scheduling.k8s.io/v1alpha2 workloads and podgroups); apply deploy/overlays/kubernetes/."
    " The job runs without gang scheduling."
)
VOLCANO_UNDECLARED = (
    "MPI_OPERATOR_GANG_SCHEDULING is 'volcano' but the CompositeController does not declare the PodGroup"
    " child (scheduling.volcano.sh/v1beta1 podgroups); apply deploy/overlays/volcano/."
)
OLD_GANG_FIX = (
    "apply the gang scheduler's overlay (deploy/overlays/volcano, deploy/overlays/scheduler-plugins,"
    " deploy/overlays/kubernetes or deploy/overlays/kubernetes-1.36), which declares the PodGroup child, or"
    " unset MPI_OPERATOR_GANG_SCHEDULING"
)
TURN_ON = (
    "the cluster serves no Workload API; turn it on, then apply its overlay: on Kubernetes 1.37,"
    " kube-apiserver --runtime-config=scheduling.k8s.io/v1beta1=true with"
    " --feature-gates=GenericWorkload=true, then kubectl apply --server-side -k deploy/overlays/kubernetes;"
    " on 1.36, kube-apiserver"
    " --runtime-config=scheduling.k8s.io/v1alpha2=true with --feature-gates=GenericWorkload=true,"
    "GangScheduling=true, then kubectl apply --server-side -k deploy/overlays/kubernetes-1.36 (each overlay's"
    " header names the components that take the gates); "
)
OLD_SYNC_FIX = (
    "check that Metacontroller and the hook run and that the CompositeController exists: kubectl get"
    " compositecontroller mpi-operator-hook; kubectl -n metacontroller logs statefulset/metacontroller"
    " --tail=50; kubectl -n mpi-operator logs deployment/mpi-operator-hook --tail=50"
)
NOT_SERVED = {
    v: f"{v} (Kubernetes {release}): not served (GET /apis/{v}: 404 Not Found)"
    for v, release in ((V1BETA1, "1.37"), (V1ALPHA2, "1.36"))
}
FORBIDDEN = (
    "not readable (permission missing: get compositecontrollers.metacontroller.k8s.io (cluster-scoped))"
)
SERVED = {
    V1BETA1: "scheduling.k8s.io/v1beta1 (Kubernetes 1.37): served, with workloads and podgroups",
    V1ALPHA2: "scheduling.k8s.io/v1alpha2 (Kubernetes 1.36): served, with workloads and podgroups",
}


def _undeclared(message: str = UNDECLARED, apis: dict[str, list[str]] | None = None) -> Snapshot:
    snap = copy.deepcopy(recorded("running"))
    assert snap.job is not None
    condition = {
        "type": "GangSchedulingUnavailable",
        "status": "True",
        "reason": "PodGroupChildNotDeclared",
        "message": message,
    }
    snap.job["status"]["conditions"].insert(0, condition)
    snap.workload_apis = apis
    return snap


def _children(*versions: str) -> list[dict[str, str]]:
    base = [{"apiVersion": "v1", "resource": "pods"}, {"apiVersion": "batch/v1", "resource": "jobs"}]
    return base + [{"apiVersion": v, "resource": r} for v in versions for r in BOTH]


def _never_synced(
    apis: dict[str, list[str]] | None, children: list[dict[str, str]] | None, unreadable: str = ""
) -> Snapshot:
    snap = copy.deepcopy(recorded("running"))
    assert snap.job is not None
    snap.job.pop("status")
    snap.job["metadata"]["creationTimestamp"] = "2026-12-04T04:15:00Z"  # 68 s before the snapshot
    snap.service = snap.config = None
    snap.pods, snap.launcher = [], None
    snap.workload_apis, snap.controller_children, snap.controller_unreadable = apis, children, unreadable
    return snap


# --- gang-scheduling-unavailable: the one overlay the cluster serves ----------------------------------------

UNDECLARED_CASES: dict[str, tuple[Snapshot, str, tuple[str, ...]]] = {
    "served v1beta1: deploy/overlays/kubernetes": (
        _undeclared(apis={V1BETA1: BOTH}),
        "the cluster serves scheduling.k8s.io/v1beta1 (Kubernetes 1.37): kubectl apply --server-side -k"
        " deploy/overlays/kubernetes",
        (SERVED[V1BETA1], NOT_SERVED[V1ALPHA2]),
    ),
    "served v1alpha2: deploy/overlays/kubernetes-1.36": (
        _undeclared(apis={V1ALPHA2: BOTH}),
        "the cluster serves scheduling.k8s.io/v1alpha2 (Kubernetes 1.36): kubectl apply --server-side -k"
        " deploy/overlays/kubernetes-1.36",
        (NOT_SERVED[V1BETA1], SERVED[V1ALPHA2]),
    ),
    "the notice of the hook before f3379ad": (
        _undeclared(UNDECLARED_BEFORE, apis={V1ALPHA2: BOTH}),
        "the cluster serves scheduling.k8s.io/v1alpha2 (Kubernetes 1.36): kubectl apply --server-side -k"
        " deploy/overlays/kubernetes-1.36",
        (NOT_SERVED[V1BETA1], SERVED[V1ALPHA2]),
    ),
    "neither served: how to turn it on": (
        _undeclared(apis={}),
        TURN_ON + "or unset MPI_OPERATOR_GANG_SCHEDULING",
        (NOT_SERVED[V1BETA1], NOT_SERVED[V1ALPHA2]),
    ),
    "v1beta1 served without its Workloads: a gate off": (
        _undeclared(apis={V1BETA1: ["podgroups"]}),
        TURN_ON + "or unset MPI_OPERATOR_GANG_SCHEDULING",
        (
            "scheduling.k8s.io/v1beta1 (Kubernetes 1.37): served without workloads (feature gate"
            " GenericWorkload off?)",
            NOT_SERVED[V1ALPHA2],
        ),
    ),
    "not read (a snapshot saved before): every overlay": (_undeclared(apis=None), OLD_GANG_FIX, ()),
    "Volcano's undeclared: every overlay": (
        _undeclared(VOLCANO_UNDECLARED, apis={V1BETA1: BOTH}),
        OLD_GANG_FIX,
        (),
    ),
}


@pytest.mark.parametrize("case", UNDECLARED_CASES)
def test_an_undeclared_workload_api_names_the_overlay_the_cluster_serves(case: str) -> None:
    snap, fix, served = UNDECLARED_CASES[case]
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "gang-scheduling-unavailable", problem
    assert problem.fix == fix
    assert problem.evidence[0].startswith(
        "condition GangSchedulingUnavailable=True (PodGroupChildNotDeclared):"
    )
    assert problem.evidence[1:] == served


def test_a_refused_topology_key_names_both_workload_api_overlays() -> None:
    snap = _undeclared("only kubernetes", apis=None)
    assert snap.job is not None
    snap.job["status"]["conditions"][0]["reason"] = "TopologyNeedsWorkloadAPI"
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "gang-scheduling-unavailable"
    assert problem.fix == (
        "remove the annotation mpi-operator-hook/gang-topology-key, or install the hook with"
        " deploy/overlays/kubernetes (Kubernetes 1.37) or deploy/overlays/kubernetes-1.36 (1.36), Kubernetes'"
        " Workload API"
    )


# --- not-synced: a declared version the cluster does not serve stops the whole controller -------------------

SUMMARY = "MPIJob pi has no status 68s after it was created: "
STOPPED = "which this cluster ({}) does not serve: Metacontroller stops the whole controller"
SYNC_CASES: dict[str, tuple[Snapshot, str, str, tuple[str, ...]]] = {
    "declares v1alpha2, serves v1beta1": (
        _never_synced({V1BETA1: BOTH}, _children(V1ALPHA2)),
        "CompositeController mpi-operator-hook declares scheduling.k8s.io/v1alpha2 workloads and podgroups, "
        + STOPPED.format("serving v1beta1"),
        "apply the overlay for the version the cluster serves instead: kubectl apply --server-side -k"
        " deploy/overlays/kubernetes (scheduling.k8s.io/v1beta1, Kubernetes 1.37)",
        (SERVED[V1BETA1], NOT_SERVED[V1ALPHA2]),
    ),
    "declares v1beta1, serves v1alpha2": (
        _never_synced({V1ALPHA2: BOTH}, _children(V1BETA1)),
        "CompositeController mpi-operator-hook declares scheduling.k8s.io/v1beta1 workloads and podgroups, "
        + STOPPED.format("serving v1alpha2"),
        "apply the overlay for the version the cluster serves instead: kubectl apply --server-side -k"
        " deploy/overlays/kubernetes-1.36 (scheduling.k8s.io/v1alpha2, Kubernetes 1.36)",
        (NOT_SERVED[V1BETA1], SERVED[V1ALPHA2]),
    ),
    "declares v1beta1, serves none": (
        _never_synced({}, _children(V1BETA1)),
        "CompositeController mpi-operator-hook declares scheduling.k8s.io/v1beta1 workloads and podgroups, "
        + STOPPED.format("serving no Workload API"),
        TURN_ON + "or go without gang scheduling: kubectl apply --server-side -k deploy/",
        (NOT_SERVED[V1BETA1], NOT_SERVED[V1ALPHA2]),
    ),
    "declares the version served: the old advice": (
        _never_synced({V1BETA1: BOTH}, _children(V1BETA1)),
        "the hook has not answered for it",
        OLD_SYNC_FIX,
        (),
    ),
    "declares none: the old advice": (
        _never_synced({}, _children()),
        "the hook has not answered for it",
        OLD_SYNC_FIX,
        (),
    ),
    "not read (a snapshot saved before): the old advice": (
        _never_synced(None, None),
        "the hook has not answered for it",
        OLD_SYNC_FIX,
        (),
    ),
    "the controller not readable: the old advice, and why": (
        _never_synced(
            {V1BETA1: BOTH},
            None,
            FORBIDDEN,
        ),
        "the hook has not answered for it",
        OLD_SYNC_FIX,
        (
            "CompositeController mpi-operator-hook: not readable (permission missing: get"
            " compositecontrollers.metacontroller.k8s.io (cluster-scoped))",
        ),
    ),
    "no controller: the old advice, and that it is missing": (
        _never_synced({V1BETA1: BOTH}, None, "not found"),
        "the hook has not answered for it",
        OLD_SYNC_FIX,
        ("CompositeController mpi-operator-hook: not found",),
    ),
}


@pytest.mark.parametrize("case", SYNC_CASES)
def test_a_job_without_status_names_a_declared_version_the_cluster_does_not_serve(case: str) -> None:
    snap, cause, fix, more = SYNC_CASES[case]
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "not-synced", problem
    assert problem.summary == SUMMARY + cause
    assert problem.fix == fix
    assert problem.evidence == (
        "MPIJob pi: no conditions, created 2026-12-04T04:15:00Z",
        "children: none (no Service, ConfigMap or Pods)",
        *more,
    )


def test_the_new_fields_survive_save_and_load() -> None:
    snap = _never_synced({V1BETA1: BOTH}, _children(V1ALPHA2), "")
    loaded = Snapshot.from_json(json.loads(json.dumps(snap.to_json())))
    assert loaded == snap
    unreadable = _never_synced(None, None, "not found")
    assert Snapshot.from_json(json.loads(json.dumps(unreadable.to_json()))) == unreadable


def test_a_snapshot_saved_before_loads_with_nothing_read() -> None:
    saved = recorded("running").to_json()
    for key in ("workload_apis", "controller_children", "controller_unreadable"):
        saved.pop(key)
    snap = Snapshot.from_json(saved)
    assert (snap.workload_apis, snap.controller_children, snap.controller_unreadable) == (None, None, "")


def test_any_mutated_workload_api_snapshot_is_judged_or_refused_never_a_crash() -> None:
    rng = random.Random(20261207)
    refused = 0
    base = _never_synced({V1BETA1: BOTH}, _children(V1ALPHA2)).to_json()
    undeclared = _undeclared(apis={V1ALPHA2: ["podgroups"]}).to_json()
    for index in range(200):
        try:
            diagnose(Snapshot.from_json(_mutated(base if index % 2 else undeclared, rng), "--load x"))
        except Hostile:
            refused += 1
    assert 0 < refused < 200


# --- the reads: made only when the job shows a Workload API gone wrong -------------------------------------


def _discovery(*resources: str) -> dict[str, Any]:
    listed = [{"name": r, "kind": r.title(), "namespaced": True} for r in resources]
    return {"kind": "APIResourceList", "resources": listed + [{"name": f"{r}/status"} for r in resources]}


def _serving(server: Server, version: str, *resources: str) -> Server:
    server.objects[f"/apis/{version}"] = _discovery(*resources)
    return server


def _with_controller(server: Server, *versions: str) -> Server:
    server.objects[CONTROLLER] = {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {"name": "mpi-operator-hook", "managedFields": [{"manager": "kubectl"}]},
        "spec": {
            "parentResource": {"apiVersion": "kubeflow.org/v2beta1", "resource": "mpijobs"},
            "childResources": [
                {**child, "updateStrategy": {"method": "Recreate"}} for child in _children(*versions)
            ],
            "hooks": {"sync": {"webhook": {"url": "http://hook/sync"}}},
        },
    }
    return server


def _workload_api_reads(server: Server) -> list[str]:
    return [
        r.url.path
        for r in server.requests
        if r.url.path in (f"/apis/{V1BETA1}", f"/apis/{V1ALPHA2}") or "compositecontrollers" in r.url.path
    ]


def _server(edit: str) -> Server:
    snap = copy.deepcopy(_recorded())
    assert snap.job is not None
    if edit == "never synced":
        snap.job.pop("status")
    elif edit in ("undeclared", "volcano undeclared"):
        message = UNDECLARED if edit == "undeclared" else VOLCANO_UNDECLARED
        condition = {
            "type": "GangSchedulingUnavailable",
            "status": "True",
            "reason": "PodGroupChildNotDeclared",
            "message": message,
        }
        snap.job["status"]["conditions"].insert(0, condition)
    return _with_controller(_serving(Server(snap), V1BETA1, *BOTH), V1ALPHA2)


ALL_READS = [f"/apis/{V1BETA1}", f"/apis/{V1ALPHA2}", CONTROLLER]


@pytest.mark.parametrize(
    ("edit", "reads"),
    [
        ("running", []),
        ("volcano undeclared", []),
        ("never synced", ALL_READS),
        ("undeclared", ALL_READS),
    ],
)
def test_the_workload_api_is_read_only_when_the_job_shows_it_gone_wrong(edit: str, reads: list[str]) -> None:
    server = _server(edit)
    snap = _gather(server)
    assert _workload_api_reads(server) == reads
    if not reads:
        assert (snap.workload_apis, snap.controller_children, snap.controller_unreadable) == (None, None, "")
        return
    assert snap.workload_apis == {V1BETA1: BOTH}
    assert snap.controller_children == _children(V1ALPHA2)  # apiVersion and resource, nothing else
    assert {r.method for r in server.requests} == {"GET"}


def test_a_version_served_without_the_children_lists_what_it_has() -> None:
    server = _serving(_server("never synced"), V1ALPHA2, "podgroups")
    assert _gather(server).workload_apis == {V1BETA1: BOTH, V1ALPHA2: ["podgroups"]}


@pytest.mark.parametrize(
    ("refused", "unreadable"),
    [
        (
            ("/compositecontrollers/",),
            FORBIDDEN,
        ),
        ((), "not found"),
    ],
    ids=["forbidden", "missing"],
)
def test_a_controller_not_readable_is_noted_and_the_doctor_goes_on(
    refused: tuple[str, ...], unreadable: str
) -> None:
    server = _server("never synced")
    server.refuse = refused
    if not refused:
        del server.objects[CONTROLLER]
    snap = _gather(server)
    assert (snap.controller_children, snap.controller_unreadable) == (None, unreadable)
    problem = diagnose(snap).problem
    assert problem is not None and problem.check == "not-synced" and problem.fix == OLD_SYNC_FIX
    assert problem.evidence[-1] == f"CompositeController mpi-operator-hook: {unreadable}"


def test_the_whole_story_from_the_cluster_to_the_fix() -> None:
    problem = diagnose(_gather(_server("never synced"))).problem
    assert problem is not None and problem.summary.endswith(
        "CompositeController mpi-operator-hook declares scheduling.k8s.io/v1alpha2 workloads and podgroups,"
        " which this cluster (serving v1beta1) does not serve: Metacontroller stops the whole controller"
    )
    assert problem.fix.endswith("-k deploy/overlays/kubernetes (scheduling.k8s.io/v1beta1, Kubernetes 1.37)")


@pytest.mark.parametrize(
    ("path", "answer", "said"),
    [
        (
            CONTROLLER,
            {"kind": "ConfigMap", "metadata": {"name": "x"}},
            "a ConfigMap where a CompositeController",
        ),
        (
            CONTROLLER,
            {"kind": "CompositeController", "metadata": {"name": "x"}, "spec": {"childResources": 1}},
            "spec.childResources is not a list",
        ),
        (f"/apis/{V1BETA1}", {"resources": [{"name": 3}]}, "resources[0].name is not a string"),
    ],
    ids=["another kind", "children not a list", "a resource name not a string"],
)
def test_a_hostile_answer_is_refused_naming_the_field(path: str, answer: dict[str, Any], said: str) -> None:
    server = _server("never synced")
    server.objects[path] = answer
    with pytest.raises(CannotRead, match=re.escape(said)):
        _gather(server)
