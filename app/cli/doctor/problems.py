"""What a check is and what it finds: a ``Problem`` with its evidence and its fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.cli.terminal import cut

if TYPE_CHECKING:
    from app.cli.doctor.facts import Facts

# Evidence lines are quoted, never whole logs: each at most this long.
EVIDENCE_CHARS = 300


@dataclass(frozen=True)
class Problem:
    check: str
    # One line: what is wrong, naming the object.
    summary: str
    # What shows it: the object's status, an Event, a log line; each one line.
    evidence: tuple[str, ...] = field(default_factory=tuple)
    fix: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Check:
    """One entry of the doctor's fixed list: ``id`` as printed, ``finds`` as documented."""

    id: str
    finds: str
    run: Callable[[Facts], Problem | None]

    def __call__(self, facts: Facts) -> Problem | None:
        return self.run(facts)


def check(id: str, finds: str) -> Callable[[Callable[[Facts], Problem | None]], Check]:
    """Make a function a ``Check``; the order of the list is ``checks.CHECKS``'s, not the definitions'."""

    def make(run: Callable[[Facts], Problem | None]) -> Check:
        return Check(id, finds, run)

    return make


def one_line(text: object, limit: int = EVIDENCE_CHARS) -> str:
    """Evidence as one line, cut at ``limit`` characters (a message's beginning says what it is about)."""
    line = " | ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return cut(line, limit)
