"""Validate objects against Kubernetes' own JSON schemas (kubernetes-validate), one validator per kind.

``kubernetes_validate.validate`` re-reads the 1.5 MB definitions file on every call; the tests check
thousands of objects, so the validators are built once from the same files and the same rules
(strict: unknown fields fail, as ``kubectl apply --validate=strict`` does).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any

import jsonschema
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

from tests.support import paths

KUBERNETES_VERSION = "1.32.0"
# The Workload API by the release that serves it; a Pod's spec.schedulingGroup is 1.36's.
WORKLOAD_API_RELEASES = {"scheduling.k8s.io/v1beta1": "1.37.0", "scheduling.k8s.io/v1alpha2": "1.36.0"}
SCHEDULING_GROUP_RELEASE = "1.36.0"
REDACTED = "cmVkYWN0ZWQ="  # base64("redacted"): key material never reaches an error message


@functools.cache
def _definitions(version: str = KUBERNETES_VERSION) -> Resource[Any]:
    return Resource.from_contents(
        schema_contents(f"kubernetes-json-schema/{_folder(version)}/_definitions.json", version)
    )


def _folder(version: str = KUBERNETES_VERSION) -> str:
    return f"v{version}-local-strict"


# Custom resources we emit: our own schemas, written from each project's Go API types (tests/schemas/).
OWN_SCHEMAS = paths.TESTS / "schemas"
CUSTOM_KINDS = {
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): "podgroup-scheduling.volcano.sh-v1beta1.json",
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): "podgroup-scheduling.x-k8s.io-v1alpha1.json",
}


def custom_resource_schema(api_version: str, kind: str) -> dict[str, Any]:
    """The structural schema of a custom resource (as a CRD's ``openAPIV3Schema``)."""
    loaded: dict[str, Any] = json.loads((OWN_SCHEMAS / CUSTOM_KINDS[(api_version, kind)]).read_text())
    return loaded


def _strict(node: Any) -> Any:
    """Unknown fields are errors (kubectl's strict field validation), as in the Kubernetes schemas."""
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
    elif isinstance(node, list):
        node = [_strict(v) for v in node]
    return node


def _custom_validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    schema = _strict(copy.deepcopy(custom_resource_schema(api_version, kind)))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://kubernetes.io/api/{kind.lower()}/{api_version}"
    schema["properties"]["apiVersion"]["enum"] = [api_version]
    schema["properties"]["kind"]["enum"] = [kind]
    schema["properties"]["metadata"] = {
        "$ref": "/api/_definitions.json#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    }
    schema["required"] = ["apiVersion", "kind", "metadata"]
    registry = _definitions() @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@functools.cache
def validator(
    api_version: str, kind: str, version: str = KUBERNETES_VERSION
) -> jsonschema.protocols.Validator:
    if (api_version, kind) in CUSTOM_KINDS:
        return _custom_validator(api_version, kind)
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = schema_contents(
        f"kubernetes-json-schema/{_folder(version)}/{kind.lower()}-{group_version}.json", version
    )
    registry = _definitions(version) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def redacted(obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("kind") == "Secret":
        return {**obj, "data": dict.fromkeys(obj.get("data") or {}, REDACTED)}
    return obj


def _version(obj: dict[str, Any]) -> str:
    """The Workload API's kinds by their release; 1.36 for the Pods (or Jobs) that join one of its groups."""
    if obj["apiVersion"] in WORKLOAD_API_RELEASES:
        return WORKLOAD_API_RELEASES[obj["apiVersion"]]
    return SCHEDULING_GROUP_RELEASE if '"schedulingGroup"' in json.dumps(obj) else KUBERNETES_VERSION


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Every schema violation of ``obj`` as ``path: message`` (Secret data redacted first)."""
    checked = redacted(obj)
    errors = validator(checked["apiVersion"], checked["kind"], _version(checked)).iter_errors(checked)
    return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}" for e in errors]
