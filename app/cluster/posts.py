"""JSON POSTs to the API server, for the hook's Events: 5xx answers and connection errors retried with
exponential back-off, each request within its time limit, the token file read again as it rotates
(``connection.py``). 4xx answers are final: the caller decides what a 409 or a 403 means."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from app.cluster.connection import Connection, async_client
from app.cluster.tokens import CHECK_SECONDS
from app.cluster.untrusted import Hostile

RETRIES = 3
BACKOFF_SECONDS = 0.5
TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Posting:
    """How POSTs are sent: retries of 5xx and connection errors with exponential back-off, each request's
    time limit, and how often the token file is read again."""

    retries: int = RETRIES
    backoff_seconds: float = BACKOFF_SECONDS
    timeout_seconds: float = TIMEOUT_SECONDS
    token_check_seconds: float = CHECK_SECONDS


@dataclass(frozen=True, slots=True)
class Posted:
    """The last answer's status (None: none came), and the problem in a few words when it is not 2xx."""

    status: int | None
    problem: str = ""


class Poster:
    """POSTs JSON bodies to one API server; ``start`` before the first, ``close`` after the last."""

    def __init__(
        self,
        connection: Connection,
        posting: Posting = Posting(),
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._connection = connection
        self._posting = posting
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def start(self) -> None:
        self._client = async_client(
            self._connection,
            self._transport,
            timeout=self._posting.timeout_seconds,
            token_check=self._posting.token_check_seconds,
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def post(self, path: str, body: bytes) -> Posted:
        """POST ``body`` to ``path``, retrying 5xx answers and connection errors; never raises for them."""
        assert self._client is not None, "start() first"
        posted = Posted(None, "not sent")
        headers = {"Content-Type": "application/json"}
        for attempt in range(self._posting.retries + 1):
            if attempt:
                await asyncio.sleep(self._posting.backoff_seconds * 2 ** (attempt - 1))
            try:
                response = await self._client.post(path, content=body, headers=headers)
            except Hostile as err:  # the token file: no request was sent
                return Posted(None, str(err))
            except httpx.TransportError as err:
                posted = Posted(None, f"connection error: {type(err).__name__}")
                continue
            status = response.status_code
            posted = Posted(status, "" if status < 300 else f"HTTP {status}")
            if status < 500:
                break
        return posted
