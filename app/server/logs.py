"""Log lines that input cannot forge: every field quoted, escaped and cut short; optional JSON lines.

A job name or namespace comes from whoever created the MPIJob (or from whoever can reach the hook): a
newline in it would forge a log line, an ANSI escape would rewrite a terminal, 10 MB would make a 10 MB
line. ``event`` logs a fixed message plus fields; text mode renders ``message key="value" ...`` with
JSON string escaping, JSON mode (``MPI_OPERATOR_LOG_FORMAT=json``) one object per line.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

MAX_FIELD_CHARS = 256
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def cap(value: object, limit: int = MAX_FIELD_CHARS) -> str:
    """``value`` as text of at most ``limit`` characters (plus a marker saying how much was cut)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...(+{len(text) - limit} chars)"


def quote(value: object) -> str:
    """A capped value as a JSON string: quotes, backslashes, control and non-ASCII characters escaped."""
    return json.dumps(cap(value))


def event(logger: logging.Logger, level: int, what: str, /, **fields: object) -> None:
    """Log a fixed text ``what`` with fields; the fields never reach the format string."""
    if not logger.isEnabledFor(level):
        return
    capped = {key: cap(value) if isinstance(value, str) else value for key, value in fields.items()}
    text = " ".join(f"{key}={quote(v) if isinstance(v, str) else v}" for key, v in capped.items())
    logger.log(level, "%s %s", what, text, extra={"fields": capped, "event": what})


def refused(logger: logging.Logger, hook: str, status: int, reason: str) -> None:
    """One line per request the hook refuses: the status and the reason the client was given (which never
    quotes the body), so a 4xx is more than an access-log line."""
    event(logger, logging.WARNING, "refused", hook=hook, status=status, reason=reason)


class Throttle:
    """At most one log line per ``seconds``: ``admit`` returns how many were held back since the last line
    admitted, or None to hold this one back too."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._seconds = seconds
        self._clock = clock
        self._last: float | None = None
        self._held = 0

    def admit(self) -> int | None:
        now = self._clock()
        if self._last is not None and now - self._last < self._seconds:
            self._held += 1
            return None
        held, self._held, self._last = self._held, 0, now
        return held


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, then ``message`` or an event's text and fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
        }
        what = getattr(record, "event", None)
        if what is None:
            line["message"] = cap(record.getMessage(), 4096)
        else:  # an ``event``: its fixed text, then its fields (which may include a "message")
            line["event"] = what
            fields: dict[str, Any] = getattr(record, "fields", None) or {}
            line.update({key: value for key, value in fields.items() if key not in line})
        if record.exc_info:
            line["exception"] = cap(self.formatException(record.exc_info), 8192)
        return json.dumps(line, ensure_ascii=True, default=str)


def configure(level: str, log_format: str) -> None:
    """Root logging for the hook process: text (the default) or JSON lines, on standard error."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
