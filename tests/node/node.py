"""The node's processes beside containerd: kubelet, kube-scheduler, kube-proxy and CoreDNS, all on the bridge.

Binaries from ``node-linux-amd64.tar.xz`` (``MPI_HOOK_NODE_BIN_DIR``, else found next to the control-plane
tarball and extracted once, as controlplane.py does). Every setting below is one that a start on this kind of
machine needed (``../shared/e2e/README.md``, "A real node"): the kubelet on cgroup v1 with the cgroupfs
driver, relaxed eviction thresholds, CoreDNS bound to the bridge address with no upstream, kube-proxy in
nftables mode.
"""

from __future__ import annotations

import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.controlplane import (
    ControlPlane,
    extract_once,
    feature_gate_flags,
    tarball_dir,
    write_kubeconfig,
)
from tests.e2e.pki import client_cert
from tests.e2e.processes import Processes, Started, free_port, http_ok, wait_until_ready
from tests.node.network import Network

NODE_NAME = "mpi-hook-node"
BINARIES = ("kubelet", "kube-scheduler", "kube-proxy", "coredns")
TARBALL = "node-linux-amd64.tar.xz"
PAUSE_ARCHIVE = "pause.tar"
NODE_PROCESSES = ("kubelet", "kube-scheduler", "coredns", "kube-proxy")
KUBELET_CGROUP = "kubepods"  # kubelet's (cgroupfs driver, cgroupsPerQOS) under every hierarchy


def find_node_binaries() -> tuple[Path | None, str]:
    """The directory with kubelet, kube-scheduler, kube-proxy, coredns and pause.tar, or None and why."""
    given = os.environ.get("MPI_HOOK_NODE_BIN_DIR")
    if given:
        ok = all((Path(given) / name).exists() for name in (*BINARIES, PAUSE_ARCHIVE))
        return (Path(given), "") if ok else (None, f"MPI_HOOK_NODE_BIN_DIR={given} lacks a node binary")
    tarball = tarball_dir() / TARBALL
    if not tarball.is_file():
        return None, f"no MPI_HOOK_NODE_BIN_DIR and no {tarball}"
    return extract_once(tarball, BINARIES, "mpi-hook-node-bin"), ""


def _kubelet_config(workdir: Path, network: Network, plane: ControlPlane, ports: tuple[int, int]) -> Path:
    (workdir / "resolv.conf").write_text(f"nameserver {network.address}\n")
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": network.address,
        "port": ports[0],
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports[1],
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [network.address],
        "clusterDomain": "cluster.local",
        "resolvConf": str(workdir / "resolv.conf"),
        "authentication": {
            "x509": {"clientCAFile": str(plane.pki.ca_cert)},
            "webhook": {"enabled": False},
            "anonymous": {"enabled": False},
        },
        "authorization": {"mode": "AlwaysAllow"},
        # A test machine's disk may look full to the defaults.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "serializeImagePulls": False,
        "podLogsDir": str(workdir / "pod-logs"),
        "containerRuntimeEndpoint": f"unix://{workdir.parent / 'containerd' / 'containerd.sock'}",
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "10s",
        "featureGates": _gates(plane.options.feature_gates),
    }
    path = workdir / "kubelet.yaml"
    path.write_text(json.dumps(config, indent=1))
    return path


@dataclass
class Node:
    workdir: Path
    bin_dir: Path
    plane: ControlPlane
    network: Network
    processes: Processes

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._kubelet()
        self._scheduler()
        self._coredns()
        self._kube_proxy()

    def _kubelet(self) -> None:
        cert, key = client_cert(self.plane.pki, self.workdir, f"system:node:{NODE_NAME}", "system:nodes")
        kubeconfig = self.workdir / "kubelet.kubeconfig"
        write_kubeconfig(kubeconfig, self.plane.server, self.plane.pki.ca_cert, cert, key)
        ports = (free_port(), free_port())
        config = _kubelet_config(self.workdir, self.network, self.plane, ports)
        kubelet = self.processes.start(
            "kubelet",
            [
                str(self.bin_dir / "kubelet"),
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.workdir / 'kubelet'}",
                f"--cert-dir={self.workdir / 'kubelet-pki'}",
                f"--node-ip={self.network.address}",
                f"--hostname-override={NODE_NAME}",
                "--v=1",
            ],
        )
        wait_until_ready(kubelet, http_ok(f"http://127.0.0.1:{ports[1]}/healthz"), 60, "kubelet")

    def _scheduler(self) -> None:
        start_scheduler(self.processes, self.bin_dir, self.plane)

    def _coredns(self) -> None:
        health = free_port()
        corefile = self.workdir / "Corefile"
        corefile.write_text(
            f".:53 {{\n  bind {self.network.address}\n  errors\n  health 127.0.0.1:{health}\n"
            "  kubernetes cluster.local in-addr.arpa ip6.arpa {\n"
            f"    kubeconfig {self.plane.kubeconfig}\n    pods insecure\n    ttl 5\n  }}\n"
            "  cache 5\n  loadbalance\n}\n"
        )
        coredns = self.processes.start("coredns", [str(self.bin_dir / "coredns"), "-conf", str(corefile)])
        wait_until_ready(coredns, http_ok(f"http://127.0.0.1:{health}/health"), 30, "coredns")

    def _kube_proxy(self) -> None:
        health, metrics = free_port(), free_port()
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.plane.kubeconfig)},
            "mode": "nftables",
            "hostnameOverride": NODE_NAME,
            "clusterCIDR": self.network.pod_cidr,
            "nodePortAddresses": [f"{self.network.address}/32"],
            "healthzBindAddress": f"127.0.0.1:{health}",
            "metricsBindAddress": f"127.0.0.1:{metrics}",
            "masqueradeAll": True,
            "conntrack": {"maxPerCore": 0},
        }
        path = self.workdir / "kube-proxy.yaml"
        path.write_text(json.dumps(config, indent=1))
        proxy = self.processes.start("kube-proxy", [str(self.bin_dir / "kube-proxy"), f"--config={path}"])
        wait_until_ready(proxy, http_ok(f"http://127.0.0.1:{health}/healthz"), 60, "kube-proxy")


def start_scheduler(processes: Processes, bin_dir: Path, plane: ControlPlane) -> Started:
    """kube-scheduler from ``bin_dir`` against ``plane``, with its feature gates; ready when healthy."""
    port = free_port()
    scheduler = processes.start(
        "kube-scheduler",
        [
            str(bin_dir / "kube-scheduler"),
            f"--kubeconfig={plane.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            *feature_gate_flags(plane.options),
            "--v=0",
        ],
    )
    wait_until_ready(scheduler, http_ok(f"https://127.0.0.1:{port}/healthz", _insecure()), 60, "scheduler")
    return scheduler


def _gates(flag: str) -> dict[str, bool]:
    """``A=true,B=false`` as a KubeletConfiguration's ``featureGates``."""
    pairs = (gate.split("=") for gate in flag.split(",") if gate)
    return {name: value == "true" for name, value in pairs}


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
