"""containerd for the node: its own config, socket, root and state, not the system service.

``restrict_oom_score_adj`` is required here (without it every Pod sandbox fails with "can't get final child's
PID from pipe: EOF": the sandbox lacks CAP_SYS_RESOURCE); network namespaces live under the state dir so that
stopping can find and remove exactly ours. Stopping kills every task (container) of its ``k8s.io``
namespace by its id, stops containerd by PID, then unmounts whatever is still mounted under its directories.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.processes import Processes, Started, wait_until_ready

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"
NAMESPACE = "k8s.io"

_CONFIG = """\
version = 2
root = "{root}"
state = "{state}"
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[debug]
  level = "warn"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{state}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"""


def cni_bin_dir() -> Path:
    """Debian's containernetworking-plugins install into /usr/lib/cni."""
    return next((p for p in (Path("/usr/lib/cni"), Path("/opt/cni/bin")) if (p / "bridge").exists()), Path())


@dataclass
class Containerd:
    workdir: Path
    processes: Processes
    started: Started | None = None

    @property
    def socket(self) -> Path:
        return self.workdir / "containerd.sock"

    @property
    def cni_conf(self) -> Path:
        return self.workdir / "cni"

    def start(self) -> None:
        config = self.workdir / "config.toml"
        config.write_text(
            _CONFIG.format(
                root=self.workdir / "root",
                state=self.workdir / "state",
                socket=self.socket,
                pause=PAUSE_IMAGE,
                cni_bin=cni_bin_dir(),
                cni_conf=self.cni_conf,
            )
        )
        self.started = self.processes.start("containerd", ["containerd", f"--config={config}"])
        wait_until_ready(self.started, self._answers, 30, "containerd")

    def _answers(self) -> bool:
        return self.ctr("version", check=False).returncode == 0

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = ["ctr", f"--address={self.socket}", f"--namespace={NAMESPACE}", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return done

    def load(self, archive: Path, name: str, aliases: tuple[str, ...] = ()) -> None:
        """Import a docker-archive whose image is called ``name``; tag it ``aliases`` too."""
        self.ctr("images", "import", str(archive))
        for alias in aliases:
            self.ctr("images", "tag", "--force", name, alias)

    def stop(self) -> None:
        """Kill our containers, stop containerd, unmount what is left under our directories."""
        if self.started is None:
            return
        if self.started.process.poll() is None:
            for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
                self.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", task, check=False)
            time.sleep(1)
            for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
                self.ctr("tasks", "delete", "--force", task, check=False)
        self.processes.stop(self.started)
        self.started = None
        unmount_under(self.workdir)


def unmount_under(directory: Path) -> None:
    """Unmount every mount point below ``directory``, deepest first (lazily: leftovers may be busy)."""
    prefix = str(directory.resolve()) + "/"
    with open("/proc/self/mountinfo") as mounts:
        points = [line.split()[4] for line in mounts]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False, timeout=30)


def remove_cgroups(name: str) -> None:
    """Remove the (empty, once every container is gone) cgroup ``name`` and its children in every v1
    hierarchy, deepest first."""
    for top in Path("/sys/fs/cgroup").glob(f"*/{name}"):
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()
