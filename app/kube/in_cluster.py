"""Where a Pod finds the API server and its credentials, as client-go's in-cluster config does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Where the kubelet mounts a Pod's service-account token and the cluster's CA.
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class EventsAccess:
    """Where and how the hook posts Events: the API server's URL, a token file (re-read as it rotates), and
    the CA that signs the server's certificate (None: the system's CAs)."""

    server: str
    token_file: Path
    ca_file: Path | None


def in_cluster_server(environ: Mapping[str, str]) -> str:
    """``https://<KUBERNETES_SERVICE_HOST>:<KUBERNETES_SERVICE_PORT>``, as client-go's in-cluster config; ""
    outside a Pod."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        return ""
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
