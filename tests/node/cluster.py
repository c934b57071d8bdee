"""One real node on this machine: control plane + bridge + containerd + kubelet & co, then the images.

Start order: the images build in a thread meanwhile (they take longest); the bridge; the control plane of
tests/e2e with its apiserver on the bridge address (Pods reach it through the ``kubernetes`` Service) and Node
authorization; Metacontroller's CRDs; containerd; kubelet, scheduler, CoreDNS, kube-proxy; the node Ready.
Each image is imported into containerd as soon as it is built and the node is up. ``stop`` undoes all of it:
processes by PID, Pod containers, mounts, cgroups, the bridge and kube-proxy's nft tables.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

import httpx

from tests.e2e.controlplane import (
    ControlPlane,
    Options,
    find_binaries,
    metacontroller_crds,
    start_control_plane,
)
from tests.e2e.kube import Kube, wait_for
from tests.node import neighbours, recipes
from tests.node.containerd import PAUSE_IMAGE, Containerd, remove_cgroups, unmount_under
from tests.node.images import CACHE, Builder, Recipe, build_all
from tests.node.network import Network
from tests.node.node import KUBELET_CGROUP, NODE_NAME, NODE_PROCESSES, PAUSE_ARCHIVE, Node
from tests.support import kubernetes_releases
from tests.support.kubernetes_releases import NODE_RELEASE
from tests.support.neighbour_builds import Built, build

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
COMMANDS = ("buildah", "debootstrap", "containerd", "ctr", "runc", "nft", "ip", "kubectl")
DEBIAN_PACKAGES = "containerd runc containernetworking-plugins nftables debootstrap buildah"


def missing() -> str | None:
    """Why the real node cannot start on this machine, or None."""
    if os.geteuid() != 0:
        return "the real node needs root (a bridge, containerd, kubelet)"
    absent = [c for c in COMMANDS if shutil.which(c) is None]
    if absent:
        recorded = CACHE / "skipped"
        said = recorded.read_text().strip() if recorded.exists() else ""
        return (
            f"missing {', '.join(absent)} (Debian: apt-get install {DEBIAN_PACKAGES}; "
            f".ci/install-node said: {said or '-'})"
        )
    return kubernetes_releases.missing(NODE_RELEASE)


def all_recipes(bin_dir: Path) -> list[Recipe]:
    """Every image, each after the ones it builds FROM."""
    mpi = [build.recipe() for build in recipes.MPI_BUILDS.values()]
    return [recipes.PYTHON_STAND_IN, recipes.HOOK, recipes.metacontroller(bin_dir / "metacontroller"), *mpi]


@dataclass
class Cluster:
    workdir: Path
    network: Network = field(default_factory=Network)
    plane: ControlPlane | None = None
    containerd: Containerd | None = None
    kube: Kube | None = None
    timings: dict[str, float] = field(default_factory=dict)
    archives: dict[str, Path] = field(default_factory=dict)
    # The neighbours' programs (neighbours.NAMES), built from their Go modules while the node starts, one
    # after another (cached: a no-op when warm).
    builds: dict[str, Future[Built]] = field(default_factory=dict)
    _node_up: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Kube:
        tarballs, _ = find_binaries()  # Metacontroller's image: the same program whatever the release
        assert tarballs is not None
        builds = ThreadPoolExecutor(max_workers=1)  # not waited for here: each test module waits for its own
        for name in neighbours.NAMES:
            self.builds[name] = builds.submit(self._timed, f"{name} built", partial(build, name))
        builds.shutdown(wait=False)
        with ThreadPoolExecutor(max_workers=2) as pool:
            images = pool.submit(self._build, tarballs)
            # Built from its Go module for 1.37 (once per machine) while the images build.
            bin_dir, node_bin = self._timed(
                f"kubernetes {NODE_RELEASE.version} binaries",
                lambda: kubernetes_releases.binaries(NODE_RELEASE),
            )
            began = time.monotonic()
            try:
                self._start_node(bin_dir, node_bin)
            finally:
                self._node_up.set()  # imports wait for it (and give up if containerd is not there)
            self.timings["node start"] = time.monotonic() - began
            self.archives = images.result()
        assert self.kube is not None
        return self.kube

    def _build(self, bin_dir: Path) -> dict[str, Path]:
        """Build every image; import each the node runs as soon as it is built and the node is up."""
        began = time.monotonic()
        archives = build_all(Builder(), ("bookworm", "trixie"), all_recipes(bin_dir), self._import)
        self.timings["images built and imported"] = time.monotonic() - began
        return archives

    def _timed(self, what: str, step: Callable[[], T]) -> T:
        began = time.monotonic()
        done = step()
        self.timings[what] = time.monotonic() - began
        return done

    def add_image(self, recipe: Recipe) -> None:
        """Build one more image (cached like the others) and import it into the node."""
        assert self.containerd is not None
        builder = Builder()
        began = time.monotonic()
        builder.build(recipe)
        self.containerd.load(builder.archive(recipe), recipe.names[0], recipe.names[1:])
        self.timings[f"image {recipe.name} built and imported"] = time.monotonic() - began

    def _import(self, recipe: Recipe, archive: Path) -> None:
        """Into containerd, all but the hook's (the quick start's `kind load` step does that)."""
        if not recipe.load or recipe.name == recipes.HOOK.name:
            return
        self._node_up.wait()
        if self.containerd is not None and self.containerd.started is not None:
            began = time.monotonic()
            self.containerd.load(archive, recipe.names[0], recipe.names[1:])
            self.timings[f"import {recipe.name}"] = time.monotonic() - began

    def _start_node(self, bin_dir: Path, node_bin: Path) -> None:
        self.network.create()
        options = Options(
            address=self.network.address,
            service_cidr=self.network.service_cidr,
            node=True,
            apiserver_args=(NODE_RELEASE.runtime_config,),
            feature_gates=NODE_RELEASE.feature_gates,
        )
        self.plane = start_control_plane(bin_dir, self.workdir / "plane", options)
        client = httpx.Client(base_url=self.plane.server, verify=self.plane.ssl_context(), timeout=30)
        self.kube = Kube(client, self.plane.kubeconfig)
        # The quick start installs them (deploy/metacontroller/, served by
        # tests/support/metacontroller_standin.py).
        assert metacontroller_crds(bin_dir) is not None, "metacontroller-crds-v1.yaml not found"
        self.containerd = Containerd(self.workdir / "containerd", self.plane.processes)
        self.containerd.workdir.mkdir(parents=True)
        self.network.cni_config(self.containerd.cni_conf, self.workdir / "ipam")
        self.containerd.start()
        self.containerd.load(node_bin / PAUSE_ARCHIVE, PAUSE_IMAGE)
        node = Node(self.workdir / "node", node_bin, self.plane, self.network, self.plane.processes)
        node.start()
        wait_for(self._node_ready, 120, f"node {NODE_NAME} Ready")

    def _node_ready(self) -> bool:
        assert self.kube is not None
        node = self.kube.get("nodes", None, NODE_NAME) or {}
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )

    def check_hook_build(self, command: str) -> None:
        """`docker build -t NAME .`: the hook's image is built from the Dockerfile (with the others)."""
        tag = command.split("-t", 1)[1].split()[0]
        assert _normalized(tag) == recipes.HOOK_IMAGE, (
            f"quick start builds {tag}, the harness {recipes.HOOK_IMAGE}"
        )

    def load_hook(self, command: str) -> None:
        """`kind load docker-image NAME`: import the hook's image into containerd."""
        assert self.containerd is not None
        assert _normalized(command.split()[3]) == recipes.HOOK_IMAGE
        self.containerd.load(self.archives[recipes.HOOK.name], recipes.HOOK_IMAGE)

    def kill_container(self, container_id: str) -> None:
        """SIGKILL a container's process (``containerd://<id>`` from a Pod's status), as OOM kills do."""
        assert self.containerd is not None
        self.containerd.ctr(
            "tasks", "kill", "--signal", "SIGKILL", container_id.removeprefix("containerd://")
        )

    def stop(self) -> None:
        """The node's processes first (a running kubelet would restart the containers), then the Pods'
        containers, containerd, the control plane; then mounts, cgroups, the bridge and nft tables."""
        if self.plane is not None:
            for started in [s for s in self.plane.processes.started if s.name in NODE_PROCESSES]:
                self.plane.processes.stop(started)
        if self.containerd is not None:
            self.containerd.stop()
        if self.plane is not None:
            self.plane.stop()
        unmount_under(self.workdir)
        remove_cgroups(KUBELET_CGROUP)
        self.network.remove()


def _normalized(image: str) -> str:
    """An image reference as containerd stores it (``name:tag`` -> ``docker.io/library/name:tag``)."""
    if "/" not in image:
        return f"docker.io/library/{image}"
    return image if "." in image.split("/")[0] else f"docker.io/{image}"
