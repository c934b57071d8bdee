"""Bearer tokens: the one reader for a token file (a kubeconfig's ``tokenFile``, the Pod's service-account
token, ``mpijob replay --token-file``) and the one check of a token before it goes into a header.

A token is visible ASCII once its ends' whitespace is trimmed: a control character (a file that is not a
token, a forged header line) is refused unechoed. ``TokenFile`` reads the file again once a minute, as
client-go does for a service account's projected token, which the kubelet rewrites well before it expires.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from app.cluster.untrusted import Hostile, read_file

# A token is a few hundred bytes to a few KiB (a JWT with many claims).
TOKEN_FILE_BYTES = 8 * 1024
REFRESH_SECONDS = 60.0


def bearer_token(raw: str | bytes, where: str) -> str:
    """``raw`` fit for an ``Authorization`` header, or ``Hostile`` naming ``where`` (never the content)."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    token = text.strip()
    if not token:
        raise Hostile(f"{where}: empty")
    if not all("\x21" <= char <= "\x7e" for char in token):
        bad = any(char < "\x20" or char == "\x7f" for char in token)
        why = "contains control characters" if bad else "contains characters other than visible ASCII"
        raise Hostile(f"{where}: not a valid bearer token ({why})")
    return token


def read_token(path: Path, what: str, *, pipes: bool = False) -> str:
    """The token in the file ``path`` (``what`` names it in errors: ``tokenFile``, ``--token-file``)."""
    return bearer_token(read_file(path, TOKEN_FILE_BYTES, what, pipes=pipes), f"{what} {path}")


class TokenFile:
    """A bearer token read from a file and read again once ``refresh_seconds`` have passed. A failed re-read
    keeps the last token; the first read's failure is ``Hostile`` (the file and the problem)."""

    def __init__(
        self,
        path: Path,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = path
        self._refresh = refresh_seconds
        self._clock = clock
        self._token = ""
        self._read_at = 0.0

    def get(self) -> str:
        now = self._clock()
        if self._token and now - self._read_at < self._refresh:
            return self._token
        try:
            token = read_token(self._path, "token file")
        except Hostile:
            if self._token:
                return self._token
            raise
        self._token, self._read_at = token, now
        return token
