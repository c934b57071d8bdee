"""The node's network: one Linux bridge of its own, Pods on it, the Service CIDR routed into it.

Pods get addresses on the bridge's subnet (CNI ``bridge`` + ``host-local``, ``isGateway: false``) and, as
their only route, the Service CIDR via the bridge's address: they reach each other, Services and the host's
bridge address (apiserver, CoreDNS, kubelet all listen there), and nothing else. Forwarding is enabled on
this bridge only. ``Network.remove`` deletes the bridge (its routes go with it) and kube-proxy's nft tables.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

BRIDGE = os.environ.get("MPI_HOOK_NODE_BRIDGE", "mpihooknode0")
POD_CIDR = "10.244.0.0/24"
BRIDGE_ADDRESS = "10.244.0.1"
SERVICE_CIDR = "10.96.0.0/24"
NFT_TABLES = (("ip", "kube-proxy"), ("ip6", "kube-proxy"))


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=60)


@dataclass(frozen=True)
class Network:
    bridge: str = BRIDGE
    address: str = BRIDGE_ADDRESS
    pod_cidr: str = POD_CIDR
    service_cidr: str = SERVICE_CIDR

    def create(self) -> None:
        self.remove()  # what an interrupted run may have left
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.address}/{self.pod_cidr.split('/')[1]}", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        Path(f"/proc/sys/net/ipv4/conf/{self.bridge}/forwarding").write_text("1")
        _run("ip", "route", "add", self.service_cidr, "dev", self.bridge, "src", self.address)

    def remove(self) -> None:
        for family, table in NFT_TABLES:
            _run("nft", "delete", "table", family, table, check=False)
        _run("ip", "link", "delete", self.bridge, check=False)

    def cni_config(self, directory: Path, ipam_dir: Path) -> None:
        """The CNI network list containerd gives every Pod sandbox."""
        conflist = {
            "cniVersion": "1.0.0",
            "name": "mpi-hook-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": False,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(ipam_dir),
                        "ranges": [[{"subnet": self.pod_cidr, "gateway": self.address}]],
                        "routes": [{"dst": self.service_cidr, "gw": self.address}],
                    },
                },
                {"type": "loopback"},
            ],
        }
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "10-mpi-hook-node.conflist").write_text(json.dumps(conflist, indent=1))
