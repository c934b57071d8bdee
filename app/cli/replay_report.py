"""What ``mpijob replay`` prints of its cases: a line each as it is compared, then the counts (text), or one
JSON object once every case is (``-o json``: the schema in docs/user-guide.md, "replay -o json").

Case names and differences come from files and a server: a text line goes through ``printable``; a JSON string
is escaped by JSON itself (``ensure_ascii``: nothing a terminal acts on) and cut to ``LINE_CHARS``. Only what
the text shows is in the JSON: at most ``MAX_DIFF_LINES`` differences a case, never the token or the URL.
Error lines (``say_error``) go to stderr in both.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from app.cli.complaints import error_line
from app.cli.replay_io import LINE_CHARS
from app.cli.terminal import cut, printable

COMMAND = "replay"
MAX_DIFF_LINES = 10
SAME, DIFFERS, SKIPPED, BROKEN = "same", "differs", "skipped", "broken"
VERDICTS = (SAME, DIFFERS, SKIPPED, BROKEN)


@dataclass(frozen=True)
class Verdict:
    """One case's verdict: its differences (``differs``), or why it was not compared (``skipped``,
    ``broken``)."""

    case: str
    verdict: str
    differences: tuple[str, ...] = ()
    why: str = ""


def say(line: str, file: TextIO | None = None) -> None:
    """Print one line, made safe for a terminal: names and answers come from files and a server."""
    print(printable(line, LINE_CHARS), file=file or sys.stdout)


def say_error(problem: str, fix: str = "") -> None:
    """One error line of replay's (``app.cli.complaints``) on stderr, made safe as every line is."""
    say(error_line(COMMAND, problem, fix), sys.stderr)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class Report:
    """Counts each case's verdict and prints it: a line as it comes (text), or all at the end (json)."""

    def __init__(self, output: str, width: int) -> None:
        self.counts = dict.fromkeys(VERDICTS, 0)
        self._json: list[dict[str, Any]] | None = [] if output == "json" else None
        self._width = width

    def add(self, verdict: Verdict) -> None:
        self.counts[verdict.verdict] += 1
        if self._json is not None:
            self._json.append(_as_json(verdict))
        else:
            self._print(verdict)

    def finish(self) -> None:
        """The counts (text), or the one JSON object."""
        if self._json is not None:
            print(json.dumps({"cases": self._json, "summary": self.counts}, indent=2))
            return
        same, differ, skipped, broken = (self.counts[v] for v in VERDICTS)
        say(f"{same} same, {differ} differ, {skipped} skipped" + (f", {broken} broken" if broken else ""))

    def _print(self, verdict: Verdict) -> None:
        name = f"{verdict.case:<{self._width}}"
        if verdict.verdict == SAME:
            say(f"same     {verdict.case}")
        elif verdict.verdict == DIFFERS:
            say(f"differs  {name}  ({plural(len(verdict.differences), 'difference')})")
            for line in verdict.differences[:MAX_DIFF_LINES]:
                say(f"  {line}")
            if len(verdict.differences) > MAX_DIFF_LINES:
                say(f"  ... and {len(verdict.differences) - MAX_DIFF_LINES} more")
        else:
            say(f"{verdict.verdict:<8} {name}  {verdict.why}")


def _as_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "case": verdict.case,
        "verdict": verdict.verdict,
        "differences": [cut(line, LINE_CHARS) for line in verdict.differences[:MAX_DIFF_LINES]],
        "moreDifferences": max(0, len(verdict.differences) - MAX_DIFF_LINES),
        "why": cut(verdict.why, LINE_CHARS),
    }
