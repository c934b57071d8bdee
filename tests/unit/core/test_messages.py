"""``truncate``: upstream's ``truncateMessage``, which cuts by bytes, not characters."""

from __future__ import annotations

import pytest

from app.core.messages import truncate

CUT = "..."

# (case, message, what upstream's rule leaves: the first 1,021 bytes and "..." when over 1,024 bytes)
CASES = [
    ("empty", "", ""),
    ("1,024 ASCII bytes stay", "x" * 1024, "x" * 1024),
    ("1,025 ASCII bytes are cut", "x" * 1025, "x" * 1021 + CUT),
    ("1,024 bytes in 512 two-byte characters stay", "é" * 512, "é" * 512),
    # 600 characters, under 1,024 characters but 1,200 bytes: a character count would keep them all.
    ("two-byte characters over 1,024 bytes are cut", "é" * 600, "é" * 510 + CUT),
    ("a four-byte character is never split", "😀" * 300, "😀" * 255 + CUT),
    ("the cut lands after a whole character", "x" * 1019 + "é" * 10, "x" * 1019 + "é" + CUT),
    ("a line break is kept as written", "a\nb", "a\nb"),
]


@pytest.mark.parametrize(("message", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_truncate_counts_bytes_as_upstream(message: str, expected: str) -> None:
    assert truncate(message) == expected
    assert len(truncate(message).encode()) <= 1024
