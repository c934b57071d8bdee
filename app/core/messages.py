"""Messages of conditions and Events: upstream's limit, and failure messages a user can act on.

Upstream cuts every condition message to 1,024 bytes (``truncate``). Its Failed message is the launcher
Job's ("Job has reached the specified backoff limit"), which says nothing of the worker that died or of
what ``mpirun`` printed. Ours keeps that message first, then names each failed worker and how its
container ended, then the launcher's own last words: the tail of its termination message, which the
kubelet fills from the log's last lines when the container's ``terminationMessagePolicy`` is
``FallbackToLogsOnError`` (the launcher's default here). The whole stays within upstream's 1,024 bytes,
with no control characters; when it must be cut, the last words lose their beginning, since ``mpirun``'s
verdict is at the end.
"""

from __future__ import annotations

import re

from app.core.observed import Exit

MESSAGE_LIMIT = 1024

# A few names tell the story; a 4,096-worker job whose every worker failed must not fill the message.
MAX_WORKERS_NAMED = 3
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LINE_BREAKS = re.compile(r"\s*\n\s*")
_ELLIPSIS = "..."


def truncate(message: str) -> str:
    """Upstream's ``truncateMessage``, for every condition and Event message: it counts **bytes** (Go's
    ``len`` and slicing of a string), as the apiserver's 1,024 limit on an Event's message does. Over 1,024
    bytes → the first 1,021 and ``...``; a character the cut would split is dropped whole (Go would keep its
    first bytes, an invalid string), so such a result is a few bytes shorter."""
    raw = message.encode()
    if len(raw) <= MESSAGE_LIMIT:
        return message
    return raw[: MESSAGE_LIMIT - len(_ELLIPSIS)].decode(errors="ignore") + _ELLIPSIS


def failure_message(head: str, launcher: Exit | None, workers: list[Exit]) -> str:
    """``head``: upstream's message, as it is when nothing more is known; ``launcher``: how the launcher's
    container last failed."""
    if launcher is None and not workers:
        return truncate(head)
    message = one_line(head).rstrip(" :.")  # upstream appends ": " and the Pod's message, often empty
    if workers:
        named = ", ".join(_describe(exit) for exit in workers[:MAX_WORKERS_NAMED])
        more = len(workers) - MAX_WORKERS_NAMED
        message += f". Failed workers: {named}" + (f" and {more} more" if more > 0 else "")
    if launcher is None:
        return truncate(message)
    message += f". Launcher {_describe(launcher)}"
    last_words = one_line(launcher.message)
    if not last_words:
        return truncate(message)
    prefix = message + ", last output: "
    room = MESSAGE_LIMIT - len(prefix.encode()) - len(_ELLIPSIS)
    if room <= 0:
        return truncate(message)
    if len(last_words.encode()) > room + len(_ELLIPSIS):
        last_words = _ELLIPSIS + last_words.encode()[-room:].decode(errors="ignore")
    return prefix + last_words


def _describe(exit: Exit) -> str:
    """``pi-worker-1: container worker exited with code 137 (OOMKilled)``."""
    reason = f" ({one_line(exit.reason)})" if exit.reason else ""
    return f"{exit.pod}: container {exit.container} exited with code {exit.code}{reason}"


def one_line(text: str) -> str:
    """One line: line breaks become `` | ``, tabs spaces, other control characters go."""
    return _CONTROL.sub("", _LINE_BREAKS.sub(" | ", text.strip()).replace("\t", " "))
