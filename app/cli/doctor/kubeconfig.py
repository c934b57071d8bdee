"""The user's kubeconfig, read as kubectl reads it, into what an HTTPS client needs.

Where: ``--kubeconfig``, else ``$KUBECONFIG`` (a list of files: the first file that names a cluster, user
or context wins, as kubectl merges them), else ``~/.kube/config``, else the Pod's service account when
running inside a cluster. Which: ``--context``, else ``current-context``. What is supported: the server and
its CA (file or data), ``insecure-skip-tls-verify``, ``tls-server-name``, ``proxy-url``; the user's token
(or ``tokenFile``), client certificate and key (files or data), username and password, and exec
credential plugins (``client.authentication.k8s.io/v1`` and ``v1beta1``: a token or a client certificate,
``KUBERNETES_EXEC_INFO`` set as kubectl sets it). ``auth-provider`` (removed from kubectl in 1.26) is refused
with the plugin to use instead. Relative paths are relative to the file that holds them.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from app.cli.yamlio import load_one

_SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_EXEC_TIMEOUT_SECONDS = 120


class KubeconfigError(Exception):
    """The kubeconfig cannot be used; the message says which file, context or field, never a credential."""


@dataclass(frozen=True)
class Connection:
    """How to reach one API server as one user."""

    server: str
    context: str
    namespace: str
    verify: ssl.SSLContext | bool
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    proxy: str | None = None
    # tls-server-name: the name the server's certificate is checked against, when not the URL's host.
    server_name: str | None = None


@dataclass
class _Merged:
    """The kubeconfig files merged: each name's first definition, and the first current-context."""

    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    current: str = ""


def load(
    path: str | None = None, context: str | None = None, environ: Mapping[str, str] | None = None
) -> Connection:
    environ = os.environ if environ is None else environ
    files = _files(path, environ)
    if not files:
        if environ.get("KUBERNETES_SERVICE_HOST"):
            return _in_cluster(environ)
        raise KubeconfigError("no kubeconfig: give --kubeconfig, set KUBECONFIG, or create ~/.kube/config")
    merged = _merge(files)
    name = context or merged.current
    if not name:
        raise KubeconfigError(f"{files[0]}: no current-context: give --context")
    ctx = merged.contexts.get(name)
    if ctx is None:
        raise KubeconfigError(f"context {name!r} is not in {', '.join(map(str, files))}")
    cluster, cluster_dir = _named(merged.clusters, ctx.get("cluster"), "cluster", name)
    user, user_dir = (
        _named(merged.users, ctx.get("user"), "user", name) if ctx.get("user") else ({}, cluster_dir)
    )
    server = str(cluster.get("server") or "")
    if not server:
        raise KubeconfigError(f"context {name!r}: its cluster has no server")
    credentials = _credentials(user, user_dir, cluster, name)
    return Connection(
        server=server.rstrip("/"),
        context=name,
        namespace=str(ctx.get("namespace") or "default"),
        verify=_tls(cluster, cluster_dir, credentials.cert),
        headers=credentials.headers,
        proxy=cluster.get("proxy-url") or None,
        server_name=cluster.get("tls-server-name") or None,
    )


def _files(path: str | None, environ: Mapping[str, str]) -> list[Path]:
    if path:
        if not Path(path).is_file():
            raise KubeconfigError(f"--kubeconfig {path}: no such file")
        return [Path(path)]
    listed = [Path(p) for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if p.is_file()]
    default = Path(environ.get("HOME", str(Path.home()))) / ".kube" / "config"
    return [default] if default.is_file() else []


def _merge(files: list[Path]) -> _Merged:
    merged = _Merged()
    for file in files:
        try:
            config = load_one(str(file)) or {}
        except (OSError, yaml.YAMLError) as err:
            raise KubeconfigError(f"{file}: not a readable kubeconfig ({type(err).__name__})") from None
        if not isinstance(config, dict):
            raise KubeconfigError(f"{file}: not a kubeconfig (not a mapping)")
        merged.current = merged.current or str(config.get("current-context") or "")
        directory = file.resolve().parent
        for key, kind, into in (("clusters", "cluster", merged.clusters), ("users", "user", merged.users)):
            for entry in config.get(key) or []:
                if isinstance(entry, dict) and isinstance(entry.get(kind), dict):
                    into.setdefault(str(entry.get("name")), (entry[kind], directory))
        for entry in config.get("contexts") or []:
            if isinstance(entry, dict) and isinstance(entry.get("context"), dict):
                merged.contexts.setdefault(str(entry.get("name")), entry["context"])
    return merged


def _named(
    entries: dict[str, tuple[dict[str, Any], Path]], name: Any, kind: str, context: str
) -> tuple[dict[str, Any], Path]:
    found = entries.get(str(name))
    if found is None:
        raise KubeconfigError(f"context {context!r} names {kind} {name!r}, which no kubeconfig file defines")
    return found


@dataclass(frozen=True)
class _Credentials:
    headers: dict[str, str]
    # (certificate PEM, key PEM) for TLS client authentication.
    cert: tuple[bytes, bytes] | None = None


def _credentials(
    user: dict[str, Any], directory: Path, cluster: dict[str, Any], context: str
) -> _Credentials:
    if user.get("auth-provider"):
        provider = (user["auth-provider"] or {}).get("name", "?")
        raise KubeconfigError(
            f"context {context!r}: auth-provider {provider!r} is not supported (kubectl dropped it in 1.26):"
            " use the provider's exec plugin (e.g. gke-gcloud-auth-plugin, kubelogin)"
        )
    if isinstance(user.get("exec"), dict):
        return _exec_plugin(user["exec"], cluster, context)
    cert = _pem(user, "client-certificate", directory), _pem(user, "client-key", directory)
    client_cert = (cert[0], cert[1]) if cert[0] and cert[1] else None
    token = user.get("token") or _read(user.get("tokenFile"), directory)
    if token:
        return _Credentials({"Authorization": f"Bearer {str(token).strip()}"}, client_cert)
    if user.get("username") and user.get("password"):
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        return _Credentials({"Authorization": f"Basic {basic}"}, client_cert)
    return _Credentials({}, client_cert)


def _pem(entry: dict[str, Any], key: str, directory: Path) -> bytes | None:
    """``<key>-data`` (base64) or the file ``<key>``."""
    data = entry.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except ValueError:
            raise KubeconfigError(f"{key}-data is not base64") from None
    text = _read(entry.get(key), directory)
    return text.encode() if text is not None else None


def _read(path: Any, directory: Path) -> str | None:
    if not path:
        return None
    file = directory / str(path)
    try:
        return file.read_text()
    except OSError as err:
        raise KubeconfigError(f"cannot read {file}: {err.strerror}") from None


def _exec_plugin(spec: dict[str, Any], cluster: dict[str, Any], context: str) -> _Credentials:
    """Run the credential plugin as kubectl does and take its token or client certificate."""
    api_version = spec.get("apiVersion")
    if api_version not in _EXEC_API_VERSIONS:
        raise KubeconfigError(f"context {context!r}: exec apiVersion {api_version!r} is not supported")
    interactive = spec.get("interactiveMode", "IfAvailable") != "Never" and sys.stdin.isatty()
    info: dict[str, Any] = {"interactive": interactive}
    if spec.get("provideClusterInfo"):
        info["cluster"] = {k: v for k, v in cluster.items() if k != "extensions"}
    environ = dict(os.environ)
    environ.update(
        {str(e.get("name")): str(e.get("value")) for e in spec.get("env") or [] if isinstance(e, dict)}
    )
    environ["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": info}
    )
    command = [str(spec.get("command") or ""), *map(str, spec.get("args") or [])]
    output = _run_plugin(command, environ, interactive, spec.get("installHint"))
    status = output.get("status") if isinstance(output, dict) else None
    if not isinstance(status, dict):
        raise KubeconfigError(f"exec plugin {command[0]} printed no ExecCredential status")
    if status.get("token"):
        return _Credentials({"Authorization": f"Bearer {status['token']}"})
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return _Credentials(
            {}, (str(status["clientCertificateData"]).encode(), str(status["clientKeyData"]).encode())
        )
    raise KubeconfigError(f"exec plugin {command[0]} gave neither a token nor a client certificate")


def _run_plugin(command: list[str], environ: dict[str, str], interactive: bool, hint: Any) -> Any:
    try:
        done = subprocess.run(
            command,
            env=environ,
            stdin=None if interactive else subprocess.DEVNULL,
            capture_output=True,
            timeout=_EXEC_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise KubeconfigError(
            f"exec plugin {command[0]!r} not found" + (f": {hint}" if hint else "")
        ) from None
    except subprocess.TimeoutExpired:
        raise KubeconfigError(
            f"exec plugin {command[0]} did not answer in {_EXEC_TIMEOUT_SECONDS}s"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1][:200]
        raise KubeconfigError(f"exec plugin {command[0]} exited with code {done.returncode}: {last}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise KubeconfigError(f"exec plugin {command[0]} printed something other than JSON") from None


def _tls(cluster: dict[str, Any], directory: Path, cert: tuple[bytes, bytes] | None) -> ssl.SSLContext | bool:
    if str(cluster.get("server", "")).startswith("http://"):
        return False
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        ca = _pem(cluster, "certificate-authority", directory)
        # No CA given: the system's, as kubectl.
        context = ssl.create_default_context(cadata=ca.decode() if ca else None)
    if cert is not None:
        _load_client_cert(context, *cert)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl reads a certificate chain from files only: write them to a private directory, load, delete."""
    with tempfile.TemporaryDirectory(prefix="mpijob-doctor-") as directory:
        cert_file, key_file = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        for file, data in ((cert_file, cert), (key_file, key)):
            file.touch(mode=0o600)
            file.write_bytes(data)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as err:
            raise KubeconfigError(f"the client certificate or key cannot be used ({err.reason})") from None


def _in_cluster(environ: Mapping[str, str]) -> Connection:
    """The Pod's service account, as client-go's in-cluster configuration."""
    host, port = environ["KUBERNETES_SERVICE_HOST"], environ.get("KUBERNETES_SERVICE_PORT", "443")
    try:
        token = (_SERVICE_ACCOUNT / "token").read_text().strip()
        namespace = (_SERVICE_ACCOUNT / "namespace").read_text().strip()
    except OSError as err:
        raise KubeconfigError(
            f"in a cluster, but the service account cannot be read: {err.strerror}"
        ) from None
    context = ssl.create_default_context(cafile=str(_SERVICE_ACCOUNT / "ca.crt"))
    host = f"[{host}]" if ":" in host else host
    return Connection(
        f"https://{host}:{port}", "in-cluster", namespace, context, {"Authorization": f"Bearer {token}"}
    )
