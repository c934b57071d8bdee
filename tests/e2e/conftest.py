"""The e2e session: one control plane (or a given cluster), our CRD and CompositeController, our hook.

Cluster, in this order of preference:
  - ``MPI_HOOK_E2E_KUBECONFIG``: an existing cluster with Metacontroller installed (e.g. kind). The API is
    read through ``kubectl proxy``; the hook listens on ``MPI_HOOK_E2E_HOOK_HOST`` (default 127.0.0.1),
    which Metacontroller must be able to reach (for kind: the docker bridge gateway, e.g. 172.18.0.1).
  - binaries (see controlplane.py): etcd, kube-apiserver, kube-controller-manager, Metacontroller, all
    started here.
  - neither: every e2e test is skipped with the reason.

Parallel runs (``-n 2``): ``pytest_xdist_make_scheduler`` in tests/conftest.py puts every e2e test in one
work unit, so one xdist worker runs them all against one control plane. Should they ever be split, each
worker starts its own control plane (free ports, own directories): slower, still correct.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e import jobs
from tests.e2e.controlplane import ControlPlane, find_binaries, start_control_plane, with_metacontroller_crds
from tests.e2e.hook import Hook, install_caller_token
from tests.e2e.kube import Kube, given_cluster, wait_for
from tests.e2e.processes import Processes
from tests.support import kubernetes_releases
from tests.support.clusters import ns, pytest_runtest_makereport
from tests.support.kubernetes_releases import E2E_RELEASE
from tests.support.metacontroller_standin import served_metacontroller

# From tests/support (autouse or by name): pytest finds fixtures and hooks here.
__all__ = ["ns", "pytest_runtest_makereport", "served_metacontroller"]

ROOT = Path(__file__).resolve().parents[2]
SETTLE_SECONDS = 2.0
# The hook's account as deploy/ installs it (tests/e2e/test_e2e_events.py).
HOOK_NAMESPACE, HOOK_ACCOUNT = "mpi-operator", "mpi-operator-hook"


@dataclass
class E2E:
    """Everything a scenario needs: the API, the hook process, and (own control plane only) Metacontroller."""

    LOGS = "e2e logs"

    kube: Kube
    hook: Hook
    plane: ControlPlane | None
    workdir: Path
    # The CompositeController as installed: `kubectl kustomize` of the overlay.
    installed_controller: str = ""
    pokes: int = 0
    # Substrings of Metacontroller sync errors the current test provokes on purpose.
    expected_errors: tuple[str, ...] = ()
    # The file holding the token of the hook's ServiceAccount, when the hook posts Events (own control plane).
    hook_token_file: Path | None = None

    def restart_metacontroller(self) -> None:
        if self.plane is None:
            pytest.skip("restarting Metacontroller needs the control plane started by the tests")
        self.plane.stop_metacontroller()
        self.plane.start_metacontroller()

    def writes(self, ns: str, name: str) -> list[tuple[str, str, str]] | None:
        """(Creating/Updating/Deleting child, kind, child) Metacontroller logged for job ns/name, in order.

        None against a given cluster: its Metacontroller's log is not ours to read.
        """
        if self.plane is None:
            return None
        found = []
        for line in (self.workdir / "metacontroller.log").read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            parent, child = entry.get("parent") or {}, entry.get("child") or {}
            if child and parent.get("namespace") == ns and parent.get("name") == name:
                found.append((entry["msg"], child["kind"], child["name"]))
        return found

    def namespace_problems(self, namespace: str) -> list[str]:
        """Metacontroller's failed syncs in ``namespace``, but those the test expected (``expected_errors``,
        reset for the next test)."""
        expected, self.expected_errors = self.expected_errors, ()
        return [e for e in self.sync_errors(namespace) if not any(x in e for x in expected)]

    def sync_errors(self, ns: str, name: str = "") -> list[str]:
        """Failed syncs Metacontroller logged for jobs in ``ns`` (or job ``name``); [] for a given cluster."""
        if self.plane is None:
            return []
        prefix = f"failed to sync MPIJob '{ns}/{name}" + ("'" if name else "")
        errors = []
        for line in (self.workdir / "metacontroller.log").read_text(errors="replace").splitlines():
            if line.startswith("{") and prefix in line:
                errors.append(str(json.loads(line).get("error", "")))
        return errors

    def wait_sync(self, ns: str, name: str, before: int) -> int:
        """Wait until the hook has answered more than ``before`` syncs of job ns/name; return the count."""
        return wait_for(lambda: (n := self.hook.syncs(ns, name)) > before and n, 60, f"a sync of {ns}/{name}")

    def poke(self, ns: str, name: str, resource: str = "mpijobs", obj: str | None = None) -> dict[str, Any]:
        """Annotate the job (or one of its objects) and wait for the sync that follows; return the patched
        object. Metacontroller syncs one job at a time, so after a poke every earlier sync's writes are done.
        """
        before = self.hook.syncs(ns, name)
        self.pokes += 1
        patch = {"metadata": {"annotations": {"e2e.example.com/poke": str(self.pokes)}}}
        patched = self.kube.patch(resource, ns, obj or name, patch)
        self.wait_sync(ns, name, before)
        return patched

    def settle(self, ns: str, pokes: dict[str, str]) -> dict[str, str]:
        """Poke each job through one of its workers until no resourceVersion has changed for SETTLE_SECONDS
        (the Job controller writes a Job's status up to a second after its Pods change); return them.

        ``pokes`` maps job name to the worker Pod to annotate (a child event: a sync of that job, and no
        write to the MPIJob itself). The poked Pods are left out of the versions.
        """
        previous: dict[str, str] = {}
        deadline = time.monotonic() + 60
        stable_since = time.monotonic()
        while time.monotonic() < deadline:
            for name, pod in pokes.items():
                self.poke(ns, name, "pods", pod)
            current = jobs.versions(self.kube, ns, set(pokes.values()))
            if current != previous:
                previous, stable_since = current, time.monotonic()
            elif time.monotonic() - stable_since >= SETTLE_SECONDS:
                return current
        raise AssertionError(f"{ns} never settled: {previous}")

    def log_tails(self) -> str:
        parts = []
        for name in ("hook", "metacontroller", "kube-controller-manager"):
            log = self.workdir / f"{name}.log"
            if log.exists():
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
                parts.append(f"--- {name}.log (last 25 lines) ---\n{tail}")
        return "\n".join(parts)


def install_overlay(kube: Kube, workdir: Path, hook_url: str) -> str:
    """Build the CompositeController as users get it, only its hook URLs pointed at our loopback hook."""
    overlay = workdir / "overlay"
    overlay.mkdir(exist_ok=True)
    base = os.path.relpath(ROOT / "metacontroller", overlay)
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n- {base}\n"
        "patches:\n"
        "- target: {group: metacontroller.k8s.io, kind: CompositeController, name: mpi-operator-hook}\n"
        "  patch: |-\n"
        f"    - {{op: replace, path: /spec/hooks/sync/webhook/url, value: '{hook_url}/sync'}}\n"
        f"    - {{op: replace, path: /spec/hooks/customize/webhook/url, value: '{hook_url}/customize'}}\n"
    )
    built = kube.kubectl("kustomize", str(overlay)).stdout
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=built)
    return built


def events_account(kube: Kube, plane: ControlPlane, workdir: Path) -> dict[str, str]:
    """The hook's ServiceAccount and RBAC exactly as deploy/ installs them (deploy/hook-only/: the same
    without Metacontroller), a token for that account (a TokenRequest, as ``kubectl create token``), and the
    hook's settings to post Events with it."""
    built = kube.kubectl("kustomize", str(ROOT / "deploy" / "hook-only")).stdout
    kinds = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    account = [o for o in yaml.safe_load_all(built) if o and o["kind"] in kinds]
    assert {o["kind"] for o in account} == kinds
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(account))
    # A day: longer than any e2e session (the default hour is not).
    spec = {"expirationSeconds": 86400}
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    url = f"/api/v1/namespaces/{HOOK_NAMESPACE}/serviceaccounts/{HOOK_ACCOUNT}/token"
    token_file = workdir / "hook-token"
    token_file.touch(mode=0o600)
    token_file.write_text(kube.request("POST", url, request)["status"]["token"])
    return {
        "MPI_OPERATOR_EVENTS": "on",
        "MPI_OPERATOR_EVENTS_API_SERVER": plane.server,
        "MPI_OPERATOR_EVENTS_TOKEN_FILE": str(token_file),
        "MPI_OPERATOR_EVENTS_CA_FILE": str(plane.pki.ca_cert),
    }


def _install_crd(kube: Kube) -> None:
    kube.kubectl("apply", "--server-side", "-k", str(ROOT / "crds"))

    def established() -> bool:
        crd = kube.get("customresourcedefinitions", None, "mpijobs.kubeflow.org") or {}
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        )

    wait_for(established, 60, "the MPIJob CRD to be Established")


def _own_control_plane(workdir: Path, bin_dir: Path) -> tuple[Kube, ControlPlane]:
    try:
        plane = start_control_plane(bin_dir, workdir / "plane")
    except RuntimeError:
        # A free port taken by someone else between our probe and the server's bind: once more, new ports.
        plane = start_control_plane(bin_dir, workdir / "plane-retry")
    try:
        return with_metacontroller_crds(plane), plane
    except BaseException:
        plane.stop()
        raise


def _release_binaries() -> tuple[Path | None, str]:
    """The control plane of the release the suite runs on (``MPI_HOOK_E2E_KUBERNETES``, else 1.36.2: the
    control-plane tarball alone, or ``MPI_HOOK_E2E_BIN_DIR``, as before there were two releases)."""
    if not E2E_RELEASE.built:
        return find_binaries()
    reason = kubernetes_releases.missing(E2E_RELEASE)
    if reason:
        return None, reason
    return kubernetes_releases.binaries(E2E_RELEASE)[0], ""


@pytest.fixture(scope="session")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2E]:
    kubeconfig = os.environ.get("MPI_HOOK_E2E_KUBECONFIG")
    bin_dir, reason = (None, "") if kubeconfig else _release_binaries()
    if not kubeconfig and bin_dir is None:
        pytest.skip(f"e2e: {reason}")
    workdir = tmp_path_factory.mktemp("mpi-hook-e2e")
    plane: ControlPlane | None = None
    processes = Processes(workdir)
    try:
        if kubeconfig:
            kube = given_cluster(kubeconfig, processes)
        else:
            assert bin_dir is not None
            kube, plane = _own_control_plane(workdir, bin_dir)
            processes = plane.processes
            workdir = plane.workdir  # where every process's log is
        # Events need a token of the hook's account from the cluster's API: only with our own control plane.
        settings = {} if plane is None else events_account(kube, plane, workdir)
        settings.update(install_caller_token(kube, workdir))
        host = os.environ.get("MPI_HOOK_E2E_HOOK_HOST", "127.0.0.1")
        hook = Hook(processes, workdir, host=host, settings=settings)
        hook.start()
        _install_crd(kube)
        installed = install_overlay(kube, workdir, hook.url)
        if plane is not None:
            plane.start_metacontroller()
        token_file = Path(settings["MPI_OPERATOR_EVENTS_TOKEN_FILE"]) if plane is not None else None
        yield E2E(kube, hook, plane, workdir, installed_controller=installed, hook_token_file=token_file)
    finally:
        processes.stop_all()


@pytest.fixture
def target(e2e: E2E) -> E2E:
    """The cluster of the ``ns`` fixture (tests/support/clusters.py)."""
    return e2e
