"""Read-only access to the API server, for ``mpijob doctor``: GET, and nothing else.

Every read names its verb and resource, so a refusal tells the user exactly which permission is missing
(``get pods/log in namespace ml``). A Secret is read as ``PartialObjectMetadata``: its data never leaves the
API server.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from app.cluster.connection import SOCKET_TIMEOUT_SECONDS, BadConnection, Connection, extensions, sync_client
from app.cluster.untrusted import Hostile, parse_json

_METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
# One answer, from the request to its last byte: a server that trickles its answer cannot hold the doctor.
DEADLINE_SECONDS = 60.0
# One answer's bytes (decompressed). The largest answer is a page of Pods (``items`` asks for pages of 500):
# a worker Pod as the API server sends it is 5-15 KiB (the recorded one: 4.8 KiB without managedFields), so
# a page is under ~8 MiB and 64 MiB leaves room for Pods 8 times larger (long env lists, many volumes).
# Parsed, 64 MiB of Pods takes ~450 MiB of memory (measured): the bound on what one answer can cost.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
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


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str
    body: bytes


class CannotRead(Exception):
    """The cluster cannot be read: unreachable, credentials refused, or a permission missing."""

    def __init__(self, message: str, permission: str = "") -> None:
        super().__init__(message)
        self.permission = permission


class NotKubernetes(CannotRead):
    """The server answers, but not as a Kubernetes API server does: every read would look like a missing
    object, so nothing it says is judged."""

    fix = "check the kubeconfig's server / context"


def _kubernetes_version(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("gitVersion"), str)


def _kubernetes_api(body: Any) -> bool:
    return isinstance(body, dict) and body.get("kind") == "APIVersions"


# What an API server answers: GET /version (anyone may read it), else GET /api (if a proxy hides /version).
_KUBERNETES_ANSWERS = (("/version", _kubernetes_version), ("/api", _kubernetes_api))


class Reader:
    """GETs JSON and logs from one API server; 404 is ``None``, a refusal is ``CannotRead``. Each answer is
    bounded: ``limit`` bytes, ``deadline`` seconds from the request to its last byte."""

    def __init__(
        self,
        connection: Connection,
        transport: httpx.BaseTransport | None = None,
        *,
        deadline: float = DEADLINE_SECONDS,
        limit: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._server = connection.server
        self._secrets = connection.secrets
        self._extensions = extensions(connection)
        self._deadline, self._limit = deadline, limit
        try:
            self._client = sync_client(connection, transport, timeout=min(SOCKET_TIMEOUT_SECONDS, deadline))
        except BadConnection as err:
            raise CannotRead(str(err)) from None

    def close(self) -> None:
        self._client.close()

    def json(self, read: Read, *, metadata_only: bool = False) -> dict[str, Any] | None:
        headers = {"Accept": _METADATA_ONLY if metadata_only else "application/json"}
        answer = self._get(read, headers)
        if answer is None:
            return None
        try:
            body = parse_json(answer.body, f"the API server's answer to GET {read.path}")
        except Hostile as err:
            raise CannotRead(str(err)) from None
        if not isinstance(body, dict):
            raise CannotRead(f"the API server answered GET {read.path} with something other than an object")
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
            listed, metadata = body.get("items") or [], body.get("metadata") or {}
            if not isinstance(listed, list) or not isinstance(metadata, dict):
                raise CannotRead(f"the API server answered GET {read.path} with something other than a list")
            items += listed
            token = metadata.get("continue")
            if not token or not isinstance(token, str):
                break
            params["continue"] = token
        return items

    def check_kubernetes(self) -> None:
        """``NotKubernetes`` unless ``GET /version`` or ``GET /api`` answers as Kubernetes does (or refuses
        with a Kubernetes ``Status``: the reads then name the permission); credentials refused are said so."""
        heard = []
        for path, answers_so in _KUBERNETES_ANSWERS:
            answer = self._fetch(Read("get", path, "", path), {"Accept": "application/json"})
            if answer.status == 401:
                raise self._credentials_refused()
            body = _json_or_none(answer.body)
            if (answer.status == 200 and answers_so(body)) or (answer.status == 403 and _is_status(body)):
                return
            heard.append(_heard(path, answer))
        raise NotKubernetes(f"{self._server} is not a Kubernetes API server ({'; '.join(heard)})")

    def text(self, read: Read) -> str | None:
        """A log; ``None`` when there is none yet (the container has not started: 400) or the Pod is gone."""
        answer = self._get(read, {"Accept": "*/*"}, missing=(400, 404))
        return None if answer is None else answer.body.decode("utf-8", "replace")

    def _get(self, read: Read, headers: dict[str, str], missing: tuple[int, ...] = (404,)) -> _Answer | None:
        answer = self._fetch(read, headers)
        status = answer.status
        if status in missing:
            return None
        if status == 401:
            raise self._credentials_refused()
        if status == 403:
            raise CannotRead(
                f"permission missing: {read.permission} (403 Forbidden: {_message(answer)})", read.permission
            )
        if status >= 400:
            raise CannotRead(f"{read.permission}: HTTP {status}: {_message(answer)}")
        if not 200 <= status < 300:
            raise CannotRead(
                f"the API server answered GET {read.path} with HTTP {status}, not an object: the doctor"
                " follows no redirects (is the kubeconfig's server the API server itself?)"
            )
        return answer

    def _credentials_refused(self) -> CannotRead:
        return CannotRead(
            f"the API server at {self._server} did not accept your credentials (401 Unauthorized):"
            " log in again or check the kubeconfig's user"
        )

    def _fetch(self, read: Read, headers: dict[str, str]) -> _Answer:
        """The answer, read in a thread so that the deadline holds however slowly the bytes come."""
        outcome: list[_Answer | CannotRead] = []
        stop = threading.Event()
        worker = threading.Thread(target=self._stream, args=(read, headers, outcome, stop), daemon=True)
        worker.start()
        worker.join(self._deadline)
        if worker.is_alive() or not outcome:
            stop.set()
            raise CannotRead(
                f"the API server at {self._server} did not finish answering GET {read.path} within"
                f" {self._deadline:g} s"
            )
        if isinstance(outcome[0], CannotRead):
            raise outcome[0]
        return outcome[0]

    def _stream(
        self, read: Read, headers: dict[str, str], outcome: list[_Answer | CannotRead], stop: threading.Event
    ) -> None:
        params = dict(read.params or {})
        try:
            with self._client.stream(
                "GET", read.path, params=params, headers=headers, extensions=self._extensions
            ) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > self._limit:
                        raise CannotRead(
                            f"the API server's answer to GET {read.path} is larger than {self._limit} bytes"
                        )
                    if stop.is_set():
                        return
                outcome.append(_Answer(response.status_code, response.reason_phrase, bytes(body)))
        except (CannotRead, Hostile) as err:
            outcome.append(err if isinstance(err, CannotRead) else CannotRead(str(err)))
        except httpx.HTTPError as err:
            outcome.append(CannotRead(f"cannot reach the API server at {self._server}: {self._why(err)}"))
        except Exception as err:
            # Whatever else a hostile answer provokes (a decoder's error, say) is that answer's fault.
            outcome.append(CannotRead(f"reading GET {read.path} failed ({type(err).__name__})"))

    def _why(self, err: httpx.HTTPError) -> str:
        """The failure in a few words, never a header value (httpx puts an invalid one in its message)."""
        if isinstance(err, httpx.LocalProtocolError):
            return "the request could not be sent (LocalProtocolError)"
        if isinstance(err, httpx.TimeoutException):
            return (
                f"no answer within {min(SOCKET_TIMEOUT_SECONDS, self._deadline):g} s ({type(err).__name__})"
            )
        text = str(err) or type(err).__name__
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return text


def _heard(path: str, answer: _Answer) -> str:
    """What ``GET path`` answered, in a few words: why the server is not taken for Kubernetes."""
    said = f"GET {path}: HTTP {answer.status} {answer.reason[:40]}".rstrip()
    return f"{said}, not what Kubernetes answers" if answer.status == 200 else said


def _json_or_none(raw: bytes) -> Any:
    """``raw`` parsed (depth-checked), or ``None`` when it is not JSON."""
    try:
        return parse_json(raw, "the answer")
    except Hostile:
        return None


def _is_status(body: Any) -> bool:
    """A Kubernetes ``Status`` (``kind: Status``, ``apiVersion: v1``): how an API server refuses."""
    return isinstance(body, dict) and body.get("kind") == "Status" and body.get("apiVersion") == "v1"


def _message(answer: _Answer) -> str:
    body = _json_or_none(answer.body)
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or answer.reason)[:_MESSAGE_CHARS]
