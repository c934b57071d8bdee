"""A test bed that runs the Pods a sync rendered as "pods" on this machine, close to what kubelet would do.

Each Pod gets its own network namespace (a veth to a bridge that lives in a namespace of its own, so no
address or link ever appears on the host), PID, mount and UTS namespaces (hostname = the Pod's hostname),
and a mount namespace in which:

- /tmp is its own (MPI keeps per-host session folders and sockets there);
- /etc, /root, /home, /run and /opt are overlays over the host's (writes stay in the pod), carrying the
  "image": users, sshd/ssh configuration as upstream's base image has them, MPI builds bound in (``Image``);
- /etc/hosts answers what cluster DNS would: ``<pod>.<subdomain>.<ns>.svc.<domain>``, and shorter names
  only where the Pod's DNS search list would complete them (kubelet's defaults plus ``dnsConfig.searches``);
- every volume container[0] mounts is laid out as kubelet lays out Secret and ConfigMap volumes: items with
  their rendered modes, owned by root, a ``..data`` symlink into a timestamped folder, a sticky world-writable
  top folder; with ``fsGroup``, group-owned by it with ``g+r`` added and the setgid bit on folders.

Its init containers run first, one after another (each must end with 0, or the pod stops there), then
container[0]; each command runs as the rendered user (``runAsUser``/``runAsGroup``, supplementary ``fsGroup``)
with the image's environment plus exactly the rendered ``env``. Everything is torn down by ``close()``: the
pods' PID namespaces die with their first process (a root shell), network namespaces are deleted, files
removed; ``test_teardown_leaves_nothing`` checks that no process of a pod outlives it.
"""

from __future__ import annotations

import base64
import itertools
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PREFIX = f"mpihook{os.getpid()}"
_COUNTER = itertools.count()
_OVERLAID = ("/etc", "/root", "/home", "/run", "/opt")
_SUBNET = "10.77.0"


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: str


@dataclass
class Image:
    """What a user's image contains besides MPI: users, sshd and ssh configuration (docs/image-contract.md).

    Mirrors upstream's ``build/base``: ssh client without host key checks or a known_hosts file, both
    sides on port 2222, ``StrictModes no`` (kubelet's Secret folders are world-writable); for a non-root
    sshd, ``~/.sshd_config`` with the mounted private key as host key.
    """

    path_dirs: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    users: tuple[User, ...] = (User("mpiuser", 1000, 1000, "/home/mpiuser"),)
    port: int = 2222
    binds: tuple[tuple[str, str], ...] = ()  # (host folder, path in the pods), read-only

    def files(self, host_key: Path) -> dict[str, tuple[str, int, int, int]]:
        """path -> (content, mode, uid, gid)."""
        ssh_config = (
            "Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n"
            f"    Port {self.port}\n    LogLevel ERROR\n"
        )
        sshd_config = (
            f"Port {self.port}\nHostKey /etc/ssh/ssh_host_ecdsa_key\nStrictModes no\nUsePAM no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPrintMotd no\n"
        )
        files = {
            "/etc/passwd": (self._passwd(), 0o644, 0, 0),
            "/etc/group": (self._group(), 0o644, 0, 0),
            "/etc/ssh/ssh_config": (ssh_config, 0o644, 0, 0),
            "/etc/ssh/sshd_config": (sshd_config, 0o644, 0, 0),
            "/etc/ssh/ssh_host_ecdsa_key": (host_key.read_text(), 0o600, 0, 0),
        }
        for user in self.users:
            files[f"{user.home}/.sshd_config"] = (
                f"PidFile {user.home}/sshd.pid\nHostKey {user.home}/.ssh/id_rsa\nStrictModes no\n"
                f"Port {self.port}\n",
                0o644,
                user.uid,
                user.gid,
            )
        return files

    def _passwd(self) -> str:
        taken = {u.name for u in self.users} | {str(u.uid) for u in self.users}
        lines = [
            line
            for line in Path("/etc/passwd").read_text().splitlines()
            if line and line.split(":")[0] not in taken and line.split(":")[2] not in taken
        ]
        lines += [f"{u.name}:x:{u.uid}:{u.gid}::{u.home}:/bin/sh" for u in self.users]
        return "\n".join(lines) + "\n"

    def _group(self) -> str:
        taken = {u.name for u in self.users} | {str(u.gid) for u in self.users}
        lines = [
            line
            for line in Path("/etc/group").read_text().splitlines()
            if line and line.split(":")[0] not in taken and line.split(":")[2] not in taken
        ]
        lines += [f"{u.name}:x:{u.gid}:" for u in self.users]
        return "\n".join(lines) + "\n"


@dataclass
class Pod:
    name: str
    hostname: str
    namespace: str
    spec: dict[str, Any]
    ip: str
    netns: str
    dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.dir / "log"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def pid_namespace(self) -> str | None:
        """The pod's PID namespace (that of unshare's child), while it runs."""
        if self.process is None or self.process.poll() is not None:
            return None
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return os.readlink(f"/proc/{children[0]}/ns/pid") if children else None

    def wait_for_log(self, text: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {text!r} in its log:\n{self.output()}")
            time.sleep(0.05)


@dataclass
class Bed:
    """A set of pods from one job; ``plan`` every Pod first (all addresses go into every hosts file)."""

    image: Image
    cluster_domain: str = "cluster.local"
    pods: dict[str, Pod] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.id = f"{_PREFIX}x{next(_COUNTER)}"
        self.root = Path(tempfile.mkdtemp(prefix=f"{self.id}-"))
        os.chmod(self.root, 0o755)
        self.net = f"{self.id}-net"
        self._netns = [self.net]
        _run("ip", "netns", "add", self.net)
        _run("ip", "-n", self.net, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.net, "link", "set", "br0", "up")
        self.host_key = self.root / "ssh_host_ecdsa_key"
        _run("ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", str(self.host_key))

    def plan(self, pod: dict[str, Any], name: str | None = None) -> Pod:
        """Give a Pod (or a pod template, with ``name``) its network; nothing runs yet."""
        meta, spec = pod["metadata"], pod["spec"]
        index = len(self.pods)
        planned = Pod(
            name=name or meta["name"],
            hostname=spec.get("hostname") or name or meta["name"],
            namespace=meta.get("namespace", "default"),
            spec=spec,
            ip=f"{_SUBNET}.{index + 2}",
            netns=f"{self.id}-p{index}",
            dir=self.root / f"pod{index}",
        )
        planned.dir.mkdir()
        self._netns.append(planned.netns)
        _run("ip", "netns", "add", planned.netns)
        peer = f"vh{index}"
        _run(
            "ip",
            "-n",
            self.net,
            "link",
            "add",
            peer,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            planned.netns,
        )
        _run("ip", "-n", self.net, "link", "set", peer, "master", "br0", "up")
        _run("ip", "-n", planned.netns, "addr", "add", f"{planned.ip}/24", "dev", "eth0")
        _run("ip", "-n", planned.netns, "link", "set", "eth0", "up")
        _run("ip", "-n", planned.netns, "link", "set", "lo", "up")
        self.pods[planned.name] = planned
        return planned

    def start(self, pod: Pod, objects: list[dict[str, Any]]) -> Pod:
        """Run container[0] of a planned Pod with its volumes from ``objects`` (the sync's children)."""
        container = pod.spec["containers"][0]
        script = pod.dir / "start.sh"
        script.write_text(self._start_script(pod, container, objects))
        log = pod.log.open("wb")
        pod.process = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                pod.netns,
                "unshare",
                "--mount",
                "--uts",
                "--ipc",
                "--pid",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "--propagation",
                "private",
                "/bin/sh",
                "-e",
                str(script),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        return pod

    def stop(self, name: str) -> None:
        """The Pod's processes die (its first process takes its PID namespace along); its address stays."""
        process = self.pods[name].process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)

    def close(self) -> None:
        for name in self.pods:
            self.stop(name)
        for netns in reversed(self._netns):
            subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Bed:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- what kubelet and the container runtime would do -------------------------------------------

    def _start_script(self, pod: Pod, container: dict[str, Any], objects: list[dict[str, Any]]) -> str:
        scratch = pod.dir / "scratch"
        scratch.mkdir()
        lines = [f"hostname {shlex.quote(pod.hostname)}", f"mount -t tmpfs -o mode=755 tmpfs {scratch}"]
        for top in _OVERLAID:
            upper, work = scratch / f"u{top}", scratch / f"w{top}"
            lines.append(f"mkdir -p {upper} {work}")
            lines.append(f"mount -t overlay overlay -o lowerdir={top},upperdir={upper},workdir={work} {top}")
        layer = self._image_layer(pod)
        lines.append(f"cp -a {layer}/. /")
        for host, target in self.image.binds:
            quoted = shlex.quote(target)
            lines += [
                f"mkdir -p {quoted}",
                f"mount --bind {shlex.quote(host)} {quoted}",
                f"mount -o remount,bind,ro {quoted}",
            ]
        for mount in container.get("volumeMounts") or []:
            source = self._volume(pod, mount["name"], objects)
            target = shlex.quote(mount["mountPath"])
            assert any(mount["mountPath"].startswith(top + "/") for top in _OVERLAID), mount["mountPath"]
            lines += [
                f"mkdir -p {target}",
                f"mount --bind {source} {target}",
                f"mount -o remount,bind,ro {target}",
            ]
        lines.append("mount -t tmpfs -o mode=1777 tmpfs /tmp")  # the pod's own /tmp, as a container's
        mounted = {(m["name"], m["mountPath"]) for m in container.get("volumeMounts") or []}
        for init in pod.spec.get("initContainers") or []:
            # One after another, each to its end, before container[0]; a failed one stops the pod (sh -e).
            assert {(m["name"], m["mountPath"]) for m in init.get("volumeMounts") or []} <= mounted, init
            lines.append(self._command_line(pod, init))
        lines.append(self._command_line(pod, container))
        return "\n".join(lines) + "\n"

    def _command_line(self, pod: Pod, container: dict[str, Any]) -> str:
        """Run one container's command as its user with its env, in its working folder."""
        uid, gid, groups = self._identity(pod.spec, container)
        env = self._env(pod, container, uid)
        command = [*(container.get("command") or []), *(container.get("args") or [])]
        workdir = container.get("workingDir") or self._home(uid)
        drop: list[str] = []
        if uid != 0:
            group_list = ",".join(str(g) for g in groups) or None
            drop = [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={gid}",
                f"--groups={group_list}" if group_list else "--clear-groups",
                "--",
            ]
        argv = [*drop, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command]
        # Not exec'd: this root shell stays the PID namespace's first process. Its parent-death signal
        # (unshare --kill-child) survives, while a process that changed its uid loses it, and a leftover
        # first process would keep the whole pod alive after teardown.
        return f"cd {shlex.quote(workdir)}\n{shlex.join(argv)}"

    def _image_layer(self, pod: Pod) -> Path:
        layer = pod.dir / "layer"
        for path, (content, mode, uid, gid) in self.image.files(self.host_key).items():
            target = layer / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            os.chmod(target, mode)
            os.chown(target, uid, gid)
        for user in self.image.users:
            home = layer / user.home.lstrip("/")
            home.mkdir(parents=True, exist_ok=True)
            os.chown(home, user.uid, user.gid)
        (layer / "run" / "sshd").mkdir(parents=True, exist_ok=True)
        (layer / "etc" / "hosts").write_text(self._hosts(pod))
        (layer / "etc" / "resolv.conf").write_text(
            # No DNS server in the pods: a name the hosts file lacks fails at once.
            "nameserver 127.0.0.1\n" + f"search {' '.join(self._searches(pod))}\noptions ndots:5 attempts:1\n"
        )
        return layer

    def _searches(self, pod: Pod) -> list[str]:
        """kubelet's ClusterFirst search list, then the Pod's own ``dnsConfig.searches``."""
        d = self.cluster_domain
        own = (pod.spec.get("dnsConfig") or {}).get("searches") or []
        return [f"{pod.namespace}.svc.{d}", f"svc.{d}", d, *own]

    def _hosts(self, pod: Pod) -> str:
        """The cluster's DNS answers for ``<host>.<subdomain>.<ns>.svc.<domain>``; shorter names only where
        one of this Pod's search domains completes them (hosts files know no search list)."""
        searches = self._searches(pod)
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
        for other in self.pods.values():
            subdomain = other.spec.get("subdomain")
            if not subdomain:
                continue
            fqdn = f"{other.hostname}.{subdomain}.{other.namespace}.svc.{self.cluster_domain}"
            parts = fqdn.split(".")
            names = [fqdn] + [
                short
                for short in (".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1))
                if any(f"{short}.{s}" == fqdn for s in searches)
            ]
            if other is pod:
                names.append(pod.hostname)  # kubelet's own entry
            lines.append(f"{other.ip} {' '.join(dict.fromkeys(names))}")
        return "\n".join(lines) + "\n"

    def _volume(self, pod: Pod, name: str, objects: list[dict[str, Any]]) -> Path:
        volume = next(v for v in pod.spec.get("volumes") or [] if v["name"] == name)
        fs_group = (pod.spec.get("securityContext") or {}).get("fsGroup")
        if "secret" in volume:
            source = volume["secret"]
            obj = _find(objects, "Secret", source["secretName"])
            data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        elif "configMap" in volume:
            source = volume["configMap"]
            obj = _find(objects, "ConfigMap", source["name"])
            data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        else:
            raise AssertionError(f"the test bed has no {sorted(volume)} volumes")
        default_mode = source.get("defaultMode", 0o644)
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        return _atomic_volume(pod.dir / "volumes" / name, data, items, default_mode, fs_group)

    def _identity(self, spec: dict[str, Any], container: dict[str, Any]) -> tuple[int, int, list[int]]:
        pod_ctx, ctx = spec.get("securityContext") or {}, container.get("securityContext") or {}
        uid = ctx.get("runAsUser", pod_ctx.get("runAsUser", 0))
        user = next((u for u in self.image.users if u.uid == uid), None)
        gid = ctx.get("runAsGroup", pod_ctx.get("runAsGroup", user.gid if user else 0))
        groups = [gid]
        if pod_ctx.get("fsGroup") is not None:
            groups.append(pod_ctx["fsGroup"])
        groups += pod_ctx.get("supplementalGroups") or []
        return uid, gid, list(dict.fromkeys(groups))

    def _home(self, uid: int) -> str:
        user = next((u for u in self.image.users if u.uid == uid), None)
        return user.home if user else "/root" if uid == 0 else "/"

    def _env(self, pod: Pod, container: dict[str, Any], uid: int) -> dict[str, str]:
        env = {
            "PATH": ":".join(
                [
                    *self.image.path_dirs,
                    "/usr/local/sbin",
                    "/usr/local/bin",
                    "/usr/sbin",
                    "/usr/bin",
                    "/sbin",
                    "/bin",
                ]
            ),
            **dict(self.image.env),
            "HOSTNAME": pod.hostname,
            "HOME": self._home(uid),
        }
        for var in container.get("env") or []:
            assert "valueFrom" not in var, var
            env[var["name"]] = var.get("value", "")
        return env


def processes_in(pid_namespace: str) -> list[int]:
    """Host PIDs of the processes in a PID namespace."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == pid_namespace:
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile
                continue
    return found


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _atomic_volume(
    root: Path, data: dict[str, bytes], items: list[dict[str, Any]], default_mode: int, fs_group: int | None
) -> Path:
    """kubelet's atomic writer layout, ownership and modes (pkg/volume: SetVolumeOwnership)."""
    stamp = "..2026_05_04_09_00_00.000000001"
    payload = root / stamp
    payload.mkdir(parents=True)
    for item in items:
        target = payload / item["path"]
        target.write_bytes(data[item["key"]])
        mode = item.get("mode", default_mode)
        if fs_group is not None:
            mode |= 0o440  # read-only volumes get g+r whatever the mode says
        os.chmod(target, mode)
        os.chown(target, 0, fs_group if fs_group is not None else 0)
        (root / item["path"]).symlink_to(f"..data/{item['path']}")
    (root / "..data").symlink_to(stamp)
    setgid = 0o2000 if fs_group is not None else 0
    group = fs_group if fs_group is not None else 0
    os.chmod(payload, 0o755 | setgid)
    os.chown(payload, 0, group)
    os.chmod(root, 0o1777 | setgid)
    os.chown(root, 0, group)
    return root
