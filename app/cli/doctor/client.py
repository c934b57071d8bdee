"""Read-only access to the API server: GET, and nothing else.

Every read names its verb and resource, so a refusal tells the user exactly which permission is missing
(``get pods/log in namespace ml``). A Secret is read as ``PartialObjectMetadata``: its data never leaves the
API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from app.cli.doctor.kubeconfig import Connection

_METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
_TIMEOUT_SECONDS = 30.0
_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class Read:
    """One read: the permission it needs and where it goes."""

    verb: str  # get | list
    resource: str  # pods, pods/log, mpijobs.kubeflow.org, ...
    namespace: str  # empty for a cluster-scoped resource
    path: str
    params: Mapping[str, str | int] | None = None

    @property
    def permission(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "(cluster-scoped)"
        return f"{self.verb} {self.resource} {where}"


class CannotRead(Exception):
    """The cluster cannot be read: unreachable, credentials refused, or a permission missing."""

    def __init__(self, message: str, permission: str = "") -> None:
        super().__init__(message)
        self.permission = permission


class Reader:
    """GETs JSON and logs from one API server; 404 is ``None``, a refusal is ``CannotRead``."""

    def __init__(self, connection: Connection, transport: httpx.BaseTransport | None = None) -> None:
        self._server = connection.server
        extensions = {"sni_hostname": connection.server_name} if connection.server_name else None
        self._extensions = extensions or {}
        self._client = httpx.Client(
            base_url=connection.server,
            verify=connection.verify,
            headers=dict(connection.headers),
            proxy=connection.proxy,
            timeout=_TIMEOUT_SECONDS,
            transport=transport,
        )

    def close(self) -> None:
        self._client.close()

    def json(self, read: Read, *, metadata_only: bool = False) -> dict[str, Any] | None:
        headers = {"Accept": _METADATA_ONLY if metadata_only else "application/json"}
        response = self._get(read, headers)
        if response is None:
            return None
        try:
            body = response.json()
        except ValueError:
            raise CannotRead(f"the API server answered {read.path} with something other than JSON") from None
        if not isinstance(body, dict):
            raise CannotRead(f"the API server answered {read.path} with something other than an object")
        return body

    def items(self, read: Read, *, pages: int = 10) -> list[dict[str, Any]]:
        """A list's items, following ``continue`` for at most ``pages`` pages of 500."""
        items: list[dict[str, Any]] = []
        params = dict(read.params or {})
        for _ in range(pages):
            body = self.json(
                Read(read.verb, read.resource, read.namespace, read.path, {**params, "limit": 500})
            )
            if body is None:
                return items
            items += [item for item in body.get("items") or [] if isinstance(item, dict)]
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                break
            params["continue"] = token
        return items

    def text(self, read: Read) -> str | None:
        """A log; ``None`` when there is none yet (the container has not started: 400) or the Pod is gone."""
        response = self._get(read, {"Accept": "*/*"}, missing=(400, 404))
        return None if response is None else response.text

    def _get(
        self, read: Read, headers: dict[str, str], missing: tuple[int, ...] = (404,)
    ) -> httpx.Response | None:
        try:
            response = self._client.get(
                read.path, params=dict(read.params or {}), headers=headers, extensions=self._extensions
            )
        except httpx.HTTPError as err:
            raise CannotRead(f"cannot reach the API server at {self._server}: {err}") from None
        if response.status_code in missing:
            return None
        if response.status_code == 401:
            raise CannotRead(
                f"the API server at {self._server} did not accept your credentials (401 Unauthorized):"
                " log in again or check the kubeconfig's user"
            )
        if response.status_code == 403:
            raise CannotRead(
                f"permission missing: {read.permission} (403 Forbidden: {_message(response)})",
                read.permission,
            )
        if response.status_code >= 400:
            raise CannotRead(f"{read.permission}: HTTP {response.status_code}: {_message(response)}")
        return response


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
        message = body.get("message") if isinstance(body, dict) else None
    except ValueError:
        message = None
    return str(message or response.reason_phrase)[:_MESSAGE_CHARS]
