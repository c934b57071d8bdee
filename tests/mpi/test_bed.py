"""The test bed itself: a pod is where its spec says, as its user, and nothing of it outlives teardown."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.mpi.bed import Bed, Image, processes_in


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "the MPI test bed needs root (network, mount and PID namespaces)"
    missing = [t for t in ("ip", "unshare", "setpriv", "ssh-keygen") if shutil.which(t) is None]
    return f"the MPI test bed needs {', '.join(missing)}" if missing else None


@pytest.fixture(autouse=True)
def _bed_tools() -> None:
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0]
    except OSError:
        return "gone"


def _alive(pid: int) -> bool:
    return _state(pid) not in ("gone", "Z")


def pod(name: str, command: list[str], run_as: int | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x", "command": command}
    if run_as is not None:
        container["securityContext"] = {"runAsUser": run_as}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"hostname": name, "subdomain": "job", "containers": [container]},
    }


def test_teardown_leaves_no_process_network_or_file() -> None:
    """Also for a non-root pod, whose processes lose unshare's parent-death signal when they change uid."""
    script = "id -u; hostname; cat /etc/hosts; sleep 300 & sleep 300"
    bed = Bed(Image(path_dirs=()))
    try:
        pods = [
            bed.plan(pod(f"p{i}", ["/bin/sh", "-c", script], run_as)) for i, run_as in enumerate((None, 1000))
        ]
        for p in pods:
            bed.start(p, [])
        for p in pods:
            p.wait_for_log("job.ns.svc.cluster.local")
        namespaces = [p.pid_namespace() for p in pods]
        assert all(namespaces), namespaces
        started = {ns: processes_in(ns) for ns in namespaces if ns}
        assert all(len(pids) >= 3 for pids in started.values()), started  # sh, sleep, sleep
        root_log, user_log = (p.output() for p in pods)
        assert root_log.splitlines()[:2] == ["0", "p0"]
        assert user_log.splitlines()[:2] == ["1000", "p1"]
        # hosts file: each pod's FQDN, the shorter names kubelet's search list completes (<ns>.svc.<domain>,
        # svc.<domain>, <domain>), and the own short name only for the pod itself
        assert "10.77.0.2 p0.job.ns.svc.cluster.local p0.job.ns.svc p0.job.ns p0.job p0\n" in root_log
        assert "10.77.0.3 p1.job.ns.svc.cluster.local p1.job.ns.svc p1.job.ns p1.job\n" in root_log
    finally:
        bed.close()
    left = [pid for pids in started.values() for pid in pids]
    deadline = time.monotonic() + 5
    while left and time.monotonic() < deadline:  # killed processes are reaped by init a moment later
        time.sleep(0.05)
        left = [pid for pid in left if _alive(pid)]
    assert not left, {pid: _state(pid) for pid in left}
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert bed.id not in netns
    assert not bed.root.exists()
