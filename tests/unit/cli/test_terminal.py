"""What the command line prints of text it did not write: one rule for the doctor and replay."""

from __future__ import annotations

import pytest

from app.cli.terminal import cut, printable

CASES = [
    ("plain text", "pi-worker-0 OOMKilled", "pi-worker-0 OOMKilled"),
    ("line breaks and tabs are named", "a\nb\r\tc", "a\\nb\\r\\tc"),
    ("an ESC sequence cannot colour", "\x1b[31mred", "\\x1b[31mred"),
    ("a C1 control", "\x9b2J", "\\x9b2J"),
    ("a bidirectional override", "abc\u202egpj.exe", "abc\\u202egpj.exe"),
    ("an invisible character", "ad\u200bmin\ufeff", "ad\\u200bmin\\ufeff"),
    ("a lone surrogate is shown, not written", "x\udc80y", "x\\udc80y"),
    ("other scripts stay", "élan 日本", "élan 日本"),
]


@pytest.mark.parametrize(("text", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_printable_escapes_what_a_terminal_would_act_on(text: str, shown: str) -> None:
    assert printable(text) == shown
    shown.encode("utf-8")  # always writable


def test_a_line_is_cut_by_characters_with_the_cut_marked() -> None:
    assert cut("x" * 10, 10) == "x" * 10
    assert cut("x" * 11, 10) == "x" * 7 + "..."
    assert printable("\n" * 10, 10).startswith("\\n\\n\\n") and len(printable("\n" * 10, 10)) == 10
