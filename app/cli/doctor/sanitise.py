"""One sanitiser for anything the doctor prints (bounded reads, depth-checked JSON: app/cluster/untrusted.py).

The doctor prints server text (messages, Events, log lines) and names from files (contexts, paths): an ESC
or a newline there would drive the user's terminal or forge output lines, so every line the doctor prints
goes through ``printable``.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode line separators and bidirectional overrides (which reorder what a
# terminal shows): each printed as an escape, never as itself.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# One printed line at most this long (a message's beginning says what it is about).
PRINT_CHARS = 2000


def printable(text: object, limit: int = PRINT_CHARS) -> str:
    """``text`` as one safe line: controls escaped (``\\n``, ``\\x1b``), cut at ``limit`` characters."""
    line = _UNPRINTABLE.sub(_escape, str(text))
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
    return named or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
