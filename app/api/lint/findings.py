"""What a lint rule reports: a ``Finding`` with its ``Severity`` (shared by the CLI and the hook)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is worse: ``--fail-on warning`` fails on ranks >= warning's."""
        return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[self]


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    path: str
    message: str
    fix: str

    def as_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "path": self.path,
            "message": self.message,
            "fix": self.fix,
        }


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 slot``, ``2 slots``, ``1 process``: every count a lint message prints goes through here."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"
