"""Bearer tokens: the one reader for a token file (a kubeconfig's ``tokenFile``, the Pod's service-account
token, ``mpijob replay --token-file``) and the one check of a token before it goes into a header.

A token is visible ASCII once its ends' whitespace is trimmed: a control character (a file that is not a
token, a forged header line) is refused unechoed. ``TokenFile`` is the one rule for a token file that
changes under a running process.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from app.cluster.untrusted import Hostile, read_file

# A token is a few hundred bytes to a few KiB (a JWT with many claims).
TOKEN_FILE_BYTES = 8 * 1024
# How often a token file is looked at for a change: a rotation is taken up within a second or two.
CHECK_SECONDS = 1.0


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
    """A token file that may change under a running process: a rotated Secret (the caller credential), the
    service-account token the kubelet rewrites well before it expires. The one reload rule for both: the file
    is looked at (a ``stat``, following the kubelet's ``..data`` link) at most once every ``check_seconds``,
    and read again only when its inode, modification time or size changed. A re-read that fails keeps the
    last token; the first read's failure is ``Hostile`` (the file and the problem, never the content)."""

    def __init__(
        self,
        path: Path,
        what: str = "token file",
        *,
        check_seconds: float = CHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._what = what
        self._check = check_seconds
        self._clock = clock
        self._token = ""
        self._stamp: tuple[int, int, int] | None = None
        self._looked_at = -math.inf

    def due(self) -> bool:
        """Whether ``get`` would look at the file (callers on an event loop then call it in a thread)."""
        return not self._token or self._clock() - self._looked_at >= self._check

    def look(self) -> str | None:
        """The file's token when it changed since it was last read (or was never read), else None.
        ``Hostile`` when it changed into something unusable; it is not read again until it changes again."""
        self._looked_at = self._clock()
        stamp = _stamp(self.path)
        if self._token and (stamp is None or stamp == self._stamp):
            return None
        self._stamp = stamp
        self._token = read_token(self.path, self._what)
        return self._token

    def get(self) -> str:
        """The token to send now, looked at again when due; a failed re-read keeps the last token."""
        if self.due():
            try:
                self.look()
            except Hostile:
                if not self._token:
                    raise
        return self._token


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size
