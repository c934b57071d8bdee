"""The user's kubeconfig, read as kubectl reads it, into a ``Connection`` (``app/cluster``): an adapter over
lightkube's kubeconfig models, which build the TLS context (CA and client certificate, from files or data,
or ``insecure-skip-tls-verify``). What lightkube does not do as kubectl does stays here.

Where: ``--kubeconfig``, else ``$KUBECONFIG`` (a list of files: the first file that names a cluster, user
or context wins, as kubectl merges them; lightkube reads one file), else ``~/.kube/config``, else the Pod's
service account when running inside a cluster. Which: ``--context``, else ``current-context``. What is
supported: the server and its CA (file or data), ``insecure-skip-tls-verify``, ``tls-server-name``,
``proxy-url``; the user's token (or ``tokenFile``), client certificate and key (files or data), username and
password, and exec credential plugins (``execplugin.py``: lightkube runs only v1alpha1 and v1beta1 plugins,
unbounded, without ``KUBERNETES_EXEC_INFO``, ``interactiveMode`` or client-go's path rule).
``auth-provider`` (removed from kubectl in 1.26) is refused with the plugin to use instead. Relative paths
are relative to the file that holds them.

A kubeconfig is read as hostile: every file it names is read bounded, a token must be visible ASCII, and no
error quotes a credential or anything read from a file that holds one (it names the file and the problem).
"""

from __future__ import annotations

import base64
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightkube.config import client_adapter
from lightkube.config.models import Cluster, User

from app.cli.doctor import execplugin
from app.cli.yamlio import InputError, load_one_text
from app.cluster.connection import Connection
from app.cluster.tokens import bearer_token, read_token
from app.cluster.untrusted import Hostile, read_file
from app.settings import SERVICE_ACCOUNT_DIR

# Bounds on the files a kubeconfig names: a PEM bundle is a few KiB to a few hundred; a kubeconfig itself,
# some KiB per cluster (a token file's bound is the shared one, app/cluster/tokens.py).
_PEM_FILE_BYTES = 1024 * 1024
_KUBECONFIG_BYTES = 16 * 1024 * 1024


class KubeconfigError(Exception):
    """The kubeconfig cannot be used; the message says which file, context or field, never a credential."""


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
    try:
        return _load(path, context, environ)
    except (Hostile, execplugin.PluginError) as err:
        raise KubeconfigError(str(err)) from None


def _load(path: str | None, context: str | None, environ: Mapping[str, str]) -> Connection:
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
    server = _string(cluster, "server", name)
    if not server:
        raise KubeconfigError(f"context {name!r}: its cluster has no server")
    credentials = _credentials(user, user_dir, cluster, name)
    return Connection(
        server=server.rstrip("/"),
        context=name,
        namespace=_string(ctx, "namespace", name) or "default",
        verify=_tls(cluster, cluster_dir, credentials.cert),
        headers=credentials.headers,
        proxy=_string(cluster, "proxy-url", name) or None,
        server_name=_string(cluster, "tls-server-name", name) or None,
    )


def _string(entry: dict[str, Any], key: str, context: str) -> str:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise KubeconfigError(f"context {context!r}: {key} is not a string")
    return value or ""


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
        config = _read_kubeconfig(file)
        merged.current = merged.current or str(config.get("current-context") or "")
        directory = file.resolve().parent
        for key, kind, into in (("clusters", "cluster", merged.clusters), ("users", "user", merged.users)):
            for entry in _entries(config, key, file):
                if isinstance(entry.get(kind), dict):
                    into.setdefault(str(entry.get("name")), (entry[kind], directory))
        for entry in _entries(config, "contexts", file):
            if isinstance(entry.get("context"), dict):
                merged.contexts.setdefault(str(entry.get("name")), entry["context"])
    return merged


def _read_kubeconfig(file: Path) -> dict[str, Any]:
    """One kubeconfig file, bounded, parsed by the CLI's one YAML loader (the hook's depth limit, aliases
    bounded)."""
    raw = read_file(file, _KUBECONFIG_BYTES, "kubeconfig")
    try:
        config = load_one_text(raw.decode("utf-8"), str(file)) or {}
    except UnicodeDecodeError:
        raise KubeconfigError(f"{file}: not a readable kubeconfig (not UTF-8 text)") from None
    except InputError as err:  # it names the file, line and column
        raise KubeconfigError(str(err)) from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"{file}: not a kubeconfig (not a mapping)")
    return config


def _entries(config: dict[str, Any], key: str, file: Path) -> list[dict[str, Any]]:
    entries = config.get(key) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f"{file}: {key} is not a list")
    return [entry for entry in entries if isinstance(entry, dict)]


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
        provider = user["auth-provider"]
        name = provider.get("name", "?") if isinstance(provider, dict) else "?"
        raise KubeconfigError(
            f"context {context!r}: auth-provider {name!r} is not supported (kubectl dropped it in 1.26):"
            " use the provider's exec plugin (e.g. gke-gcloud-auth-plugin, kubelogin)"
        )
    if isinstance(user.get("exec"), dict):
        return _exec_plugin(user["exec"], directory, cluster, context)
    cert = _pem(user, "client-certificate", directory), _pem(user, "client-key", directory)
    client_cert = (cert[0], cert[1]) if cert[0] and cert[1] else None
    token = _token(user, directory, context)
    if token:
        return _Credentials({"Authorization": f"Bearer {token}"}, client_cert)
    username, password = user.get("username"), user.get("password")
    if username and password:
        if not isinstance(username, str) or not isinstance(password, str):
            raise KubeconfigError(f"context {context!r}: username and password must be strings")
        basic = base64.b64encode(f"{username}:{password}".encode()).decode()
        return _Credentials({"Authorization": f"Basic {basic}"}, client_cert)
    return _Credentials({}, client_cert)


def _token(user: dict[str, Any], directory: Path, context: str) -> str | None:
    """The user's ``token``, else its ``tokenFile``'s content; never quoted in an error."""
    inline, path = user.get("token"), user.get("tokenFile")
    if inline:
        if not isinstance(inline, str):
            raise KubeconfigError(f"context {context!r}: the user's token is not a string")
        return bearer_token(inline, f"context {context!r}: the user's token")
    if not path:
        return None
    return read_token(_path(path, directory, "tokenFile"), "tokenFile")


def _path(value: Any, directory: Path, key: str) -> Path:
    if not isinstance(value, str):
        raise KubeconfigError(f"{key} is not a path")
    return directory / value


def _pem(entry: dict[str, Any], key: str, directory: Path) -> bytes | None:
    """``<key>-data`` (base64) or the file ``<key>``."""
    data = entry.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except ValueError:
            raise KubeconfigError(f"{key}-data is not base64") from None
    if not entry.get(key):
        return None
    return read_file(_path(entry[key], directory, key), _PEM_FILE_BYTES, key)


def _exec_plugin(
    spec: dict[str, Any], directory: Path, cluster: dict[str, Any], context: str
) -> _Credentials:
    """Run the credential plugin as kubectl does and take its token or client certificate."""
    plugin = execplugin.plugin(spec, directory, context)
    info = {k: v for k, v in cluster.items() if k != "extensions"} if spec.get("provideClusterInfo") else None
    status = execplugin.run(plugin, info)
    name = plugin.command[0]
    token = execplugin.token(status, name)
    if token:
        return _Credentials({"Authorization": f"Bearer {token}"})
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if isinstance(cert, str) and isinstance(key, str) and cert and key:
        return _Credentials({}, (cert.encode(), key.encode()))
    raise KubeconfigError(f"exec plugin {name} gave neither a token nor a client certificate")


def _tls(cluster: dict[str, Any], directory: Path, cert: tuple[bytes, bytes] | None) -> ssl.SSLContext | bool:
    """lightkube's context for the cluster and the client certificate. Every file was read here first,
    bounded, and is handed over as data (lightkube would read a FIFO or ``/dev/zero`` unbounded)."""
    if str(cluster.get("server", "")).startswith("http://"):
        return False
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    ca = None if insecure else _pem(cluster, "certificate-authority", directory)
    server = Cluster(certificate_auth_data=_base64(ca), insecure=insecure)
    try:
        context = client_adapter.verify_cluster(server, User(), _no_files)
    except (ssl.SSLError, ValueError) as err:
        why = err.reason if isinstance(err, ssl.SSLError) else "not PEM text"
        raise KubeconfigError(f"the cluster's certificate-authority cannot be used ({why})") from None
    if cert is not None:
        user = User(client_cert_data=_base64(cert[0]), client_key_data=_base64(cert[1]))
        files = client_adapter.user_cert(user, _no_files)
        assert files is not None
        try:
            context.load_cert_chain(*files)
        except ssl.SSLError as err:
            raise KubeconfigError(f"the client certificate or key cannot be used ({err.reason})") from None
    return context


def _base64(data: bytes | None) -> str | None:
    return base64.b64encode(data).decode() if data else None


def _no_files(name: Any) -> Any:
    raise AssertionError(f"every file was read by the adapter: {name}")


def _in_cluster(environ: Mapping[str, str]) -> Connection:
    """The Pod's service account, as client-go's in-cluster configuration: its token read again as the
    kubelet rotates it, its CA, its namespace."""
    host, port = environ["KUBERNETES_SERVICE_HOST"], environ.get("KUBERNETES_SERVICE_PORT", "443")
    token_file = SERVICE_ACCOUNT_DIR / "token"
    read_token(token_file, "token")  # refused now, not at the first request
    namespace = (
        read_file(SERVICE_ACCOUNT_DIR / "namespace", 256, "namespace").decode(errors="replace").strip()
    )
    cluster = Cluster(certificate_auth=str(SERVICE_ACCOUNT_DIR / "ca.crt"))
    context = client_adapter.verify_cluster(cluster, User(), lambda name: name)
    host = f"[{host}]" if ":" in host else host
    return Connection(f"https://{host}:{port}", "in-cluster", namespace, context, token_file=token_file)
