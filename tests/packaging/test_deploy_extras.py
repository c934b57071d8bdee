"""The optional deploy/ pieces: NetworkPolicy, Metacontroller's least-privilege RBAC, monitoring.

Built with the real ``kubectl kustomize``; Kubernetes kinds validated against their schema. The checks
tie each piece to what it guards: the policy selects the hook's pods and ports and admits Metacontroller
alone to /sync; the ClusterRole grants exactly the kinds the CompositeController manages; the dashboard
and alerts query only metrics the hook's /metrics really exports; the memory limit fits the budget.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any

import kubernetes_validate
import pytest
import yaml
from fastapi.testclient import TestClient

from app.kube.keys import SeededKeys
from app.server.guard import SPARE_BUFFER_BYTES
from app.server.main import create_app
from app.server.memo import MAX_TOTAL_BYTES as MEMO_BYTES
from app.settings import Settings
from tests.support.paths import ROOT

WIRE = ROOT / "tests" / "fixtures" / "wire"
K8S_VERSION = "1.32.0"
MONITORING = ROOT / "deploy" / "monitoring"
# Idle RSS of a hook process and its peak growth per request byte (bench/http_bench.py measures ~1.7x;
# 3 leaves room for Pods of other shapes), plus what it keeps between requests: one spare body buffer and
# the parent memo's verdicts (~7x the parent bytes it holds, measured with tracemalloc).
IDLE_BYTES = 80 * 2**20
GROWTH_PER_REQUEST_BYTE = 3
KEPT_BYTES = SPARE_BUFFER_BYTES + 8 * MEMO_BYTES
# Each open connection: ~8 KiB of protocol and transport (1,000 idle connections raised RSS by 8 MB,
# bench/load_bench.py), plus at most the header cap while its header is unfinished.
CONNECTION_OVERHEAD_BYTES = 8 * 1024


def kustomize(directory: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is not on PATH in CI")
        pytest.skip("kubectl is not on PATH")
    done = subprocess.run(
        [kubectl, "kustomize", str(ROOT / directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def _validate(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# ------------------------------------------------------------------------------------------ NetworkPolicy


def test_network_policy_admits_only_metacontroller_to_the_hook() -> None:
    built = kustomize("deploy")
    policy = one(built, "NetworkPolicy")
    _validate(policy)
    deployment = one(built, "Deployment")
    pod = deployment["spec"]["template"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    ports = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
    rules = {r["ports"][0]["port"]: r["from"] for r in policy["spec"]["ingress"]}
    assert set(rules) == ports == {"http", "metrics"}
    (metacontroller,) = rules["http"]
    assert metacontroller["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "metacontroller"
    }
    assert metacontroller["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "metacontroller"}
    # Egress: the API server's ports (Events) and DNS, nothing else.
    assert "Egress" in policy["spec"]["policyTypes"]
    egress = [(p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]]
    assert sorted(egress) == [(53, "TCP"), (53, "UDP"), (443, "TCP"), (6443, "TCP")]
    assert not any("to" in rule for rule in policy["spec"]["egress"])


# ------------------------------------------------------------------------------------------ the hook's RBAC


def test_the_hooks_account_may_only_create_events() -> None:
    """Least privilege: one ClusterRole with one rule, create on core Events, bound to the account the
    Deployment's Pods run as and no other; no Role or binding gives that account anything more. (deploy/
    adds Metacontroller's own account and roles: tests/packaging/test_manifests.py.)"""
    built = kustomize("deploy/hook-only")
    roles = [o for o in built if o["kind"] in ("ClusterRole", "Role")]
    bindings = [o for o in built if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    for obj in roles + bindings:
        _validate(obj)
    (role,) = roles
    assert role["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    assert _grants(role) == {("", "events"): {"create"}}
    pod = one(built, "Deployment")["spec"]["template"]["spec"]
    namespace = one(built, "Deployment")["metadata"]["namespace"]
    (binding,) = bindings
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": role["kind"],
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": pod["serviceAccountName"], "namespace": namespace}
    ]
    assert pod["automountServiceAccountToken"] is True
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["MPI_OPERATOR_EVENTS"] == "auto"


# ------------------------------------------------------------------------------------------ RBAC overlay


def _grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants


def test_metacontroller_cluster_role_is_exactly_what_the_controller_needs() -> None:
    built = kustomize("deploy/metacontroller-rbac")
    for obj in built:
        _validate(obj)
    grants = _grants(one(built, "ClusterRole"))
    assert not any("*" in key or "*" in verbs for key, verbs in grants.items()), "no wildcards"
    (controller,) = yaml.safe_load_all((ROOT / "metacontroller" / "compositecontroller.yaml").read_text())
    manage = {"get", "list", "watch", "create", "update", "patch", "delete"}
    for child in controller["spec"]["childResources"]:
        group = child["apiVersion"].rpartition("/")[0]
        assert grants[(group, child["resource"])] == manage, child
    parent = controller["spec"]["parentResource"]
    group = parent["apiVersion"].rpartition("/")[0]
    assert grants[(group, parent["resource"])] == {"get", "list", "watch", "update", "patch"}
    assert grants[(group, parent["resource"] + "/status")] == {"get", "update", "patch"}
    assert grants[("", "events")] == {"create", "patch"}
    forbidden = {("", "pods/exec"), ("rbac.authorization.k8s.io", "clusterroles")}
    assert not forbidden & set(grants)
    # The customize hook's cluster-scoped related objects: read, never written.
    assert (
        grants[("", "nodes")] == grants[("scheduling.k8s.io", "priorityclasses")] == {"get", "list", "watch"}
    )
    writable = {key for key, verbs in grants.items() if verbs & {"create", "update", "patch", "delete"}}
    children = {
        (c["apiVersion"].rpartition("/")[0], c["resource"]) for c in controller["spec"]["childResources"]
    }
    podgroups = {("scheduling.volcano.sh", "podgroups"), ("scheduling.x-k8s.io", "podgroups")}
    podgroups |= {("scheduling.k8s.io", "workloads"), ("scheduling.k8s.io", "podgroups")}
    extra = {("metacontroller.k8s.io", "controllerrevisions"), ("", "events")}
    parents = {(group, parent["resource"]), (group, parent["resource"] + "/status")}
    assert writable == children | podgroups | extra | parents
    binding = one(built, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "metacontroller", "namespace": "metacontroller"}
    ]


# ------------------------------------------------------------------------------------------ monitoring


@pytest.fixture(scope="module")
def exported_metrics() -> set[str]:
    """Metric names in /metrics after a first sync, a steady sync, a bad request and a customize."""
    client = TestClient(create_app(Settings(), SeededKeys(b"s" * 32)))
    for name in (
        "sync-request-01-first-sync-no-children.json",
        "sync-request-02-running-all-children-exist.json",
    ):
        assert client.post("/sync", content=(WIRE / name).read_bytes()).status_code == 200
    assert client.post("/sync", content=b"{}").status_code == 400
    text = client.get("/metrics").text
    return {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")
    }


_NOT_NAMES = re.compile(r'"[^"]*"|\{[^}]*\}|\[[^\]]*\]|\b(?:by|without)\s*\([^)]*\)')
_NAME = re.compile(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()")


def metric_names(expression: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers left after dropping strings, label matchers,
    ranges and grouping clauses, that are not function calls."""
    return set(_NAME.findall(_NOT_NAMES.sub(" ", expression)))


def test_dashboard_is_valid_json_querying_exported_metrics(exported_metrics: set[str]) -> None:
    dashboard = json.loads((MONITORING / "mpi-operator-hook-dashboard.json").read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(expressions) >= 8
    queried = set().union(*(metric_names(e) for e in expressions))
    assert queried and queried <= exported_metrics, queried - exported_metrics
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def test_alerts_query_exported_metrics(exported_metrics: set[str]) -> None:
    (rule,) = yaml.safe_load_all((MONITORING / "prometheusrule.yaml").read_text())
    expressions = [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]
    queried = set().union(*(metric_names(e) for e in expressions))
    assert queried and queried <= exported_metrics, queried - exported_metrics


def test_metric_name_extraction() -> None:
    assert metric_names('sum by (kind) (rate(a_total{kind="x"}[5m]))') == {"a_total"}
    assert metric_names("count(max by (namespace, launcher) (job_info))") == {"job_info"}


def test_monitoring_kustomization_targets_the_hook() -> None:
    built = kustomize("deploy/monitoring")
    monitor = one(built, "ServiceMonitor")
    service = one(kustomize("deploy"), "Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    dashboard = one(built, "ConfigMap")
    assert dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}
    json.loads(dashboard["data"]["mpi-operator-hook-dashboard.json"])


# ------------------------------------------------------------------------------------------ sizing


def _bytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) * {"Mi": 2**20, "Gi": 2**30}[unit]


def test_memory_limit_holds_the_memory_budget() -> None:
    (container,) = one(kustomize("deploy"), "Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    budget = int(env["MPI_OPERATOR_MEMORY_BUDGET_BYTES"])
    assert int(env["MPI_OPERATOR_MAX_BODY_BYTES"]) <= budget
    limit = _bytes(container["resources"]["limits"]["memory"])
    defaults = Settings(caller_auth="off")
    connections = defaults.max_connections * (defaults.max_header_bytes + CONNECTION_OVERHEAD_BYTES)
    assert IDLE_BYTES + KEPT_BYTES + GROWTH_PER_REQUEST_BYTE * budget + connections <= limit
