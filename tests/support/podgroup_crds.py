"""CustomResourceDefinitions for both PodGroup kinds, built from our own schemas in tests/schemas/.

For a test cluster without Volcano or scheduler-plugins (the end-to-end suite): the kinds exist, so a
CompositeController that declares a PodGroup child starts, and the apiserver checks every PodGroup the hook
emits against the schema we wrote from each project's Go API types.
"""

from __future__ import annotations

from typing import Any

from tests.support.kube_schema import custom_resource_schema

PODGROUP_API_VERSIONS = ("scheduling.volcano.sh/v1beta1", "scheduling.x-k8s.io/v1alpha1")


def podgroup_crd(api_version: str) -> dict[str, Any]:
    group, version = api_version.split("/")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"podgroups.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": "PodGroup",
                "listKind": "PodGroupList",
                "plural": "podgroups",
                "singular": "podgroup",
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": custom_resource_schema(api_version, "PodGroup")},
                    "subresources": {"status": {}},
                }
            ],
        },
    }
