"""The user's kubeconfig, read as kubectl reads it, into a ``Connection`` (``app/cluster``): an adapter over
lightkube's kubeconfig models. lightkube picks the context, its cluster, user and namespace
(``KubeConfig.get``), names and types their fields, and builds the TLS context (``verify_cluster``).

Ours, where kubectl and lightkube differ: the files found and merged (``kubeconfig_files.py``); a cluster
with no server refused, not taken as ``localhost:8080``; ``tls-server-name`` and ``proxy-url``, which the
models drop; exec plugins (``execplugin.py``); the Pod's service account (lightkube reads it unbounded);
``auth-provider`` (gone from kubectl in 1.26) refused with the plugin to use instead. Every file a kubeconfig
names is read here, bounded, and handed to lightkube as data; no error quotes a credential.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, get_type_hints

from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.config.models import Cluster, Context, User
from lightkube.core.exceptions import ConfigError

from app.cluster import execplugin, kubeconfig_files
from app.cluster.connection import Connection
from app.cluster.kubeconfig_files import KubeconfigError
from app.cluster.tokens import bearer_token, read_token
from app.cluster.untrusted import Hostile, read_file
from app.kube.in_cluster import SERVICE_ACCOUNT_DIR, in_cluster_server

# A PEM bundle is a few KiB to a few hundred (a token file's bound is the shared one, app/cluster/tokens.py).
_PEM_FILE_BYTES = 1024 * 1024

__all__ = ["KubeconfigError", "load"]


def load(
    path: str | None = None, context: str | None = None, environ: Mapping[str, str] | None = None
) -> Connection:
    environ = os.environ if environ is None else environ
    try:
        return _load(path, context, environ)
    except (Hostile, execplugin.PluginError) as err:
        raise KubeconfigError(str(err)) from None


def _load(path: str | None, context: str | None, environ: Mapping[str, str]) -> Connection:
    files = kubeconfig_files.files(path, environ)
    if not files:
        if in_a_pod := in_cluster_server(environ):
            return _in_cluster(in_a_pod)
        raise KubeconfigError("no kubeconfig: give --kubeconfig, set KUBECONFIG, or create ~/.kube/config")
    merged = kubeconfig_files.merge(files)
    name = context or merged["current-context"]
    if not name:
        raise KubeconfigError(f"{files[0]}: no current-context: give --context")
    config = _select(merged, name, files)
    where = f"context {name!r}:"
    _typed(config.context, f"{where} its")
    _typed(config.cluster, f"{where} the cluster's")
    cluster = merged["clusters"][config.context.cluster]
    server, proxy, server_name = (
        _string(cluster, key, where) for key in ("server", "proxy-url", "tls-server-name")
    )
    if not server:
        raise KubeconfigError(f"{where} its cluster has no server")
    user = _typed(config.user or User(), f"{where} the user's")
    headers, cert = _credentials(user, merged["exec"].get(config.context.user), cluster, where)
    return Connection(
        server=server.rstrip("/"),
        context=name,
        namespace=config.namespace,
        verify=_tls(config.cluster, cert),
        headers=headers,
        proxy=proxy,
        server_name=server_name,
    )


def _select(merged: dict[str, Any], name: str, files: list[Path]) -> SingleConfig:
    """lightkube's pick: the context ``name``, its cluster and user."""
    kinds = ("cluster", "user", "context")
    lists = {f"{k}s": [{"name": n, k: body} for n, body in merged[f"{k}s"].items()] for k in kinds}
    config = KubeConfig.from_dict(lists)
    try:
        selected = config.get(name)
    except ConfigError:
        raise KubeconfigError(f"context {name!r} is not in {', '.join(map(str, files))}") from None
    except (KeyError, TypeError):
        context = _typed(config.contexts[name], f"context {name!r}: its")  # an unhashable name is no string
        kind, missing = (
            ("cluster", context.cluster) if context.cluster not in config.clusters else ("user", context.user)
        )
        raise KubeconfigError(
            f"context {name!r} names {kind} {missing!r}, which no kubeconfig file defines"
        ) from None
    assert selected is not None  # None only for a default, and none is given
    return selected


_Model = TypeVar("_Model", Cluster, Context, User)


def _typed(model: _Model, where: str) -> _Model:
    """The model's strings and booleans as its type hints say: lightkube keeps whatever the YAML holds."""
    hints = get_type_hints(type(model))
    for field in dataclasses.fields(model):
        expected = {str: str, str | None: str, bool: bool}.get(hints[field.name])
        value = getattr(model, field.name)
        if expected and value is not None and not isinstance(value, expected):
            what = "a string" if expected is str else "true or false"
            raise KubeconfigError(f"{where} {field.metadata.get('json', field.name)} is not {what}")
    return model


def _string(cluster: dict[str, Any], key: str, where: str) -> str | None:
    """A cluster's field lightkube's model has not (or defaults, as ``server``)."""
    value = cluster.get(key)
    if value is not None and not isinstance(value, str):
        raise KubeconfigError(f"{where} the cluster's {key} is not a string")
    return value or None


def _credentials(
    user: User, spec: Any, cluster: dict[str, Any], where: str
) -> tuple[dict[str, str], User | None]:
    """The headers and the client certificate, in client-go's order (lightkube's ``user_auth`` keeps it):
    ``tokenFile``, ``token``, ``exec``, username and password."""
    if user.auth_provider:
        name = user.auth_provider.get("name", "?") if isinstance(user.auth_provider, dict) else "?"
        raise KubeconfigError(
            f"{where} auth-provider {name!r} is not supported (kubectl dropped it in 1.26):"
            " use the provider's exec plugin (e.g. gke-gcloud-auth-plugin, kubelogin)"
        )
    cert = _pem(user.client_cert_data, user.client_cert, "client-certificate")
    key = _pem(user.client_key_data, user.client_key, "client-key")
    client = User(client_cert_data=cert, client_key_data=key) if cert and key else None
    if user.token_file:
        return _bearer(read_token(Path(user.token_file), "tokenFile")), client
    if user.token:
        return _bearer(bearer_token(user.token, f"{where} the user's token")), client
    if spec is not None:
        got = execplugin.credential(spec, cluster, where)
        return (_bearer(got), None) if isinstance(got, str) else ({}, _client(*got))
    if user.username and user.password:
        basic = base64.b64encode(f"{user.username}:{user.password}".encode()).decode()
        return {"Authorization": f"Basic {basic}"}, client
    return {}, client


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _pem(data: str | None, path: str | None, key: str) -> str | None:
    """``<key>-data`` checked as base64, else the file ``<key>`` read bounded, as base64 for lightkube."""
    if data:
        try:
            base64.b64decode(data, validate=True)
        except ValueError:
            raise KubeconfigError(f"{key}-data is not base64") from None
        return data
    return _base64(read_file(Path(path), _PEM_FILE_BYTES, key)) if path else None


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _client(cert: bytes, key: bytes) -> User:
    """A client certificate and key (PEM) as lightkube takes them."""
    return User(client_cert_data=_base64(cert), client_key_data=_base64(key))


def _tls(cluster: Cluster, client: User | None) -> ssl.SSLContext | bool:
    """lightkube's context for the cluster and the client certificate. Every file was read here, bounded,
    and is handed over as data (lightkube gives ssl the path: a FIFO or ``/dev/zero`` read unbounded)."""
    if cluster.server.startswith("http://"):
        return False
    ca = (
        None
        if cluster.insecure
        else _pem(cluster.certificate_auth_data, cluster.certificate_auth, "certificate-authority")
    )
    cluster = dataclasses.replace(cluster, certificate_auth=None, certificate_auth_data=ca)
    try:
        context = client_adapter.verify_cluster(cluster, User(), _no_files)
    except (ssl.SSLError, ValueError) as err:
        why = err.reason if isinstance(err, ssl.SSLError) else "not PEM text"
        raise KubeconfigError(f"the cluster's certificate-authority cannot be used ({why})") from None
    if client is None:
        return context
    try:
        return client_adapter.verify_cluster(cluster, client, _no_files)
    except ssl.SSLError as err:
        raise KubeconfigError(f"the client certificate or key cannot be used ({err.reason})") from None


def _no_files(name: Any) -> Any:
    raise AssertionError(f"every file was read by the adapter: {name}")


def _in_cluster(server: str) -> Connection:
    """The Pod's service account, as client-go's in-cluster configuration: its token read again as the
    kubelet rotates it, its CA, its namespace (lightkube's ``from_service_account`` reads them unbounded)."""
    token_file = SERVICE_ACCOUNT_DIR / "token"
    read_token(token_file, "token")  # refused now, not at the first request
    namespace = read_file(SERVICE_ACCOUNT_DIR / "namespace", 256, "namespace").decode(errors="replace")
    cluster = Cluster(server=server, certificate_auth=str(SERVICE_ACCOUNT_DIR / "ca.crt"))
    return Connection(server, "in-cluster", namespace.strip(), _tls(cluster, None), token_file=token_file)
