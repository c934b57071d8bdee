"""Checks for the generated MPIJob CRD (crds/kubeflow.org_mpijobs.yaml, made by tools/gen_crd.py).

No apiserver here, so the apiserver's admission of MPIJobs is rebuilt from three parts, each run on a table of
valid and invalid objects:

* defaulting: the schema's ``default`` values applied where a field is absent and its parent present;
* schema validation: the openAPIV3Schema without its ``x-kubernetes-*`` keys, checked with ``jsonschema``
  (Draft 7 is close enough to the apiserver's OpenAPI v3 subset), plus strict field validation (unknown
  fields, which `kubectl apply` reports by default);
* CEL: every ``x-kubernetes-validations`` rule evaluated on its node with a real CEL implementation
  (``common-expression-language``), transition rules only where an old object is given, as the apiserver does.

The CRD itself is checked for staleness, against Kubernetes' own CRD schema (strict), and for the structural
schema invariants the apiserver enforces on creation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import cel
import jsonschema
import kubernetes_validate
import pytest
import yaml

from app.api.limits import MAX_WORKERS
from tests.support.paths import ROOT
from tools import gen_crd

CRD_FILE = ROOT / "crds" / "kubeflow.org_mpijobs.yaml"
K8S_VERSION = "1.32.0"

_MISSING = object()


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d]
    assert len(docs) == 1
    return docs[0]


@pytest.fixture(scope="module")
def schema(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


# ----------------------------------------------------------------------------------------------------------
# The file
# ----------------------------------------------------------------------------------------------------------


def test_checked_in_crd_is_up_to_date() -> None:
    assert CRD_FILE.read_text() == gen_crd.render_crd(), (
        "crds/kubeflow.org_mpijobs.yaml is stale: run `python tools/gen_crd.py`"
    )


def test_kustomization_lists_the_crd() -> None:
    kustomization = yaml.safe_load((ROOT / "crds" / "kustomization.yaml").read_text())
    assert kustomization["resources"] == [CRD_FILE.name]


def test_crd_is_a_valid_custom_resource_definition(crd: dict[str, Any]) -> None:
    kubernetes_validate.validate(crd, K8S_VERSION, strict=True)


def test_crd_identity(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "mpijobs.kubeflow.org"
    assert spec["group"] == "kubeflow.org"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "MPIJob",
        "listKind": "MPIJobList",
        "plural": "mpijobs",
        "singular": "mpijob",
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v2beta1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Workers",
        "Slots",
        "Impl",
        "State",
        "Age",
    ]


def test_crd_fits_client_side_apply(crd: dict[str, Any]) -> None:
    # `kubectl apply` (client-side) stores the object as compact JSON in an annotation; annotations are capped
    # at 256 KiB in total. Past that only `kubectl apply --server-side` works.
    size = len(json.dumps(crd, separators=(",", ":")))
    assert size < 200 * 1024, f"CRD is {size} bytes as JSON; the last-applied-configuration limit is 262144"
    assert CRD_FILE.stat().st_size < 1024 * 1024


def test_printer_columns_point_at_schema_fields(crd: dict[str, Any], schema: dict[str, Any]) -> None:
    for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]:
        path = column["jsonPath"].replace("[-1:]", "").lstrip(".").split(".")
        if path[0] == "metadata":
            continue
        node = schema
        for part in path:
            node = node.get("items", node)["properties"][part]
        assert node["type"] == column["type"], column


# ----------------------------------------------------------------------------------------------------------
# Structural schema
# ----------------------------------------------------------------------------------------------------------

_ALLOWED_KEYS = {
    *("description", "type", "format", "title", "default", "enum", "required", "nullable"),
    *("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"),
    *("maxLength", "minLength", "pattern", "maxItems", "minItems", "maxProperties", "minProperties"),
    *("items", "properties", "additionalProperties", "anyOf", "allOf", "oneOf", "not"),
    *("x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource"),
    *(
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    ),
}
_TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def _nodes(
    node: dict[str, Any], path: str = "", inside: str = ""
) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Every schema node, its path, and whether it is in a list ("items") or map ("additionalProperties").
    A list with ``maxItems`` bounds what a rule inside costs, so it does not count as one."""
    yield path, node, inside
    for key, sub in node.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{key}", inside)
    if isinstance(node.get("additionalProperties"), dict):
        yield from _nodes(node["additionalProperties"], f"{path}.*", inside or "additionalProperties")
    if "items" in node:
        yield from _nodes(node["items"], f"{path}[]", inside or ("" if "maxItems" in node else "items"))


def test_schema_is_structural(schema: dict[str, Any]) -> None:
    problems = []
    for path, node, _ in _nodes(schema):
        where = path or "<root>"
        if set(node) - _ALLOWED_KEYS:
            problems.append(f"{where}: keys not allowed in a CRD schema: {sorted(set(node) - _ALLOWED_KEYS)}")
        if node.get("x-kubernetes-int-or-string"):
            if "type" in node or node.get("anyOf") not in (None, [{"type": "integer"}, {"type": "string"}]):
                problems.append(f"{where}: int-or-string must be typeless or anyOf integer/string")
        elif node.get("type") not in _TYPES and not node.get("x-kubernetes-preserve-unknown-fields"):
            problems.append(f"{where}: no type")
        if node.get("type") == "array" and "items" not in node:
            problems.append(f"{where}: array without items")
        if node.get("properties") and isinstance(node.get("additionalProperties"), dict):
            problems.append(f"{where}: properties and additionalProperties together")
        if node.get("nullable") or node.get("x-kubernetes-preserve-unknown-fields") is False:
            problems.append(f"{where}: nullable / preserve-unknown-fields false")
        for key in ("anyOf", "allOf", "oneOf", "not"):
            if key in node and not node.get("x-kubernetes-int-or-string"):
                problems.append(f"{where}: {key} outside the int-or-string pattern")
        if "x-kubernetes-list-map-keys" in node and node.get("x-kubernetes-list-type") != "map":
            problems.append(f"{where}: list-map-keys without list-type map")
        if "x-kubernetes-map-type" in node and node.get("type") != "object":
            problems.append(f"{where}: map-type on a non-object")
        if node.get("x-kubernetes-list-type") == "map":
            item = node["items"]
            for key in node.get("x-kubernetes-list-map-keys") or ["<none>"]:
                prop = item.get("properties", {}).get(key)
                if prop is None or prop.get("type") not in {"string", "integer", "number", "boolean"}:
                    problems.append(f"{where}: list-map key {key} is not a scalar property")
                elif key not in item.get("required", []) and "default" not in prop:
                    problems.append(f"{where}: list-map key {key} is neither required nor defaulted")
        if node.get("x-kubernetes-list-type") == "set":
            item = node["items"]
            if item.get("type") == "object" and item.get("x-kubernetes-map-type") != "atomic":
                problems.append(f"{where}: set of non-atomic objects")
    assert json.dumps(schema).count('"$ref"') == 0
    assert not problems, "\n".join(problems)


def test_root_metadata_only_restricts_name_and_generate_name(schema: dict[str, Any]) -> None:
    metadata = schema["properties"]["metadata"]
    assert metadata["type"] == "object"
    assert set(metadata) == {"type", "properties"}
    assert set(metadata["properties"]) == {"name", "generateName"}
    # Bounded so that the CEL cost estimate of rules on metadata.name is small; 253 is the apiserver's limit.
    assert {p["maxLength"] for p in metadata["properties"].values()} == {253}


def test_cel_rules_are_cheap(schema: dict[str, Any]) -> None:
    """The apiserver multiplies a rule's cost by how often it can run: keep rules off lists and maps."""
    rules = [
        (path, node, inside) for path, node, inside in _nodes(schema) if "x-kubernetes-validations" in node
    ]
    assert rules
    for path, node, inside in rules:
        assert not inside, f"{path}: CEL rule inside {inside}"
        for rule in node["x-kubernetes-validations"]:
            assert "\n" not in rule["rule"] and rule["message"].strip(), path
            assert rule.get("reason", "FieldValueInvalid") in {"FieldValueRequired", "FieldValueInvalid"}
            cel.compile(rule["rule"])  # parses


def test_defaults_are_exactly_upstreams(schema: dict[str, Any]) -> None:
    defaults = {path: node["default"] for path, node, _ in _nodes(schema) if "default" in node}
    assert defaults == {
        ".spec.failurePolicy.maxRestarts": 0,  # ours: the field is new
        ".spec.launcherCreationPolicy": "AtStartup",
        ".spec.mpiImplementation": "OpenMPI",
        ".spec.runLauncherAsWorker": False,
        ".spec.runPolicy.suspend": False,
        ".spec.slotsPerWorker": 1,
        ".spec.sshAuthMountPath": "/root/.ssh",
    }


def test_pod_template_comes_from_kubernetes(schema: dict[str, Any]) -> None:
    replica_specs = schema["properties"]["spec"]["properties"]["mpiReplicaSpecs"]["properties"]
    assert set(replica_specs) == {"Launcher", "Worker"}
    launcher, worker = (replica_specs[t]["properties"]["template"] for t in ("Launcher", "Worker"))
    assert {k: v for k, v in launcher.items() if k != "description"} == {
        k: v for k, v in worker.items() if k != "description"
    }
    pod = launcher["properties"]["spec"]
    assert pod["required"] == ["containers"]
    container = pod["properties"]["containers"]
    assert container["x-kubernetes-list-map-keys"] == ["name"]
    assert (
        "x-kubernetes-list-type" not in container["items"]["properties"]["ports"]
    )  # protocol is not required
    limits = container["items"]["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] and limits["pattern"] == gen_crd.QUANTITY_PATTERN
    port = container["items"]["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]["port"]
    assert port == {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    assert launcher["properties"]["metadata"]["x-kubernetes-preserve-unknown-fields"] is True


def _minor(version: str) -> tuple[int, int]:
    major, minor, *_ = version.split(".")
    return int(major), int(minor)


def test_the_pod_template_keeps_pod_fields_newer_than_upstreams_kubernetes(schema: dict[str, Any]) -> None:
    """Each of NEWER_POD_FIELDS is new in its version (absent from the release before) and declared by our
    pod template, so the apiserver keeps it (tests/packaging/test_crd_apiserver.py: a real one)."""
    assert _minor(gen_crd.K8S_SCHEMA_VERSION) > _minor(UPSTREAMS_KUBERNETES)
    pod = schema["properties"]["spec"]["properties"]["mpiReplicaSpecs"]["properties"]["Worker"]
    pod_spec = pod["properties"]["template"]["properties"]["spec"]
    declared = {
        "io.k8s.api.core.v1.PodSpec": pod_spec,
        "io.k8s.api.core.v1.EmptyDirVolumeSource": pod_spec["properties"]["volumes"]["items"]["properties"][
            "emptyDir"
        ],
    }
    for version, definition, name in NEWER_POD_FIELDS:
        major, minor = _minor(version)
        before = gen_crd._definitions(f"{major}.{minor - 1}.0")[definition]["properties"]
        assert name not in before and name in gen_crd._definitions(version)[definition]["properties"]
        assert name in declared[definition]["properties"], (definition, name)


def test_status_schema_keeps_observed_generation(schema: dict[str, Any]) -> None:
    status = schema["properties"]["status"]["properties"]
    assert status["observedGeneration"] == {
        "description": status["observedGeneration"]["description"],
        "type": "integer",
        "format": "int64",
    }
    conditions = status["conditions"]
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == (
        "map",
        ["type"],
    )
    assert conditions["items"]["required"] == ["type", "status"]


# ----------------------------------------------------------------------------------------------------------
# Admission, rebuilt: defaulting, schema, strict fields, CEL
# ----------------------------------------------------------------------------------------------------------


def apply_defaults(node: dict[str, Any], value: Any) -> None:
    """The apiserver's decoding of a custom resource: drop nulls of non-nullable fields, then default."""
    if isinstance(value, dict):
        props = node.get("properties", {})
        extra = (
            node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else None
        )
        for key in list(value):
            sub = props.get(key, extra)
            if value[key] is None and sub is not None and "default" not in sub and not sub.get("nullable"):
                del value[key]
        for key, sub in props.items():
            if value.get(key) is None and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(sub, value[key])
        if extra is not None:
            for key, sub_value in value.items():
                if key not in props:
                    apply_defaults(extra, sub_value)
    elif isinstance(value, list) and "items" in node:
        for item in value:
            apply_defaults(node["items"], item)


def _strip_extensions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_extensions(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if isinstance(node, list):
        return [_strip_extensions(v) for v in node]
    return node


def schema_errors(node: dict[str, Any], obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    validator = jsonschema.Draft7Validator(_strip_extensions(node))
    return {
        ("schema", ".".join(map(str, e.absolute_path)), str(e.validator)) for e in validator.iter_errors(obj)
    }


def unknown_fields(node: dict[str, Any], value: Any, path: str = "") -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    if isinstance(value, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for key, sub_value in value.items():
            sub_path = f"{path}.{key}".lstrip(".")
            if key in props:
                found |= unknown_fields(props[key], sub_value, sub_path)
            elif isinstance(extra, dict):
                found |= unknown_fields(extra, sub_value, sub_path)
            elif not node.get("x-kubernetes-preserve-unknown-fields") and path != "metadata":
                found.add(("strict", sub_path, "unknown field"))
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            found |= unknown_fields(node["items"], item, f"{path}.{i}")
    return found


@pytest.fixture(scope="module")
def programs(schema: dict[str, Any]) -> dict[str, Any]:
    return compile_programs(schema)


def compile_programs(schema: dict[str, Any]) -> dict[str, Any]:
    """Every CEL rule of ``schema``, compiled once, by its text: what ``cel_errors`` runs."""
    return {
        rule["rule"]: cel.compile(rule["rule"])
        for _, node, _ in _nodes(schema)
        for rule in node.get("x-kubernetes-validations", [])
    }


def cel_errors(
    node: dict[str, Any], value: Any, old: Any, programs: dict[str, Any], path: str = ""
) -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for rule in node.get("x-kubernetes-validations", []):
        context = {"self": value}
        if "oldSelf" in rule["rule"]:
            if old is _MISSING:  # transition rules run on updates, where the old value exists
                continue
            context["oldSelf"] = old
        where = (path + rule.get("fieldPath", "")).lstrip(".")
        try:
            ok = programs[rule["rule"]].execute(context)
        except Exception as error:  # an evaluation error rejects the object too
            found.add(("cel", where, f"evaluation error: {error}"))
            continue
        if ok is not True:
            found.add(("cel", where, rule["message"]))
    if isinstance(value, dict):
        for key, sub in node.get("properties", {}).items():
            if key in value:
                sub_old = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                found |= cel_errors(sub, value[key], sub_old, programs, f"{path}.{key}")
        if isinstance(node.get("additionalProperties"), dict):
            for key, sub_value in value.items():
                found |= cel_errors(
                    node["additionalProperties"], sub_value, _MISSING, programs, f"{path}.{key}"
                )
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            found |= cel_errors(node["items"], item, _MISSING, programs, f"{path}[{i}]")
    return found


def admission_errors(
    schema: dict[str, Any], programs: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None
) -> set[tuple[str, str, str]]:
    obj = copy.deepcopy(obj)
    apply_defaults(schema, obj)
    errors = schema_errors(schema, obj) | unknown_fields(schema, obj)
    old_value: Any = _MISSING
    if old is not None:
        old_value = copy.deepcopy(old)
        apply_defaults(schema, old_value)
    return errors | cel_errors(schema, obj, old_value, programs)


def crd_admission() -> Callable[[dict[str, Any]], set[tuple[str, str, str]]]:
    """Admission of a new object by the committed CRD (defaults, schema, unknown fields, CEL), for the tests
    of what other commands write (convert, the advice lint gives)."""
    crd = yaml.safe_load(CRD_FILE.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    programs = compile_programs(schema)
    return lambda obj: admission_errors(schema, programs, obj)


# ----------------------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------------------


def container(name: str, *command: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "mpioperator/mpi-pi:openmpi",
        "command": list(command) or ["/usr/sbin/sshd", "-De"],
        "securityContext": {"runAsUser": 1000},
        "resources": {"limits": {"cpu": 1, "memory": "1Gi"}, "requests": {"cpu": "500m"}},
        "ports": [{"containerPort": 2222, "name": "ssh"}],
        "livenessProbe": {"tcpSocket": {"port": 2222}, "periodSeconds": 10},
    }


def pi(name: str = "pi", workers: int | None = 2) -> dict[str, Any]:
    """The shape of upstream's examples/v2beta1/pi/pi.yaml."""
    worker: dict[str, Any] = {"template": {"spec": {"containers": [container("mpi-worker")]}}}
    if workers is not None:
        worker["replicas"] = workers
    launcher_container = container("mpi-launcher", "mpirun", "-n", "2", "/home/mpiuser/pi")
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "metadata": {
                            "labels": {"app": "pi"},
                            "annotations": {"sidecar.istio.io/inject": "false"},
                        },
                        "spec": {"containers": [launcher_container]},
                    },
                },
                "Worker": worker,
            },
        },
    }


def with_(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of obj with the dotted path set to value (or removed, for _MISSING)."""
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = obj
    for part in parents:
        node = node.setdefault(part, {})
    if value is _MISSING:
        node.pop(last)
    else:
        node[last] = value
    return obj


# Pod fields newer than the Kubernetes whose definitions upstream v0.8.2's CRD follows (1.35), one from each
# release since: (the version that added it, its definition, the field). A CRD made from 1.35's prunes them.
UPSTREAMS_KUBERNETES = "1.35.0"
NEWER_POD_FIELDS = (
    ("1.36.0", "io.k8s.api.core.v1.PodSpec", "schedulingGroup"),
    ("1.37.0", "io.k8s.api.core.v1.EmptyDirVolumeSource", "mode"),
)


def with_newer_pod_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of obj whose pod templates use NEWER_POD_FIELDS: each Pod joins a PodGroup named after the job
    (1.36), and mounts a shared-memory emptyDir at /dev/shm, as MPI uses it, with mode 01777 (1.37)."""
    obj = copy.deepcopy(obj)
    for replica in obj["spec"]["mpiReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        spec["schedulingGroup"] = {"podGroupName": obj["metadata"]["name"]}
        spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "mode": 0o1777}}]
        for each in spec["containers"]:
            each["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return obj


LAUNCHER = "spec.mpiReplicaSpecs.Launcher"
WORKER = "spec.mpiReplicaSpecs.Worker"
NAME_TOO_LONG = next(r["message"] for r in gen_crd.root_rules() if "too long" in r["message"])
NOT_DNS1035 = next(r["message"] for r in gen_crd.root_rules() if "DNS-1035" in r["message"])
NO_CONTAINER = ("cel", f"{WORKER}.template.spec.containers", "must define at least one container")
MULTIKUEUE = "kueue.x-k8s.io/multikueue"

FAILURE_POLICY = {
    "maxRestarts": 3,
    "rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}, "replicaTypes": ["Worker"]},
        {"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]},
        {"action": "RestartJob", "onExitCodes": {"operator": "NotIn", "values": [0, 1]}},
    ],
}
VALID = {
    "pi OpenMPI": pi(),
    "Intel, defaults only": with_(
        with_(pi(), "spec.mpiImplementation", "Intel"), "spec.slotsPerWorker", _MISSING
    ),
    "MPICH, wait for workers": with_(
        with_(pi(), "spec.mpiImplementation", "MPICH"), "spec.launcherCreationPolicy", "WaitForWorkersReady"
    ),
    # Upstream defaults a missing Launcher replicas to 1 before validating it.
    "Launcher without replicas": with_(pi(), f"{LAUNCHER}.replicas", _MISSING),
    "no Worker, launcher runs ranks": with_(with_(pi(), WORKER, _MISSING), "spec.runLauncherAsWorker", True),
    "slotsPerWorker 0": with_(pi(), "spec.slotsPerWorker", 0),
    "54-character name, 10 workers": pi("a" * 54, workers=10),
    "52-character name, 1000 workers": pi("a" * 52, workers=1000),
    "the largest job, 16,384 workers": pi(workers=MAX_WORKERS),
    "every run policy": with_(
        pi(),
        "spec.runPolicy",
        {
            "cleanPodPolicy": "All",
            "ttlSecondsAfterFinished": 0,
            "activeDeadlineSeconds": 3600,
            "backoffLimit": 6,
            "suspend": True,
            "managedBy": MULTIKUEUE,
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "default",
                "minResources": {"cpu": "10", "memory": "8Gi", "nvidia.com/gpu": 2},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 300,
            },
        },
    ),
    "Worker restartPolicy OnFailure": with_(pi(), f"{WORKER}.restartPolicy", "OnFailure"),
    "failure policy, every field": with_(pi(), "spec.failurePolicy", FAILURE_POLICY),
    "failure policy, empty": with_(pi(), "spec.failurePolicy", {}),
    # `command:` with no value, as in upstream's Intel and MPICH pi examples: the apiserver drops the null.
    "null command": with_(
        pi(), f"{WORKER}.template.spec.containers", [{"name": "w", "image": "busybox", "command": None}]
    ),
    "null template metadata field": with_(pi(), f"{WORKER}.template.metadata", {"creationTimestamp": None}),
    # Pruned (or refused by kubectl apply) with a pod template from upstream's Kubernetes 1.35.
    "Pod fields added in Kubernetes 1.36 and 1.37": with_newer_pod_fields(pi()),
}

INVALID = {
    "maxRestarts over the limit": (
        with_(pi(), "spec.failurePolicy", {"maxRestarts": 1001}),
        {("schema", "spec.failurePolicy.maxRestarts", "maximum")},
    ),
    "failure rule without action": (
        with_(pi(), "spec.failurePolicy", {"rules": [{"replicaTypes": ["Worker"]}]}),
        {("schema", "spec.failurePolicy.rules.0", "required")},
    ),
    "failure rule with an unknown action": (
        with_(pi(), "spec.failurePolicy", {"rules": [{"action": "Ignore"}]}),
        {("schema", "spec.failurePolicy.rules.0.action", "enum")},
    ),
    "exit code 0 with operator In": (
        with_(
            pi(),
            "spec.failurePolicy",
            {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 0]}}]},
        ),
        {
            (
                "cel",
                "spec.failurePolicy.rules[0].onExitCodes.values",
                "must not list 0 for operator In: a failed container never exits 0",
            )
        },
    ),
    "too many failure rules": (
        with_(pi(), "spec.failurePolicy", {"rules": [{"action": "FailJob"}] * 21}),
        {("schema", "spec.failurePolicy.rules", "maxItems")},
    ),
    "bad mpiImplementation": (
        with_(pi(), "spec.mpiImplementation", "OpenMPI5"),
        {("schema", "spec.mpiImplementation", "enum")},
    ),
    "bad launcherCreationPolicy": (
        with_(pi(), "spec.launcherCreationPolicy", "Later"),
        {("schema", "spec.launcherCreationPolicy", "enum")},
    ),
    "negative slotsPerWorker": (
        with_(pi(), "spec.slotsPerWorker", -1),
        {("schema", "spec.slotsPerWorker", "minimum")},
    ),
    "negative ttlSecondsAfterFinished": (
        with_(pi(), "spec.runPolicy.ttlSecondsAfterFinished", -1),
        {("schema", "spec.runPolicy.ttlSecondsAfterFinished", "minimum")},
    ),
    "negative minAvailable": (
        with_(pi(), "spec.runPolicy.schedulingPolicy", {"minAvailable": -1}),
        {("schema", "spec.runPolicy.schedulingPolicy.minAvailable", "minimum")},
    ),
    "negative scheduleTimeoutSeconds": (
        with_(pi(), "spec.runPolicy.schedulingPolicy", {"scheduleTimeoutSeconds": -1}),
        {("schema", "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "minimum")},
    ),
    "bad minResources quantity": (
        with_(pi(), "spec.runPolicy.schedulingPolicy", {"minResources": {"cpu": "lots"}}),
        {("schema", "spec.runPolicy.schedulingPolicy.minResources.cpu", "pattern")},
    ),
    "empty sshAuthMountPath": (
        with_(pi(), "spec.sshAuthMountPath", ""),
        {("schema", "spec.sshAuthMountPath", "minLength")},
    ),
    "no mpiReplicaSpecs": (
        with_(pi(), "spec.mpiReplicaSpecs", _MISSING),
        {("schema", "spec", "required")},
    ),
    "no Launcher": (
        with_(pi(), LAUNCHER, _MISSING),
        {("cel", LAUNCHER, "must have Launcher replica spec")},
    ),
    "lower-case launcher key": (
        with_(pi(), "spec.mpiReplicaSpecs", {"launcher": pi()["spec"]["mpiReplicaSpecs"]["Launcher"]}),
        {
            ("strict", "spec.mpiReplicaSpecs.launcher", "unknown field"),
            ("cel", LAUNCHER, "must have Launcher replica spec"),
        },
    ),
    "Launcher replicas 2": (
        with_(pi(), f"{LAUNCHER}.replicas", 2),
        {("cel", f"{LAUNCHER}.replicas", "must be 1")},
    ),
    "Worker replicas 0": (
        with_(pi(), f"{WORKER}.replicas", 0),
        {("cel", f"{WORKER}.replicas", "must be greater than or equal to 1")},
    ),
    "Worker replicas above the maximum": (
        with_(pi(), f"{WORKER}.replicas", MAX_WORKERS + 1),
        {("schema", f"{WORKER}.replicas", "maximum")},
    ),
    "Worker without replicas": (
        pi(workers=None),
        {("cel", f"{WORKER}.replicas", "must define number of replicas")},
    ),
    "no containers": (
        with_(pi(), f"{WORKER}.template.spec.containers", []),
        {NO_CONTAINER},
    ),
    "no pod spec": (
        with_(pi(), f"{WORKER}.template", {"metadata": {"labels": {"a": "b"}}}),
        {NO_CONTAINER},
    ),
    "no template": (
        with_(pi(), f"{WORKER}.template", _MISSING),
        {NO_CONTAINER},
    ),
    "restartPolicy Always": (
        with_(pi(), f"{LAUNCHER}.restartPolicy", "Always"),
        {("schema", f"{LAUNCHER}.restartPolicy", "enum")},
    ),
    "restartPolicy ExitCode": (
        with_(pi(), f"{WORKER}.restartPolicy", "ExitCode"),
        {("schema", f"{WORKER}.restartPolicy", "enum")},
    ),
    "cleanPodPolicy Bogus": (
        with_(pi(), "spec.runPolicy.cleanPodPolicy", "Bogus"),
        {("schema", "spec.runPolicy.cleanPodPolicy", "enum")},
    ),
    "managedBy other": (
        with_(pi(), "spec.runPolicy.managedBy", "example.com/other"),
        {("schema", "spec.runPolicy.managedBy", "enum")},
    ),
    "name too long for 1000 workers": (
        pi("a" * 53, workers=1000),
        {("cel", "metadata.name", NAME_TOO_LONG)},
    ),
    "name too long for one worker": (
        pi("a" * 55, workers=1),
        {("cel", "metadata.name", NAME_TOO_LONG)},
    ),
    "name starts with a digit": (
        pi("1-pi"),
        {("cel", "metadata.name", NOT_DNS1035)},
    ),
    "name with a dot": (
        pi("pi.v2"),
        {("cel", "metadata.name", NOT_DNS1035)},
    ),
    "pod template type error": (
        with_(pi(), f"{WORKER}.template.spec.containers", [{"name": "w", "image": 5}]),
        {("schema", f"{WORKER}.template.spec.containers.0.image", "type")},
    ),
    "container without name": (
        with_(pi(), f"{WORKER}.template.spec.containers", [{"image": "busybox"}]),
        {("schema", f"{WORKER}.template.spec.containers.0", "required")},
    ),
    "unknown pod field": (
        with_(pi(), f"{WORKER}.template.spec.containerz", []),
        {("strict", f"{WORKER}.template.spec.containerz", "unknown field")},
    ),
}


@pytest.mark.parametrize("obj", VALID.values(), ids=VALID.keys())
def test_valid_mpijobs_are_admitted(
    schema: dict[str, Any], programs: dict[str, Any], obj: dict[str, Any]
) -> None:
    assert admission_errors(schema, programs, obj) == set()


@pytest.mark.parametrize(("obj", "expected"), INVALID.values(), ids=INVALID.keys())
def test_invalid_mpijobs_are_rejected_by_the_expected_rule(
    schema: dict[str, Any], programs: dict[str, Any], obj: dict[str, Any], expected: set[tuple[str, str, str]]
) -> None:
    assert admission_errors(schema, programs, obj) == expected


MANAGED_BY_IMMUTABLE = ("cel", "spec.runPolicy.managedBy", gen_crd._MANAGED_BY_IMMUTABLE_RULE["message"])
UPDATES = {
    "unchanged managedBy": (MULTIKUEUE, MULTIKUEUE, set()),
    "managedBy never set": (None, None, set()),
    "managedBy changed": ("kubeflow.org/mpi-operator", MULTIKUEUE, {MANAGED_BY_IMMUTABLE}),
    "managedBy added": (None, MULTIKUEUE, {MANAGED_BY_IMMUTABLE}),
    "managedBy removed": (MULTIKUEUE, None, {MANAGED_BY_IMMUTABLE}),
}


@pytest.mark.parametrize(("before", "after", "expected"), UPDATES.values(), ids=UPDATES.keys())
def test_managed_by_is_immutable(
    schema: dict[str, Any],
    programs: dict[str, Any],
    before: str | None,
    after: str | None,
    expected: set[Any],
) -> None:
    old, new = pi(), with_(pi(), f"{WORKER}.replicas", 4)  # an unrelated change rides along
    if before:
        old = with_(old, "spec.runPolicy.managedBy", before)
    if after:
        new = with_(new, "spec.runPolicy.managedBy", after)
    assert admission_errors(schema, programs, new, old=old) == expected
    assert admission_errors(schema, programs, new) == set()  # a create is not a transition


def _example_mpijobs() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{path.relative_to(ROOT)}:{doc['metadata']['name']}", doc)
        for path in sorted((ROOT / "examples").rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") == "MPIJob"
    ]


def test_every_example_is_admitted(schema: dict[str, Any], programs: dict[str, Any]) -> None:
    examples = _example_mpijobs()
    if not examples:
        pytest.skip("no MPIJob in examples/")
    rejected = {name: errors for name, job in examples if (errors := admission_errors(schema, programs, job))}
    assert not rejected


def test_defaulting_fills_upstreams_crd_defaults_only(schema: dict[str, Any]) -> None:
    job = with_(pi(), "spec", {"mpiReplicaSpecs": pi()["spec"]["mpiReplicaSpecs"], "runPolicy": {}})
    apply_defaults(schema, job)
    spec = job["spec"]
    assert {k: v for k, v in spec.items() if k != "mpiReplicaSpecs"} == {
        "launcherCreationPolicy": "AtStartup",
        "mpiImplementation": "OpenMPI",
        "runLauncherAsWorker": False,
        "runPolicy": {"suspend": False},  # no cleanPodPolicy: the hook defaults it in memory, as upstream
        "slotsPerWorker": 1,
        "sshAuthMountPath": "/root/.ssh",
    }
    assert spec["mpiReplicaSpecs"] == pi()["spec"]["mpiReplicaSpecs"]  # no replicas or restartPolicy defaults


def test_status_as_the_hook_writes_it_is_valid(schema: dict[str, Any], programs: dict[str, Any]) -> None:
    job = pi()
    job["status"] = {
        "observedGeneration": 3,
        "startTime": "2025-01-01T00:00:00Z",
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "MPIJobCreated",
                "message": "MPIJob default/pi is created.",
                "lastUpdateTime": "2025-01-01T00:00:00Z",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            }
        ],
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 2, "succeeded": 0}},
    }
    assert admission_errors(schema, programs, job) == set()
    job["status"]["conditions"][0]["status"] = "Maybe"
    assert admission_errors(schema, programs, job) == {("schema", "status.conditions.0.status", "enum")}
