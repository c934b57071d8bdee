"""The CompositeController a request comes from, as far as the hook reads it: which child kinds it
declares (Metacontroller manages only those) and whether it has a customize hook."""

from __future__ import annotations

import msgspec

from app.kube import gang


class HookRef(msgspec.Struct, frozen=True, gc=False):
    version: str | None = None


class Hooks(msgspec.Struct, frozen=True, gc=False):
    sync: HookRef | None = None
    customize: HookRef | None = None


class ChildResource(msgspec.Struct, frozen=True, gc=False):
    apiVersion: str = ""
    resource: str = ""


class ControllerSpec(msgspec.Struct, frozen=True, gc=False):
    childResources: list[ChildResource] | None = None
    hooks: Hooks | None = None


class Controller(msgspec.Struct, frozen=True, gc=False):
    spec: ControllerSpec | None = None

    def declares_child(self, api_version: str, resource: str) -> bool:
        """Metacontroller manages this child kind; an undeclared kind must never be emitted."""
        children = (self.spec.childResources if self.spec else None) or []
        return any(c.apiVersion == api_version and c.resource == resource for c in children)

    @property
    def has_customize_hook(self) -> bool:
        return bool(self.spec and self.spec.hooks and self.spec.hooks.customize)

    @property
    def declared_podgroups(self) -> frozenset[str]:
        """The PodGroup apiVersions Metacontroller manages as children (a gang overlay is applied): with the
        Workload API, only when the Workload is declared too."""
        versions = gang.PODGROUP_API_VERSIONS
        return frozenset(
            v for v in versions if all(self.declares_child(v, r) for r in gang.child_resources(v))
        )
