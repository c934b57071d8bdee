"""Validate objects against Kubernetes' own JSON schemas (kubernetes-validate), one validator per kind.

``kubernetes_validate.validate`` re-reads the 1.5 MB definitions file on every call; the tests check
thousands of objects, so the validators are built once from the same files and the same rules
(strict: unknown fields fail, as ``kubectl apply --validate=strict`` does).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

KUBERNETES_VERSION = "1.32.0"
REDACTED = "cmVkYWN0ZWQ="  # base64("redacted"): key material never reaches an error message


@functools.cache
def _definitions() -> Resource[Any]:
    return Resource.from_contents(
        schema_contents(f"kubernetes-json-schema/{_folder()}/_definitions.json", KUBERNETES_VERSION)
    )


def _folder() -> str:
    return f"v{KUBERNETES_VERSION}-local-strict"


@functools.cache
def validator(api_version: str, kind: str) -> jsonschema.protocols.Validator:
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = schema_contents(
        f"kubernetes-json-schema/{_folder()}/{kind.lower()}-{group_version}.json", KUBERNETES_VERSION
    )
    registry = _definitions() @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def redacted(obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("kind") == "Secret":
        return {**obj, "data": dict.fromkeys(obj.get("data") or {}, REDACTED)}
    return obj


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Every schema violation of ``obj`` as ``path: message`` (Secret data redacted first)."""
    checked = redacted(obj)
    errors = validator(checked["apiVersion"], checked["kind"]).iter_errors(checked)
    return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}" for e in errors]
