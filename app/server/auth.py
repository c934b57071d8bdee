"""Who may call ``/sync`` and ``/customize``: only a caller that presents Metacontroller's credential.

A sync has side effects in the cluster (the Events the hook posts), so the hook answers only requests that
carry ``Authorization: Bearer <token>`` with the token of a file (in a cluster, the Secret that the
CompositeController's hooks send, mounted into the hook: deploy/). Everything else is refused with 401 before
its body is read, with one message whatever was wrong; the reason is counted and logged, the credential never.

The file is checked for a change every few seconds by a task of the server (``watch``), and at most once a
second by callers, and re-read when it changed, so a rotated Secret is picked up without a restart and
without waiting for traffic. Metacontroller reads its copy of the Secret only when it (re)starts a
controller, so for ``grace_seconds`` after a change the previous token is accepted too: a rotation needs no
moment when the two disagree (docs/operations.md, Security). Tokens are compared in constant time.
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

from app.server import logs
from app.settings import read_caller_token

log = logging.getLogger("mpi_operator_hook.auth")

SCHEME = b"bearer"
CHECK_SECONDS = 1.0
WATCH_SECONDS = 5.0
# Longer than any token the file may hold: a header beyond it is refused without comparing anything.
MAX_HEADER_BYTES = 16 * 1024


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
        self,
        path: Path,
        *,
        grace_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        check_seconds: float = CHECK_SECONDS,
    ) -> None:
        self._path = path
        self._grace = grace_seconds
        self._clock = clock
        self._check_seconds = check_seconds
        self._held = _Held(read_caller_token(path))
        self._stamp = self._file_stamp()
        self._checked_at = clock()

    def accepts(self, token: bytes) -> bool:
        """Whether ``token`` is the current credential (or, within the grace time, the previous one)."""
        now = self._clock()
        if now - self._checked_at >= self._check_seconds:
            self.refresh()
        held = self._held
        current = hmac.compare_digest(token, held.current)
        previous = hmac.compare_digest(token, held.previous or held.current) and now < held.previous_until
        return current or previous

    def refresh(self) -> None:
        """Look at the file now: a changed token is taken up (and logged) without waiting for a caller."""
        now = self._clock()
        self._checked_at = now
        self._reload_if_changed(now)

    async def watch(self, every: float = WATCH_SECONDS) -> None:
        """Refresh every ``every`` seconds, until cancelled (the server's lifespan runs it)."""
        while True:
            await asyncio.sleep(every)
            self.refresh()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            info = self._path.stat()  # follows the kubelet's ..data symlink to the current version
        except OSError:
            return None
        return info.st_ino, info.st_mtime_ns, info.st_size

    def _reload_if_changed(self, now: float) -> None:
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            token = read_caller_token(self._path)
        except ValueError as err:
            logs.event(log, logging.WARNING, "caller credential unusable, keeping the last", problem=str(err))
            return
        if hmac.compare_digest(token, self._held.current):
            return
        self._held = _Held(token, self._held.current, now + self._grace)
        logs.event(log, logging.INFO, "caller credential changed", previous_accepted_seconds=self._grace)


def bearer_token(values: Iterable[bytes]) -> bytes | Refusal:
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
        token = bearer_token(value for name, value in headers if name == b"authorization")
        if isinstance(token, Refusal):
            return token
        return None if self.credential.accepts(token) else Refusal.WRONG
