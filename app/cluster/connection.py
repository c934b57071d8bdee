"""How to reach one API server as one user, and the HTTP clients built from it: the one place for the
connection's TLS, proxy, timeouts and credentials, whoever calls (the doctor's reads, the hook's Events).

A static credential (a kubeconfig's token, basic auth) is a header; a token file (the Pod's service account)
is read through ``TokenFile``, so a rotated token is used within ``CHECK_SECONDS``; an async client looks at
the file in a worker thread, never on the event loop. A header value
HTTP cannot carry is refused before anything is built: httpx's own error would quote it.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator, Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.cluster.tokens import CHECK_SECONDS, TokenFile

# Connecting, and each read of the socket.
SOCKET_TIMEOUT_SECONDS = 30.0


class BadConnection(Exception):
    """The connection cannot be built; the message names the field, never a credential."""


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
    # A bearer token file read again as it rotates (in a Pod: the service account's).
    token_file: Path | None = None

    @property
    def secrets(self) -> list[str]:
        """Each header value and its credential alone (``Bearer <token>``'s token): never in a message."""
        values = self.headers.values()
        return [part for value in values for part in {value, value.rpartition(" ")[2]} if part]


class TokenFileAuth(httpx.Auth):
    """``Authorization: Bearer <the file's token>``, the file read again as it rotates (``TokenFile``)."""

    def __init__(self, path: Path, check_seconds: float = CHECK_SECONDS) -> None:
        self._token = TokenFile(path, check_seconds=check_seconds)

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token.get()}"
        yield request

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        due = self._token.due()
        token = await asyncio.to_thread(self._token.get) if due else self._token.get()
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


def client_options(connection: Connection, timeout: float, token_check: float) -> dict[str, Any]:
    """What ``httpx.Client`` and ``httpx.AsyncClient`` are built with; ``BadConnection`` for a header value
    HTTP cannot carry."""
    for name, value in connection.headers.items():
        if not all(" " <= char <= "~" for char in value):
            raise BadConnection(f"the kubeconfig's {name} header holds characters HTTP cannot carry")
    auth = TokenFileAuth(connection.token_file, token_check) if connection.token_file else None
    return {
        "base_url": connection.server,
        "verify": connection.verify,
        "headers": dict(connection.headers),
        "proxy": connection.proxy,
        "timeout": timeout,
        "auth": auth,
    }


def extensions(connection: Connection) -> dict[str, Any]:
    """Per-request options: the TLS server name to check, when the kubeconfig gives one."""
    return {"sni_hostname": connection.server_name} if connection.server_name else {}


def sync_client(
    connection: Connection,
    transport: httpx.BaseTransport | None = None,
    *,
    timeout: float = SOCKET_TIMEOUT_SECONDS,
    token_check: float = CHECK_SECONDS,
) -> httpx.Client:
    options = client_options(connection, timeout, token_check)
    try:
        client = httpx.Client(**options, transport=transport)
        client.build_request("GET", "/")
    except (httpx.InvalidURL, ValueError, TypeError):
        raise BadConnection("the kubeconfig's server or proxy-url is not a usable URL") from None
    return client


def async_client(
    connection: Connection,
    transport: httpx.AsyncBaseTransport | None = None,
    *,
    timeout: float = SOCKET_TIMEOUT_SECONDS,
    token_check: float = CHECK_SECONDS,
) -> httpx.AsyncClient:
    options = client_options(connection, timeout, token_check)
    return httpx.AsyncClient(**options, transport=transport)
