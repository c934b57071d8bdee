"""Checks for what we ship besides code: metacontroller/, deploy/ (and its one-file build), examples/ and the
Dockerfile.

Kubernetes kinds are validated against the OpenAPI schemas bundled with kubernetes-validate in strict mode
(unknown fields fail). kubernetes-validate has no schema for Metacontroller's CompositeController, so that
gets a hand-written structural check, itself tested against broken variants. The other tests pin what ties
the files together: the webhook URLs point at the Service, the Service at the container port, the
Dockerfile's argv is the Deployment's, and each example's `mpirun -n` matches its slots.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml

from app.kube.gang import declared, gang_scheduler
from app.settings import Settings
from tests.support.paths import ROOT
from tools import gen_install

INSTALL_FILE = gen_install.INSTALL_PATH
K8S_VERSION = "1.32.0"
NAME = "mpi-operator-hook"
NAMESPACE = "mpi-operator"
CRD_NAME = "mpijobs.kubeflow.org"

# Kinds kubernetes-validate checks for us; CompositeController is checked by composite_controller_problems().
SCHEMA_KINDS = frozenset(
    {
        "Deployment",
        "Service",
        "ServiceAccount",
        "Namespace",
        "PodDisruptionBudget",
        "CustomResourceDefinition",
        "NetworkPolicy",
        "ClusterRole",
        "ClusterRoleBinding",
        "StatefulSet",
        "Secret",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)
COMPOSITE_CONTROLLER = ("metacontroller.k8s.io/v1alpha1", "CompositeController")

# (apiVersion, kind, name, namespace) of every object `kubectl kustomize deploy/` must emit, once each.
EXPECTED_OBJECTS = [
    ("v1", "Namespace", NAMESPACE, None),
    ("v1", "ServiceAccount", NAME, NAMESPACE),
    ("v1", "ServiceAccount", f"{NAME}-caller", NAMESPACE),
    ("v1", "Secret", f"{NAME}-caller", NAMESPACE),
    ("apps/v1", "Deployment", NAME, NAMESPACE),
    ("v1", "Service", NAME, NAMESPACE),
    ("policy/v1", "PodDisruptionBudget", NAME, NAMESPACE),
    ("networking.k8s.io/v1", "NetworkPolicy", NAME, NAMESPACE),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", f"{NAME}-events", None),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", f"{NAME}-events", None),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_NAME, None),
    (*COMPOSITE_CONTROLLER, NAME, None),
]

# The base CompositeController's children (docs/architecture.md, "Update strategies").
BASE_CHILD_RESOURCES = {
    ("batch/v1", "jobs"): "OnDelete",
    ("v1", "pods"): "OnDelete",
    ("v1", "services"): "InPlace",
    ("v1", "secrets"): "OnDelete",
    ("v1", "configmaps"): "InPlace",
}


# --------------------------------------------------------------------------------------------------- helpers


def load_docs(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def ref(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def k8s_validate(obj: dict[str, Any]) -> None:
    """Strict schema validation with a one-line failure message (field path + reason)."""
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        path = ".".join(str(p) for p in e.path) or "<root>"
        error = f"{ref(obj)} is invalid for Kubernetes {K8S_VERSION}: {path}: {e.message}"
    else:
        return
    # Failing outside the except block keeps jsonschema's schema dump out of the report.
    pytest.fail(error)


def null_paths(node: Any, path: str = "") -> Iterator[str]:
    """Paths of YAML nulls (`key:` with no value). Schemas accept null nearly anywhere; we never mean it."""
    if node is None:
        yield path or "<root>"
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from null_paths(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from null_paths(value, f"{path}[{i}]")


_QUANTITY = re.compile(r"^(0|[1-9][0-9]*)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def is_canonical_quantity(value: Any) -> bool:
    """True for a quantity string as the apiserver prints it ("1", "500m", "1Gi"; not 1, "1000m", "1024Mi").

    Anything else differs from what the apiserver stores (a write per sync on InPlace children).
    """
    if not isinstance(value, str):
        return False
    match = _QUANTITY.match(value)
    if match is None:
        return False
    number, suffix = match.groups()
    if number == "0":
        return suffix is None
    if suffix is not None and suffix.endswith("i"):
        return int(number) % 1024 != 0 or suffix == "Ei"
    return not number.endswith("000") or suffix == "E"


def resource_quantities(pod_spec: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for kind in ("initContainers", "containers"):
        for container in pod_spec.get(kind, []):
            for section in ("requests", "limits"):
                for resource, value in container.get("resources", {}).get(section, {}).items():
                    yield f"{container['name']}.resources.{section}.{resource}", value


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def go_duration_seconds(text: str) -> float:
    """Parse a Go/metav1.Duration string such as "30s", "1m30s" or "500ms"."""
    if not text or _DURATION_PART.sub("", text) != "":
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * _DURATION_UNIT[unit] for n, unit in _DURATION_PART.findall(text))


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        ("1", True), ("100m", True), ("1Gi", True), ("1536Mi", True), ("0", True), ("1500m", True),
        (1, False), ("1.0", False), ("1000m", False), ("1024Mi", False), ("2000", False), ("0Gi", False),
        ("01", False), ("1gi", False), ("", False),
    ],
)  # fmt: skip
def test_is_canonical_quantity(value: Any, canonical: bool) -> None:
    assert is_canonical_quantity(value) is canonical


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("10s", 10), ("1m30s", 90), ("500ms", 0.5), ("1h", 3600)]
)
def test_go_duration_seconds(text: str, seconds: float) -> None:
    assert go_duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["30", "", "30 s", "s", "-1s"])
def test_go_duration_seconds_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        go_duration_seconds(text)


# --------------------------------------------------------------------- hand-written CompositeController check

CC_SPEC_KEYS = {
    "generateSelector",
    "parentResource",
    "childResources",
    "hooks",
    "resyncPeriodSeconds",
    "endpointConfigs",
}
CC_PARENT_KEYS = {"apiVersion", "resource", "labelSelector", "revisionHistory", "ignoreStatusChanges"}
CC_CHILD_KEYS = {"apiVersion", "resource", "updateStrategy"}
CC_STRATEGY_KEYS = {"method", "statusChecks"}
CC_HOOKS = {"sync", "finalize", "customize"}
CC_HOOK_KEYS = {"version", "webhook"}
# v4.16.0 added the four ways a webhook authenticates itself or its server.
CC_WEBHOOK_KEYS = {
    "url", "service", "path", "timeout", "responseUnMarshallMode", "etag",
    "authorization", "basicAuth", "clientTLS", "caBundle",
}  # fmt: skip
# Rolling methods and Recreate delete or loop on the children this hook emits (docs/architecture.md); the
# Workload API's children are the exception: their specs are immutable, so an update can only be a Recreate.
CC_ALLOWED_METHODS = {"OnDelete", "InPlace"}
RECREATED_CHILDREN = {
    (f"scheduling.k8s.io/{version}", resource)
    for version in ("v1beta1", "v1alpha2")
    for resource in ("workloads", "podgroups")
}


def _unknown(obj: dict[str, Any], allowed: set[str], where: str) -> list[str]:
    return [f"{where}: unknown key {key!r}" for key in sorted(set(obj) - allowed)]


def composite_controller_problems(cc: dict[str, Any]) -> list[str]:
    """Every structural problem in a CompositeController, as readable strings (empty list = fine)."""
    problems: list[str] = []
    if (cc.get("apiVersion"), cc.get("kind")) != COMPOSITE_CONTROLLER:
        problems.append(f"apiVersion/kind is {cc.get('apiVersion')}/{cc.get('kind')}")
    if not cc.get("metadata", {}).get("name"):
        problems.append("metadata.name is missing")
    if "namespace" in cc.get("metadata", {}):
        problems.append("metadata.namespace is set on a cluster-scoped object")
    problems += _unknown(cc, {"apiVersion", "kind", "metadata", "spec"}, "<root>")
    spec = cc.get("spec")
    if not isinstance(spec, dict):
        return [*problems, "spec is missing"]
    problems += _unknown(spec, CC_SPEC_KEYS, "spec")
    if spec.get("generateSelector") is not True:
        problems.append("spec.generateSelector must be true (MPIJob has no spec.selector)")

    parent = spec.get("parentResource") or {}
    problems += _unknown(parent, CC_PARENT_KEYS, "spec.parentResource")
    for key in ("apiVersion", "resource"):
        if not parent.get(key):
            problems.append(f"spec.parentResource.{key} is missing")
    if parent.get("ignoreStatusChanges") is not True:
        problems.append("spec.parentResource.ignoreStatusChanges must be true")

    children = spec.get("childResources")
    if not isinstance(children, list) or not children:
        problems.append("spec.childResources is missing or empty")
        children = []
    seen: set[tuple[Any, Any]] = set()
    for i, child in enumerate(children):
        where = f"spec.childResources[{i}]"
        problems += _unknown(child, CC_CHILD_KEYS, where)
        for key in ("apiVersion", "resource"):
            if not child.get(key):
                problems.append(f"{where}.{key} is missing")
        key = (child.get("apiVersion"), child.get("resource"))
        if key in seen:
            problems.append(f"{where}: {key} is declared twice")
        seen.add(key)
        strategy = child.get("updateStrategy")
        if not isinstance(strategy, dict):
            problems.append(f"{where}.updateStrategy is missing")
            continue
        problems += _unknown(strategy, CC_STRATEGY_KEYS, f"{where}.updateStrategy")
        allowed = CC_ALLOWED_METHODS | ({"Recreate"} if key in RECREATED_CHILDREN else set())
        if strategy.get("method") not in allowed:
            method = strategy.get("method")
            problems.append(f"{where}.updateStrategy.method is {method!r}, not one of OnDelete/InPlace")

    hooks = spec.get("hooks") or {}
    problems += _unknown(hooks, CC_HOOKS, "spec.hooks")
    if "sync" not in hooks:
        problems.append("spec.hooks.sync is missing")
    for name, hook in hooks.items():
        where = f"spec.hooks.{name}"
        problems += _unknown(hook, CC_HOOK_KEYS, where)
        if hook.get("version") != "v2":
            problems.append(f"{where}.version is {hook.get('version')!r}, not 'v2'")
        webhook = hook.get("webhook") or {}
        problems += _unknown(webhook, CC_WEBHOOK_KEYS, f"{where}.webhook")
        if not webhook.get("url"):
            problems.append(f"{where}.webhook.url is missing")
        if webhook.get("responseUnMarshallMode") != "strict":
            problems.append(f"{where}.webhook.responseUnMarshallMode is not 'strict'")
        secret = (webhook.get("authorization") or {}).get("secretRef") or {}
        if not all(secret.get(key) for key in ("name", "namespace", "key")):
            problems.append(f"{where}.webhook.authorization.secretRef must name the caller token's key")
        try:
            if go_duration_seconds(webhook.get("timeout", "")) <= 0:
                problems.append(f"{where}.webhook.timeout must be positive")
        except ValueError as e:
            problems.append(f"{where}.webhook.timeout: {e}")
    return problems


DELETE = object()


def _break(path: str, value: Any) -> Any:
    """A mutation for the negative tests: set (value=DELETE: remove) a dotted path with [i] indexes."""

    def apply(cc: dict[str, Any]) -> None:
        parts = [int(p) if p.isdigit() else p for p in re.split(r"\.|\[|\]\.?", path) if p != ""]
        node: Any = cc
        for part in parts[:-1]:
            node = node[part]
        if value is DELETE:
            del node[parts[-1]]
        else:
            node[parts[-1]] = value

    return apply


BROKEN_COMPOSITE_CONTROLLERS = {
    "misspelt-unmarshall-mode": (
        _break("spec.hooks.sync.webhook.responseUnmarshallMode", "strict"),
        "unknown key",
    ),
    "loose-mode": (_break("spec.hooks.sync.webhook.responseUnMarshallMode", "loose"), "not 'strict'"),
    "hook-version-v1": (_break("spec.hooks.customize.version", "v1"), "not 'v2'"),
    "recreate-pods": (_break("spec.childResources[1].updateStrategy.method", "Recreate"), "OnDelete/InPlace"),
    "no-update-strategy": (
        _break("spec.childResources[3].updateStrategy", DELETE),
        "childResources[3].updateStrategy is missing",
    ),
    "no-resource": (_break("spec.childResources[0].resource", DELETE), "resource is missing"),
    "no-sync-hook": (_break("spec.hooks.sync", DELETE), "hooks.sync is missing"),
    "bad-timeout": (_break("spec.hooks.sync.webhook.timeout", "30"), "not a Go duration"),
    "no-caller-token": (_break("spec.hooks.customize.webhook.authorization", DELETE), "caller token"),
    "no-generate-selector": (_break("spec.generateSelector", DELETE), "generateSelector"),
    "status-changes-trigger-syncs": (
        _break("spec.parentResource.ignoreStatusChanges", False),
        "ignoreStatusChanges",
    ),
    "namespaced": (_break("metadata.namespace", NAMESPACE), "cluster-scoped"),
}


# ------------------------------------------------------------------------------------- (a) source manifests

SOURCE_DIRS = (
    "metacontroller",
    "deploy",
    "deploy/base",
    "deploy/hook-only",
    "deploy/metacontroller",
    "deploy/migration",
)


def _source_documents() -> list[Any]:
    params = []
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).glob("*.yaml")):
            if path.name == "kustomization.yaml":
                continue
            for i, doc in enumerate(load_docs(path)):
                if doc.get("apiVersion") == "builtin":  # a kustomize transformer config, not an object
                    continue
                params.append(pytest.param(doc, id=f"{rel(path)}#{i}:{ref(doc)}"))
    return params


SOURCE_DOCUMENTS = _source_documents()


def test_source_manifests_were_found() -> None:
    kinds = {doc.values[0]["kind"] for doc in SOURCE_DOCUMENTS}
    assert kinds >= {"CompositeController", "Deployment", "Service", "ServiceAccount", "Namespace"}


@pytest.mark.parametrize("doc", SOURCE_DOCUMENTS)
def test_source_manifest_is_valid(doc: dict[str, Any]) -> None:
    if doc["kind"] in SCHEMA_KINDS:
        k8s_validate(doc)
    elif (doc["apiVersion"], doc["kind"]) == COMPOSITE_CONTROLLER:
        assert composite_controller_problems(doc) == []
    else:
        pytest.fail(f"{ref(doc)}: no check for kind {doc['kind']}; add it to SCHEMA_KINDS or write one")
    assert list(null_paths(doc)) == []


@pytest.mark.parametrize("directory", SOURCE_DIRS)
def test_every_yaml_file_is_listed_in_its_kustomization(directory: str) -> None:
    (kustomization,) = load_docs(ROOT / directory / "kustomization.yaml")
    listed = {entry for key in ("resources", "transformers") for entry in kustomization.get(key, [])}
    files = {p.name for p in (ROOT / directory).glob("*.yaml")} - {"kustomization.yaml"}
    assert files - listed == set(), "YAML files that kustomize would silently leave out"


@pytest.mark.parametrize(
    ("mutate", "message"), BROKEN_COMPOSITE_CONTROLLERS.values(), ids=BROKEN_COMPOSITE_CONTROLLERS.keys()
)
def test_composite_controller_check_catches(mutate: Any, message: str) -> None:
    (cc,) = load_docs(ROOT / "metacontroller" / "compositecontroller.yaml")
    assert composite_controller_problems(cc) == []
    broken = copy.deepcopy(cc)
    mutate(broken)
    problems = composite_controller_problems(broken)
    assert any(message in p for p in problems), problems


# -------------------------------------------------------------------------------- (b) kustomize build output


def kustomize(directory: str) -> list[dict[str, Any]]:
    """`kubectl kustomize <directory>`, as a list of objects."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI"):
            pytest.fail(f"kubectl is not on PATH in CI; cannot build {directory}/ with kustomize")
        pytest.skip(f"kubectl is not on PATH; cannot build {directory}/ with kustomize")
    proc = subprocess.run(
        [kubectl, "kustomize", str(ROOT / directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"kubectl kustomize {directory}/ failed:\n{proc.stderr}"
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc is not None]


@pytest.fixture(scope="module")
def built() -> list[dict[str, Any]]:
    """`kubectl kustomize deploy/`, once per module."""
    return kustomize("deploy")


def find(built: list[dict[str, Any]], kind: str, name: str = NAME) -> dict[str, Any]:
    matches = [obj for obj in built if obj["kind"] == kind and obj["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind}/{name} in the kustomize output, found {len(matches)}"
    return matches[0]


@pytest.fixture(scope="module")
def deployment(built: list[dict[str, Any]]) -> dict[str, Any]:
    return find(built, "Deployment")


@pytest.fixture(scope="module")
def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


@pytest.fixture(scope="module")
def composite_controller(built: list[dict[str, Any]]) -> dict[str, Any]:
    return find(built, "CompositeController")


def is_metacontroller(obj: dict[str, Any]) -> bool:
    return (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "metacontroller"


def test_kustomize_output_has_each_expected_object_once(built: list[dict[str, Any]]) -> None:
    ours = [o for o in built if not is_metacontroller(o)]
    got = Counter((o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in ours)
    assert got == Counter((api, kind, name) for api, kind, name, _ in EXPECTED_OBJECTS)


def test_deploy_is_hook_only_plus_metacontroller_with_its_apply_strategy(built: list[dict[str, Any]]) -> None:
    """deploy/ = deploy/hook-only/ + deploy/metacontroller/, and the hook's one setting that must match
    Metacontroller's flags, set by the same component."""
    hook_only, metacontroller = kustomize("deploy/hook-only"), kustomize("deploy/metacontroller")
    assert metacontroller and all(is_metacontroller(o) for o in metacontroller)
    strategy = "MPI_OPERATOR_METACONTROLLER_APPLY_STRATEGY"

    def without_strategy(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        objects = copy.deepcopy(objects)
        (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
        container["env"] = [e for e in container["env"] if e["name"] != strategy]
        return sorted(objects, key=lambda o: (o["kind"], o["metadata"]["name"]))

    assert without_strategy(built) == without_strategy(hook_only + metacontroller)
    flags = metacontroller_flags(built)
    (container,) = find(built, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {e["name"]: e["value"] for e in container["env"]}[strategy] == flags["--apply-strategy"]
    (container,) = find(hook_only, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {e["name"]: e["value"] for e in container["env"]}[strategy] == "dynamic-apply"  # Metacontroller's


# Every folder kubectl kustomize builds (components are built by the folders that include them).
KUSTOMIZATIONS = sorted(
    str(path.parent.relative_to(ROOT))
    for folder in ("deploy", "metacontroller", "crds")
    for path in (ROOT / folder).rglob("kustomization.yaml")
    if "components" not in path.parts
)
# kustomize's fields that it warns about or has dropped: deploy/ uses their successors (labels, resources,
# patches), so an apply prints no warning of ours.
DEPRECATED_FIELDS = {"commonLabels", "bases", "patchesStrategicMerge", "patchesJson6902", "vars", "imageTags"}
# The one warning left, and not ours: Metacontroller's own manifests/production/kustomization.yaml (v4.17.2,
# as on its main branch) sets commonLabels, and deploy/components/metacontroller/ includes it as published.
UPSTREAM_WARNING = "# Warning: 'commonLabels' is deprecated. Please use 'labels' instead."


def test_no_kustomization_of_ours_uses_a_deprecated_field() -> None:
    used = {
        str(path.relative_to(ROOT)): sorted(DEPRECATED_FIELDS & set(yaml.safe_load(path.read_text())))
        for folder in ("deploy", "metacontroller", "crds")
        for path in (ROOT / folder).rglob("kustomization.yaml")
    }
    assert {path: fields for path, fields in used.items() if fields} == {}


@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_kustomize_warns_of_nothing_of_ours(directory: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    done = subprocess.run([kubectl, "kustomize", str(ROOT / directory)], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert [line for line in said if not line.startswith(UPSTREAM_WARNING)] == []


def metacontroller_flags(built: list[dict[str, Any]]) -> dict[str, str]:
    (container,) = find(built, "StatefulSet", "metacontroller")["spec"]["template"]["spec"]["containers"]
    return dict(arg.split("=", 1) for arg in container["args"])


def test_metacontroller_is_pinned_and_tuned_for_mpijobs(built: list[dict[str, Any]]) -> None:
    statefulset = find(built, "StatefulSet", "metacontroller")
    k8s_validate(statefulset)
    assert list(null_paths(statefulset)) == []
    pod = statefulset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "ghcr.io/metacontroller/metacontroller:v4.17.2"
    flags = metacontroller_flags(built)
    assert int(flags["--client-go-qps"]) >= 50 and int(flags["--client-go-burst"]) >= 2 * 50
    assert flags["--apply-strategy"] == "server-side-apply"
    assert flags["--zap-log-level"] == "info"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["limits"]["memory"]
    # deploy/'s NetworkPolicy admits exactly these Pods to the hook.
    policy = find(built, "NetworkPolicy")
    (rule,) = policy["spec"]["ingress"][:1]
    peer = rule["from"][0]
    assert peer["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "metacontroller"}
    assert (
        peer["podSelector"]["matchLabels"].items()
        <= statefulset["spec"]["template"]["metadata"]["labels"].items()
    )


def test_the_single_file_install_manifest_is_hook_only_built() -> None:
    """deploy/install/mpi-operator-hook.yaml, the file users apply without a clone next to their own
    Metacontroller, is `deploy/hook-only/` as it is."""
    assert INSTALL_FILE.read_text() == gen_install.render_install(kustomize("deploy/hook-only")), (
        f"{INSTALL_FILE.relative_to(ROOT)} is stale: run `python tools/gen_install.py`"
    )


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "namespace"),
    EXPECTED_OBJECTS,
    ids=[f"{kind}/{name}" for _, kind, name, _ in EXPECTED_OBJECTS],
)
def test_kustomize_object_is_valid(
    built: list[dict[str, Any]], api_version: str, kind: str, name: str, namespace: str | None
) -> None:
    obj = find(built, kind, name)
    assert obj["apiVersion"] == api_version
    assert obj["metadata"].get("namespace") == namespace
    if kind in SCHEMA_KINDS:
        k8s_validate(obj)
    else:
        assert composite_controller_problems(obj) == []
    assert list(null_paths(obj)) == []


def test_deployment_runs_two_replicas_that_survive_disruption(
    built: list[dict[str, Any]], deployment: dict[str, Any]
) -> None:
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pod_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pod_labels["app.kubernetes.io/name"] == NAME
    pdb = find(built, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    # minAvailable >= replicas would block every node drain.
    assert 1 <= pdb["spec"]["minAvailable"] < spec["replicas"]


def test_deployment_is_locked_down(built: list[dict[str, Any]], deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    # The hook's Pod mounts its token (to post Events); the account mounts none into any other Pod.
    assert pod["automountServiceAccountToken"] is True
    service_account = find(built, "ServiceAccount", pod["serviceAccountName"])
    assert service_account["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert "privileged" not in security or security["privileged"] is False
    # A read-only root filesystem needs a writable /tmp.
    tmp = next(m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
    volume = next(v for v in pod["volumes"] if v["name"] == tmp["name"])
    assert "emptyDir" in volume


def test_deployment_resources(container: dict[str, Any]) -> None:
    resources = container["resources"]
    assert resources["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert set(resources["limits"]) == {"memory"}  # sized against the memory budget: test_deploy_extras.py
    quantities = resource_quantities({"containers": [container]})
    assert [where for where, value in quantities if not is_canonical_quantity(value)] == []


@pytest.mark.parametrize(("probe", "path"), [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")])
def test_deployment_probes_hit_the_http_port(container: dict[str, Any], probe: str, path: str) -> None:
    get = container[probe]["httpGet"]
    assert get["path"] == path
    ports = container["ports"]
    assert get["port"] in {p["name"] for p in ports} | {p["containerPort"] for p in ports}


def test_deployment_env_is_documented_settings(container: dict[str, Any]) -> None:
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env == {
        "MPI_OPERATOR_CLUSTER_DOMAIN": "",
        "MPI_OPERATOR_GANG_SCHEDULING": "",
        "MPI_OPERATOR_METRICS_PORT": "9090",
        "MPI_OPERATOR_MAX_BODY_BYTES": "167772160",
        "MPI_OPERATOR_MEMORY_BUDGET_BYTES": "167772160",
        "MPI_OPERATOR_METACONTROLLER_APPLY_STRATEGY": "server-side-apply",
        "MPI_OPERATOR_EVENTS": "auto",
        "MPI_OPERATOR_CALLER_TOKEN_FILE": "/etc/mpi-operator-hook/caller/token",
    }
    settings = {name.removeprefix("MPI_OPERATOR_").lower() for name in env}
    assert settings <= set(Settings.model_fields)


def test_metacontroller_sends_the_token_the_hook_reads(
    built: list[dict[str, Any]], composite_controller: dict[str, Any], deployment: dict[str, Any]
) -> None:
    """Both hooks send the key of a service-account token Secret of deploy/ (filled by the cluster, typed by
    nobody, for an account with no roles); the hook's container reads that very key at the file its setting
    names, and the kubelet waits for the key before starting it (an item, not optional)."""
    given = [hook["webhook"]["authorization"] for hook in composite_controller["spec"]["hooks"].values()]
    refs = {tuple(sorted(auth["secretRef"].items())) for auth in given}
    assert len(refs) == 1 and {auth.get("type", "Bearer") for auth in given} == {"Bearer"}
    ref = dict(next(iter(refs)))
    secret = find(built, "Secret", ref["name"])
    assert secret["metadata"]["namespace"] == ref["namespace"] and ref["key"] == "token"
    assert secret["type"] == "kubernetes.io/service-account-token"
    account = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert find(built, "ServiceAccount", account)["automountServiceAccountToken"] is False
    bound = [s for o in built if o["kind"].endswith("RoleBinding") for s in o.get("subjects", [])]
    assert all(s.get("name") != account for s in bound), "the caller's account must have no roles"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    path = Path({e["name"]: e.get("value") for e in container["env"]}["MPI_OPERATOR_CALLER_TOKEN_FILE"])
    (volume,) = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == ref["name"]]
    assert volume["secret"]["items"] == [{"key": ref["key"], "path": path.name}]
    assert not volume["secret"].get("optional")
    mounts = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mounts == [{"name": volume["name"], "mountPath": str(path.parent), "readOnly": True}]


def resolve_target_port(service_port: dict[str, Any], container: dict[str, Any]) -> int:
    target = service_port.get("targetPort", service_port["port"])
    if isinstance(target, int):
        return target
    matches = [p["containerPort"] for p in container["ports"] if p.get("name") == target]
    assert matches, f"Service targetPort {target!r} names no container port"
    return matches[0]


def test_service_routes_to_the_container_port(
    built: list[dict[str, Any]], deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    service = find(built, "Service")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    port, metrics = service["spec"]["ports"]
    assert port["port"] == 8080
    assert resolve_target_port(port, container) == 8080
    metrics_port = next(e["value"] for e in container["env"] if e["name"] == "MPI_OPERATOR_METRICS_PORT")
    assert resolve_target_port(metrics, container) == int(metrics_port)
    assert "--port" in container["command"]
    assert container["command"][container["command"].index("--port") + 1] == "8080"


def test_composite_controller_declares_the_base_children(composite_controller: dict[str, Any]) -> None:
    children = {
        (c["apiVersion"], c["resource"]): c["updateStrategy"]["method"]
        for c in composite_controller["spec"]["childResources"]
    }
    assert children == BASE_CHILD_RESOURCES


@pytest.mark.parametrize("hook", ["sync", "customize"])
def test_webhook_url_points_at_the_service(
    built: list[dict[str, Any]], composite_controller: dict[str, Any], hook: str
) -> None:
    service = find(built, "Service")
    url = urlsplit(composite_controller["spec"]["hooks"][hook]["webhook"]["url"])
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert url.scheme == "http"
    assert url.hostname in {f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"}
    assert url.port in {p["port"] for p in service["spec"]["ports"]}
    assert url.path == f"/{hook}"


def test_hook_timeouts(composite_controller: dict[str, Any], deployment: dict[str, Any]) -> None:
    hooks = composite_controller["spec"]["hooks"]
    sync = go_duration_seconds(hooks["sync"]["webhook"]["timeout"])
    customize = go_duration_seconds(hooks["customize"]["webhook"]["timeout"])
    assert (sync, customize) == (30, 10)
    # A rollout must let an in-flight sync finish before the pod is killed.
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > sync


def test_parent_resource_is_the_crd_with_status_subresource(
    built: list[dict[str, Any]], composite_controller: dict[str, Any]
) -> None:
    parent = composite_controller["spec"]["parentResource"]
    group, version = parent["apiVersion"].split("/")
    crd = find(built, "CustomResourceDefinition", f"{parent['resource']}.{group}")
    assert crd["spec"]["group"] == group
    assert crd["spec"]["names"]["plural"] == parent["resource"]
    assert crd["spec"]["names"]["kind"] == "MPIJob"
    assert crd["spec"]["scope"] == "Namespaced"
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    assert served["served"] is True
    # Metacontroller refuses to run a CompositeController whose parent has no status subresource.
    assert "status" in served.get("subresources", {})


def gang_setting_and_podgroup_children(built: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The hook's gang setting and the gang children the CompositeController declares (PodGroup, Workload)."""
    (container,) = find(built, "Deployment")["spec"]["template"]["spec"]["containers"]
    gang = next(e.get("value", "") for e in container["env"] if e["name"] == "MPI_OPERATOR_GANG_SCHEDULING")
    children = find(built, "CompositeController")["spec"]["childResources"]
    return gang, [c for c in children if c["resource"] in ("podgroups", "workloads")]


def test_base_has_no_gang_scheduling(built: list[dict[str, Any]]) -> None:
    assert gang_setting_and_podgroup_children(built) == ("", [])


# ------------------------------------------------------------------------------- gang scheduling overlays

# directory: (setting, apiVersion, update strategy of its children)
OVERLAYS = {
    "deploy/overlays/volcano": ("volcano", "scheduling.volcano.sh/v1beta1", "InPlace"),
    "deploy/overlays/scheduler-plugins": (
        "scheduler-plugins-scheduler",
        "scheduling.x-k8s.io/v1alpha1",
        "InPlace",
    ),
    # Immutable specs: a changed minCount or topology can only be a new object.
    "deploy/overlays/kubernetes": ("kubernetes", "scheduling.k8s.io/v1beta1", "Recreate"),
    "deploy/overlays/kubernetes-1.36": ("kubernetes", "scheduling.k8s.io/v1alpha2", "Recreate"),
}


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, kustomize(request.param)


def test_overlays_were_found() -> None:
    found = {rel(p.parent) for p in (ROOT / "deploy" / "overlays").glob("*/kustomization.yaml")}
    assert found == set(OVERLAYS)


def test_overlay_setting_and_declared_podgroup_child_agree(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    """The hook emits the kinds its setting selects; the overlay must declare exactly those."""
    directory, built = overlay
    gang, children = gang_setting_and_podgroup_children(built)
    configured = gang_scheduler(gang)
    assert configured is not None
    scheduler = declared(configured, frozenset(c["apiVersion"] for c in children))
    assert scheduler.overlay == directory
    setting, api_version, method = OVERLAYS[directory]
    assert (gang, scheduler.api_version) == (setting, api_version)
    assert children == [
        {"apiVersion": api_version, "resource": resource, "updateStrategy": {"method": method}}
        for resource in scheduler.resources
    ]


def test_overlay_changes_only_the_setting_and_the_child(
    built: list[dict[str, Any]], overlay: tuple[str, list[dict[str, Any]]]
) -> None:
    _, changed = overlay
    assert composite_controller_problems(find(changed, "CompositeController")) == []
    k8s_validate(find(changed, "Deployment"))
    gang, declared = gang_setting_and_podgroup_children(changed)

    def normalised(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        objects = copy.deepcopy(objects)
        cc = find(objects, "CompositeController")
        cc["spec"]["childResources"] = [c for c in cc["spec"]["childResources"] if c not in declared]
        (container,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
        container["env"] = sorted(
            (
                {**e, "value": ""} if e["name"] == "MPI_OPERATOR_GANG_SCHEDULING" else e
                for e in container["env"]
            ),
            key=lambda e: e["name"],
        )
        return objects

    scheduler = gang_scheduler(gang)
    assert scheduler is not None and len(declared) == len(scheduler.resources)
    assert normalised(changed) == normalised(built)


# ------------------------------------------------------------------------------------------- (c) examples

EXAMPLE_FILES = sorted((ROOT / "examples").rglob("*.yaml"))
EXAMPLE_IDS = [rel(p) for p in EXAMPLE_FILES]
ROLES = ("Launcher", "Worker")
IMAGE_TAG_BY_IMPLEMENTATION = {"OpenMPI": "openmpi", "Intel": "intel", "MPICH": "mpich"}


def load_example(path: Path) -> dict[str, Any]:
    (doc,) = load_docs(path)
    return doc


def launcher_argv(job: dict[str, Any]) -> list[str]:
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    return [*container.get("command", []), *container.get("args", [])]


def test_examples_were_found() -> None:
    pi = {"examples/pi/pi.yaml", "examples/pi/pi-intel.yaml", "examples/pi/pi-mpich.yaml"}
    assert pi <= set(EXAMPLE_IDS)
    assert any(i.startswith("examples/gpu/") for i in EXAMPLE_IDS)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_is_an_mpijob(path: Path) -> None:
    job = load_example(path)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    assert job["metadata"]["name"]
    assert "namespace" not in job["metadata"], "examples are applied to the user's namespace"
    specs = job["spec"]["mpiReplicaSpecs"]
    assert set(specs) == set(ROLES)
    assert specs["Launcher"]["replicas"] == 1
    assert specs["Worker"]["replicas"] >= 1
    assert job["spec"].get("mpiImplementation", "OpenMPI") in IMAGE_TAG_BY_IMPLEMENTATION
    assert list(null_paths(job)) == []


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_pod_template_validates(path: Path, role: str) -> None:
    template = load_example(path)["spec"]["mpiReplicaSpecs"][role]["template"]
    k8s_validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"}, "template": template})
    bad = [where for where, v in resource_quantities(template["spec"]) if not is_canonical_quantity(v)]
    assert bad == [], 'write quantities as the apiserver prints them, quoted: cpu: "1", memory: 1Gi'


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_mpirun_ranks_equal_slots(path: Path) -> None:
    job = load_example(path)
    argv = launcher_argv(job)
    assert "mpirun" in argv
    flags = [i for i, arg in enumerate(argv) if arg in {"-n", "-np"}]
    assert len(flags) == 1, f"expected one -n/-np in {shlex.join(argv)}"
    slots = job["spec"].get("slotsPerWorker", 1) * job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    assert argv[flags[0] + 1] == str(slots)


GPU_EXAMPLES = [p for p in EXAMPLE_FILES if "nvidia.com/gpu" in p.read_text()]


@pytest.mark.parametrize("path", GPU_EXAMPLES, ids=[rel(p) for p in GPU_EXAMPLES])
def test_example_runs_one_rank_per_gpu(path: Path) -> None:
    job = load_example(path)
    (worker,) = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == str(job["spec"].get("slotsPerWorker", 1))
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in launcher.get("resources", {}).get("limits", {}), (
        "the launcher needs no GPU"
    )


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_header_says_how_to_run_it(path: Path) -> None:
    text = path.read_text()
    name = load_example(path)["metadata"]["name"]
    header = text[: text.index("\napiVersion:")]
    assert all(line.startswith("#") for line in header.splitlines())
    assert f"kubectl apply -f {rel(path)}" in header
    assert f"kubectl get mpijob {name}" in header
    assert f"job/{name}-launcher" in header


def test_example_names_are_unique() -> None:
    names = Counter(load_example(p)["metadata"]["name"] for p in EXAMPLE_FILES)
    assert [n for n, count in names.items() if count > 1] == []


PI_EXAMPLES = [p for p in EXAMPLE_FILES if "mpioperator/mpi-pi:" in p.read_text()]


@pytest.mark.parametrize("path", PI_EXAMPLES, ids=[rel(p) for p in PI_EXAMPLES])
def test_example_image_matches_mpi_implementation(path: Path) -> None:
    job = load_example(path)
    tag = IMAGE_TAG_BY_IMPLEMENTATION[job["spec"].get("mpiImplementation", "OpenMPI")]
    for role in ROLES:
        for c in job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["containers"]:
            assert c["image"] == f"mpioperator/mpi-pi:{tag}", f"{role} {c['name']}"


@pytest.fixture(scope="module")
def mpijob_schema() -> dict[str, Any]:
    (crd,) = load_docs(ROOT / "crds" / "kubeflow.org_mpijobs.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v2beta1"]
    return version["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_matches_crd_schema(path: Path, mpijob_schema: dict[str, Any]) -> None:
    # OpenAPI v3.0 schemas are closest to draft 4 (boolean exclusiveMinimum); x-kubernetes-* keys are ignored.
    errors = sorted(jsonschema.Draft4Validator(mpijob_schema).iter_errors(load_example(path)), key=str)
    assert [f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors] == []


# ----------------------------------------------------------------------------------------- (d) Dockerfile


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, rest = (pending + line).strip().partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    return instructions


def dockerfile_value(keyword: str) -> str:
    values = [rest for kw, rest in dockerfile_instructions() if kw == keyword]
    assert values, f"Dockerfile has no {keyword}"
    return values[-1]  # the last one wins, as in docker build


def exec_form(keyword: str) -> list[str]:
    value = json.loads(dockerfile_value(keyword))
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"{keyword} must be exec form"
    return value


def test_dockerfile_argv_is_the_deployment_argv(container: dict[str, Any]) -> None:
    image_argv = exec_form("ENTRYPOINT") + exec_form("CMD")
    # Kubernetes: command replaces ENTRYPOINT (and drops CMD); args alone replace CMD.
    if "command" in container:
        pod_argv = container["command"] + container.get("args", [])
    else:
        pod_argv = exec_form("ENTRYPOINT") + container.get("args", exec_form("CMD"))
    assert pod_argv == image_argv
    assert image_argv[:2] == ["mpijob", "serve"]


def test_dockerfile_port_and_user_match_the_deployment(
    deployment: dict[str, Any], container: dict[str, Any]
) -> None:
    cmd = exec_form("CMD")
    port = int(cmd[cmd.index("--port") + 1])
    assert dockerfile_value("EXPOSE").split() == [str(port)]
    assert port in {p["containerPort"] for p in container["ports"]}
    uid = dockerfile_value("USER").split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "USER must be a numeric non-root uid (runAsNonRoot checks it)"
    assert int(uid) == deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
