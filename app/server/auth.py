"""Who may call ``/sync`` and ``/customize``: only a caller that presents Metacontroller's credential.

A sync has side effects in the cluster (the Events the hook posts), so the hook answers only requests that
carry ``Authorization: Bearer <token>`` with the token of a file (in a cluster, the Secret that the
CompositeController's hooks send, mounted into the hook: deploy/). Everything else is refused with 401 before
its body is read, with one message whatever was wrong; the reason is counted and logged, the credential never.

The file is read with the one token reader and its one reload rule (``app.cluster.tokens.TokenFile``:
bounded, a FIFO or a device refused without blocking, read again when it changes), at start-up and then
looked at by a task of the server every ``CHECK_SECONDS``, in a worker thread: checking a caller never
touches the file, so no file (a FIFO swapped in, a stalled volume) can stop the event loop. A
rotated Secret is picked up without a restart and without waiting for traffic. Metacontroller reads its copy
of the Secret only when it (re)starts a controller, so for ``grace_seconds`` after a change the previous
token is accepted too: a rotation needs no moment when the two disagree (docs/operations.md, Security).
Tokens are compared in constant time.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from app.cluster.tokens import CHECK_SECONDS, TokenFile
from app.cluster.untrusted import Hostile
from app.server import logs
from app.settings import SettingsError
from app.settings.caller import CallerSettings

log = logging.getLogger("mpi_operator_hook.auth")

SCHEME = b"bearer"
# Longer than any token the file may hold: a header beyond it is refused without comparing anything.
MAX_HEADER_BYTES = 16 * 1024
WHAT = "MPI_OPERATOR_CALLER_TOKEN_FILE"


class Refusal(StrEnum):
    """Why a request was refused, for the metric and the log (never for the caller)."""

    MISSING = "missing"  # no Authorization header
    MALFORMED = "malformed"  # not "Bearer <token>", more than one header, or too long
    WRONG = "wrong"  # a bearer token that is not the credential


@dataclass
class _Held:
    current: bytes
    previous: bytes = b""
    previous_until: float = 0.0


class CallerCredential:
    """The token callers must present, from a file that may change under the running hook."""

    def __init__(
        self, path: Path, *, grace_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._file = TokenFile(path, WHAT)
        self._grace = grace_seconds
        self._clock = clock
        # ``Hostile`` naming the file and the problem, never the content.
        self._held = _Held(self._file.get().encode("ascii"))

    def accepts(self, token: bytes) -> bool:
        """Whether ``token`` is the current credential (or, within the grace time, the previous one)."""
        held = self._held
        current = hmac.compare_digest(token, held.current)
        previous = hmac.compare_digest(token, held.previous or held.current)
        return current or (previous and self._clock() < held.previous_until)

    async def watch(self, every: float = CHECK_SECONDS) -> None:
        """Look at the file every ``every`` seconds, in a worker thread, until cancelled (the server's
        lifespan runs it)."""
        while True:
            await asyncio.sleep(every)
            self.take(await asyncio.to_thread(self.read_if_changed))

    def refresh(self) -> None:
        """Look at the file now, here (tests and tools; the server's ``watch`` does it off the event loop)."""
        self.take(self.read_if_changed())

    def read_if_changed(self) -> bytes | None:
        """The file's token when the file changed since it was last read; None when unchanged or unusable
        (logged; the last token is kept)."""
        try:
            token = self._file.look()
        except Hostile as err:
            logs.event(log, logging.WARNING, "caller credential unusable, keeping the last", problem=str(err))
            return None
        return None if token is None else token.encode("ascii")

    def take(self, token: bytes | None) -> None:
        """Make ``token`` the credential (the current one becomes the previous); None: nothing changed."""
        if token is None or hmac.compare_digest(token, self._held.current):
            return
        self._held = _Held(token, self._held.current, self._clock() + self._grace)
        logs.event(log, logging.INFO, "caller credential changed", previous_accepted_seconds=self._grace)


def caller_credential(settings: CallerSettings) -> CallerCredential | None:
    """The credential callers must present, or None when anyone may call (``MPI_OPERATOR_CALLER_AUTH=off``).
    A token file that cannot be used is a ``SettingsError``: a hook that would refuse every call does not
    start."""
    if settings.caller_auth == "off":
        return None
    try:
        return CallerCredential(settings.caller_token_file, grace_seconds=settings.caller_token_grace_seconds)
    except Hostile as err:
        raise SettingsError(
            f"invalid hook settings: {err}: it must hold the token Metacontroller sends (deploy/ mounts it"
            " there); to serve without authentication on purpose, set MPI_OPERATOR_CALLER_AUTH=off"
        ) from None


def presented_token(values: Iterable[bytes]) -> bytes | Refusal:
    """The token of the one ``Authorization: Bearer <token>`` header in ``values``, or why there is none."""
    found = list(values)
    if not found:
        return Refusal.MISSING
    if len(found) > 1 or len(found[0]) > MAX_HEADER_BYTES:
        return Refusal.MALFORMED
    scheme, _, token = found[0].strip().partition(b" ")
    token = token.strip()
    if scheme.lower() != SCHEME or not token:
        return Refusal.MALFORMED
    return token


class Authenticator:
    """Checks a request's headers (ASGI: lower-case names, bytes) against the caller credential."""

    def __init__(self, credential: CallerCredential) -> None:
        self.credential = credential

    def refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> Refusal | None:
        """None when the caller presented the credential, else why it is refused."""
        token = presented_token(value for name, value in headers if name == b"authorization")
        if isinstance(token, Refusal):
            return token
        return None if self.credential.accepts(token) else Refusal.WRONG
