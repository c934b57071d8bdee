"""Kubernetes' Workload API as the doctor reads it: which version the cluster serves, which the
CompositeController declares, and the one overlay that fits.

``MPI_OPERATOR_GANG_SCHEDULING=kubernetes`` writes the Workload API in the version the CompositeController
declares (``gang.declared``): one overlay per Kubernetes release, and no release serves two versions. Two
ways to miss: no overlay declares the children (the hook's GangSchedulingUnavailable, reason
PodGroupChildNotDeclared, names every overlay; the doctor names the one this cluster serves), or the overlay
applied declares a version the cluster does not serve (Metacontroller stops the whole CompositeController:
no job gets a status, ``not-synced``). Both are read only when the job shows one of them (``matters``).
"""

from __future__ import annotations

from typing import Any

from app.api.types import ConditionType
from app.cli.terminal import cut
from app.core.reasons import REASON_PODGROUP_NOT_DECLARED
from app.kube.gang import (
    KUBERNETES,
    SCHEDULER_PLUGINS_OVERLAY,
    VOLCANO_OVERLAY,
    WORKLOAD_API_FEATURE_GATES,
    WORKLOAD_API_OVERLAYS,
    WORKLOAD_API_RELEASES,
    WORKLOAD_API_V1BETA1,
    WORKLOAD_API_VERSIONS,
    child_resources,
)

# The CompositeController deploy/ installs, and where the doctor reads it (cluster-scoped).
CONTROLLER = "mpi-operator-hook"
CONTROLLERS = "compositecontrollers.metacontroller.k8s.io"
CONTROLLER_PATH = f"/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/{CONTROLLER}"
APPLY = "kubectl apply --server-side -k"
# The install without gang scheduling (README: quick start).
WITHOUT_GANG = "deploy/"
# How the hook's notice names the Workload API's children ("workloads and podgroups", ``notices``).
_CHILDREN = " and ".join(child_resources(WORKLOAD_API_V1BETA1))
UNSET = "or unset MPI_OPERATOR_GANG_SCHEDULING"


def about_the_workload_api(condition: dict[str, Any]) -> bool:
    """The hook's GangSchedulingUnavailable (PodGroupChildNotDeclared) for the ``kubernetes`` setting: the
    Workload API's children are not declared."""
    message = str(condition.get("message") or "")
    return (
        condition.get("type") == ConditionType.GANG_SCHEDULING_UNAVAILABLE
        and condition.get("status") == "True"
        and condition.get("reason") == REASON_PODGROUP_NOT_DECLARED
        and (_CHILDREN in message or f"is {KUBERNETES!r}" in message)
    )


def matters(job: dict[str, Any]) -> bool:
    """Whether ``gather`` reads the served versions and the controller's children: the job has no status
    yet (a controller Metacontroller stopped answers for none) or says the Workload API is undeclared."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return not conditions or any(about_the_workload_api(c) for c in conditions)


def served(apis: dict[str, list[str]] | None) -> tuple[str, ...]:
    """The Workload API versions served with both children (``apis``: version -> its resources listed)."""
    listed = apis or {}
    return tuple(v for v in WORKLOAD_API_VERSIONS if set(child_resources(v)) <= set(listed.get(v, ())))


def evidence(apis: dict[str, list[str]]) -> tuple[str, ...]:
    """One line per version: served, not served, or served without a child (a feature gate off)."""
    lines = []
    for version in WORKLOAD_API_VERSIONS:
        said = f"{version} (Kubernetes {WORKLOAD_API_RELEASES[version]})"
        listed = apis.get(version)
        missing = [r for r in child_resources(version) if r not in (listed or ())]
        if listed is None:
            lines.append(f"{said}: not served (GET /apis/{version}: 404 Not Found)")
        elif missing:
            gates = WORKLOAD_API_FEATURE_GATES[version]
            off = f"feature gate{'s' if len(gates) > 1 else ''} {' and '.join(gates)} off?"
            lines.append(f"{said}: served without {' and '.join(missing)} ({off})")
        else:
            lines.append(f"{said}: served, with {' and '.join(listed)}")
    return tuple(lines)


def install(apis: dict[str, list[str]], otherwise: str) -> str:
    """Which version the cluster serves and its overlay, or how to turn the Workload API on (``otherwise``:
    the way out without it)."""
    versions = served(apis)
    if versions:
        version = versions[0]
        return (
            f"the cluster serves {version} (Kubernetes {WORKLOAD_API_RELEASES[version]}):"
            f" {APPLY} {WORKLOAD_API_OVERLAYS[version]}"
        )
    newest = WORKLOAD_API_VERSIONS[0]
    each = "; ".join(
        f"on {'Kubernetes ' if v == newest else ''}{WORKLOAD_API_RELEASES[v]}, kube-apiserver"
        f" --runtime-config={v}=true with --feature-gates="
        f"{','.join(f'{gate}=true' for gate in WORKLOAD_API_FEATURE_GATES[v])}, then {APPLY}"
        f" {WORKLOAD_API_OVERLAYS[v]}"
        for v in WORKLOAD_API_VERSIONS
    )
    return (
        f"the cluster serves no Workload API; turn it on, then apply its overlay: {each} (each overlay's"
        f" header names the components that take the gates); {otherwise}"
    )


def undeclared_fix(apis: dict[str, list[str]]) -> str:
    """``gang-scheduling-unavailable``'s fix for the Workload API, the served versions read."""
    return install(apis, UNSET)


def any_overlay() -> str:
    """Every gang overlay, for when the doctor does not know which (the cluster's API not read)."""
    overlays = (VOLCANO_OVERLAY, SCHEDULER_PLUGINS_OVERLAY, *WORKLOAD_API_OVERLAYS.values())
    return f"{', '.join(overlays[:-1])} or {overlays[-1]}"


def workload_overlays() -> str:
    """``deploy/overlays/kubernetes (Kubernetes 1.37) or deploy/overlays/kubernetes-1.36 (1.36)``."""
    newest, *older = WORKLOAD_API_VERSIONS
    return " or ".join(
        [f"{WORKLOAD_API_OVERLAYS[newest]} (Kubernetes {WORKLOAD_API_RELEASES[newest]})"]
        + [f"{WORKLOAD_API_OVERLAYS[v]} ({WORKLOAD_API_RELEASES[v]})" for v in older]
    )


def declared_unserved(
    apis: dict[str, list[str]] | None, children: list[dict[str, str]] | None
) -> tuple[str, tuple[str, ...]] | None:
    """The Workload API version the controller declares (with the resources it declares in it) that the
    cluster does not serve them in, if one: Metacontroller then stops the whole controller."""
    if apis is None or children is None:
        return None
    for version in WORKLOAD_API_VERSIONS:
        declared = tuple(dict.fromkeys(c["resource"] for c in children if c["apiVersion"] == version))
        if declared and not set(declared) <= set(apis.get(version, ())):
            return version, declared
    return None


def stopped(apis: dict[str, list[str]], version: str, resources: tuple[str, ...]) -> tuple[str, str]:
    """``not-synced``'s cause and fix when the controller declares ``resources`` of ``version`` unserved."""
    versions = served(apis)
    serving = " and ".join(v.split("/")[1] for v in versions) if versions else "no Workload API"
    cause = (
        f"CompositeController {CONTROLLER} declares {version} {cut(' and '.join(resources), 120)}, which this"
        f" cluster (serving {serving}) does not serve: Metacontroller stops the whole controller"
    )
    if versions:
        fix = (
            f"apply the overlay for the version the cluster serves instead: {APPLY}"
            f" {WORKLOAD_API_OVERLAYS[versions[0]]} ({versions[0]}, Kubernetes"
            f" {WORKLOAD_API_RELEASES[versions[0]]})"
        )
    else:
        fix = install(apis, f"or go without gang scheduling: {APPLY} {WITHOUT_GANG}")
    return cause, fix
