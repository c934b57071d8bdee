"""The user's kubeconfig, read as kubectl reads it, into what an HTTPS client needs.

Where: ``--kubeconfig``, else ``$KUBECONFIG`` (a list of files: the first file that names a cluster, user
or context wins, as kubectl merges them), else ``~/.kube/config``, else the Pod's service account when
running inside a cluster. Which: ``--context``, else ``current-context``. What is supported: the server and
its CA (file or data), ``insecure-skip-tls-verify``, ``tls-server-name``, ``proxy-url``; the user's token
(or ``tokenFile``), client certificate and key (files or data), username and password, and exec
credential plugins (``execplugin.py``). ``auth-provider`` (removed from kubectl in 1.26) is refused with the
plugin to use instead. Relative paths are relative to the file that holds them.

A kubeconfig is read as hostile: every file it names is read bounded, a token must be visible ASCII, and no
error quotes a credential or anything read from a file that holds one (it names the file and the problem).
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.cli.doctor import execplugin
from app.cli.doctor.untrusted import Hostile, bearer_token, read_file
from app.cli.yamlio import InputError, load_one_text

_SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# Bounds on the files a kubeconfig names: a token is a few hundred bytes to a few KiB (a JWT with many
# claims), a PEM bundle a few KiB to a few hundred; a kubeconfig itself, some KiB per cluster.
TOKEN_FILE_BYTES = 8 * 1024
_PEM_FILE_BYTES = 1024 * 1024
_KUBECONFIG_BYTES = 16 * 1024 * 1024


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
    file = _path(path, directory, "tokenFile")
    return bearer_token(read_file(file, TOKEN_FILE_BYTES, "tokenFile"), f"tokenFile {file}")


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
    if str(cluster.get("server", "")).startswith("http://"):
        return False
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = _verifying(_pem(cluster, "certificate-authority", directory))
    if cert is not None:
        _load_client_cert(context, *cert)
    return context


def _verifying(ca: bytes | None) -> ssl.SSLContext:
    """A context that checks the server against ``ca``; no CA given: the system's, as kubectl."""
    try:
        return ssl.create_default_context(cadata=ca.decode("ascii") if ca else None)
    except (ssl.SSLError, ValueError) as err:
        why = err.reason if isinstance(err, ssl.SSLError) else "not PEM text"
        raise KubeconfigError(f"the cluster's certificate-authority cannot be used ({why})") from None


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
    token_file = _SERVICE_ACCOUNT / "token"
    token = bearer_token(read_file(token_file, TOKEN_FILE_BYTES, "token"), f"token {token_file}")
    namespace = read_file(_SERVICE_ACCOUNT / "namespace", 256, "namespace").decode(errors="replace").strip()
    context = ssl.create_default_context(cafile=str(_SERVICE_ACCOUNT / "ca.crt"))
    host = f"[{host}]" if ":" in host else host
    return Connection(
        f"https://{host}:{port}", "in-cluster", namespace, context, {"Authorization": f"Bearer {token}"}
    )
