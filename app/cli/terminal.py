"""Text the command line did not write (a server's message, a name from a file, a log line, a hook's
answer), made safe to print: one rule for ``mpijob doctor`` and ``mpijob replay``.

An ESC, a newline or a bidirectional override in such text would drive the user's terminal or forge output
lines, so each is printed as an escape, never as itself; so is a character that is not text (a lone
surrogate, from a JSON escape), which could not even be written. A line is cut at a number of characters:
its beginning says what it is about. (Messages for the API server are cut by bytes, as upstream cuts them:
``app.core.messages.truncate``.)
"""

from __future__ import annotations

import re

# Longest line the doctor prints.
PRINT_CHARS = 2000
# C0 and C1 controls, DEL, and the invisible, line-separating or reordering characters a terminal acts on.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CUT = "..."


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit - 3`` characters and ``...``."""
    return text if len(text) <= limit else text[: limit - len(_CUT)] + _CUT


def printable(text: object, limit: int = PRINT_CHARS) -> str:
    """``text`` as one safe line: ``\\n``, ``\\r`` and ``\\t`` named, other such characters as ``\\xNN`` or
    ``\\uNNNN``, cut at ``limit`` characters."""
    line = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return cut(_UNPRINTABLE.sub(_escape, line), limit)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    return named or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
