"""docs/troubleshooting.md lists the doctor's checks in one table, and it is the code's list: the same checks,
in the same order, each with the text ``mpijob doctor --list-checks`` prints (``app.cli.doctor.checks``).
A planted difference is found, so a parser that reads nothing cannot pass."""

from __future__ import annotations

import re

import pytest

from app.cli.doctor.checks import CHECKS
from tests.support import paths

PAGE = paths.ROOT / "docs" / "troubleshooting.md"
HEADER = "| check | finds |"


def documented(text: str) -> list[tuple[str, str]]:
    lines = text.splitlines()
    start = lines.index(HEADER)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        check, finds = (cell.strip() for cell in line.strip().strip("|").split("|", 1))
        rows.append((check.strip("`"), finds))
    return rows


def problems(text: str) -> list[str]:
    rows, code = documented(text), [(c.id, c.finds) for c in CHECKS]
    if rows == code:
        return []
    ids, code_ids = [r for r, _ in rows], [c for c, _ in code]
    found = [f"{c} is not documented" for c in code_ids if c not in ids]
    found += [f"{c} is documented but not a check" for c in ids if c not in code_ids]
    found += [f"{c}: the page says {t!r}" for (c, t) in rows if (c, t) not in code and c in code_ids]
    return found or [f"the order differs: {ids}"]


def test_the_page_lists_the_checks_of_the_code() -> None:
    assert problems(PAGE.read_text()) == []


def test_the_page_starts_with_the_doctor() -> None:
    text = PAGE.read_text()
    first_command = re.search(r"```sh\n(.*?)\n", text)
    assert first_command is not None and first_command[1].startswith("mpijob doctor")


PLANTED = {
    "a check left out": lambda t: re.sub(r"\| `oom-killed` \|[^\n]*\n", "", t),
    "two swapped": lambda t: (
        t.replace("`job-failed`", "`tmp`")
        .replace("`job-restarting`", "`job-failed`")
        .replace("`tmp`", "`job-restarting`")
    ),
    "another text": lambda t: t.replace("(OOMKilled) |", "(OOM) |"),
}


@pytest.mark.parametrize("plant", PLANTED.values(), ids=PLANTED.keys())
def test_a_planted_difference_is_found(plant: object) -> None:
    text = PAGE.read_text()
    planted = plant(text)  # type: ignore[operator]
    assert planted != text
    assert problems(planted) != []
