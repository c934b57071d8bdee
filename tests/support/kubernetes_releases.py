"""The Kubernetes releases the real control plane and node run: 1.36.2 from the e2e tarballs, 1.37.2 built by
``scripts/build-neighbour kubernetes`` from its Go module (kube-apiserver, kube-controller-manager and
kube-scheduler; etcd, Metacontroller and the node's kubelet, kube-proxy and CoreDNS stay the tarballs', a
1.36 kubelet under a 1.37 control plane being within Kubernetes' version skew policy).

Each release says how its Workload API is turned on: the version served, the feature gates (1.37 dropped
``GangScheduling``, folded into ``GenericWorkload``) and the overlay that declares it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from app.kube.gang import (
    WORKLOAD_API_FEATURE_GATES,
    WORKLOAD_API_OVERLAYS,
    WORKLOAD_API_V1ALPHA2,
    WORKLOAD_API_V1BETA1,
)
from tests.e2e.controlplane import find_binaries
from tests.node.node import find_node_binaries
from tests.support.neighbour_builds import build


@dataclass(frozen=True)
class Release:
    version: str
    # The Workload API it serves (with ``runtime_config`` and the gates).
    workload_api: str
    feature_gates: str
    overlay: str
    # Built from the Go module (else the e2e tarballs' own binaries).
    built: bool

    @property
    def runtime_config(self) -> str:
        return f"--runtime-config={self.workload_api}=true"

    @property
    def minor(self) -> str:
        return self.version.rsplit(".", 1)[0]


def _gates(workload_api: str) -> str:
    """What turns the Workload API on (as the doctor tells users), and topology-aware placement."""
    gates = (*WORKLOAD_API_FEATURE_GATES[workload_api], "TopologyAwareWorkloadScheduling")
    return ",".join(f"{gate}=true" for gate in gates)


def _release(version: str, workload_api: str, *, built: bool) -> Release:
    return Release(version, workload_api, _gates(workload_api), WORKLOAD_API_OVERLAYS[workload_api], built)


V1_36 = _release("1.36.2", WORKLOAD_API_V1ALPHA2, built=False)
V1_37 = _release("1.37.2", WORKLOAD_API_V1BETA1, built=True)
RELEASES = {release.minor: release for release in (V1_36, V1_37)}


def chosen(variable: str, default: Release) -> Release:
    """The release an environment variable names (``1.36`` or ``1.37``), else ``default``."""
    given = os.environ.get(variable, "").strip()
    if not given:
        return default
    if given not in RELEASES:
        raise ValueError(f"{variable}={given!r}: one of {', '.join(RELEASES)}")
    return RELEASES[given]


# The real node runs the newest release (MPI_HOOK_NODE_KUBERNETES=1.36 for the other); the control-plane
# e2e suite the oldest (MPI_HOOK_E2E_KUBERNETES=1.37), and its Workload API module both (docs/testing.md).
NODE_RELEASE = chosen("MPI_HOOK_NODE_KUBERNETES", V1_37)
E2E_RELEASE = chosen("MPI_HOOK_E2E_KUBERNETES", V1_36)


def built_programs() -> dict[str, Path]:
    """1.37's programs by name, built once per machine (the script caches them by release)."""
    built = build("kubernetes")
    assert built.version == f"v{V1_37.version}", (
        f"build-neighbour pins {built.version}, the tests {V1_37.version}"
    )
    return built.programs


def _overlaid(base: Path, programs: dict[str, Path], into: Path) -> Path:
    """``into``: every file of ``base``, with ``programs`` in place of theirs (symbolic links)."""
    into.mkdir(parents=True, exist_ok=True)
    for source in [*base.iterdir(), *programs.values()]:
        chosen_source = programs.get(source.name, source)
        link = into / source.name
        if link.is_symlink() and link.resolve() == chosen_source.resolve():
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(chosen_source)
    return into


def missing(release: Release) -> str | None:
    """Why ``release`` cannot run here, or None (its build itself may still fail: ``binaries`` raises)."""
    for finder in (find_binaries, find_node_binaries):
        directory, reason = finder()
        if directory is None:
            return reason
    if release.built and shutil.which("go") is None:
        return f"Kubernetes {release.version} is built from its Go module: go is not on PATH"
    return None


def binaries(release: Release) -> tuple[Path, Path]:
    """The control plane's and the node's binary directories for ``release`` (``missing`` said None)."""
    plane, reason = find_binaries()
    node, node_reason = find_node_binaries()
    assert plane is not None and node is not None, reason or node_reason
    if not release.built:
        return plane, node
    cache = plane.parent / f"mpi-hook-kubernetes-{release.version}"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two xdist workers: one builds, the other waits for it
        programs = built_programs()
        on_plane = {n: p for n, p in programs.items() if n != "kube-scheduler"}
        on_node = {n: p for n, p in programs.items() if n == "kube-scheduler"}
        return _overlaid(plane, on_plane, cache / "plane"), _overlaid(node, on_node, cache / "node")
