"""The one shape of every error line the ``mpijob`` command prints: ``mpijob <command>: <what is wrong>: <what
to do>``, on stderr. The program is ``kubectl mpijob`` when kubectl runs us as its plugin; the command is the
subcommand the user typed (none before one is known); the fix is left out only where there is nothing to do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO


def program() -> str:
    """``kubectl mpijob`` when kubectl runs us as its plugin (``kubectl-mpijob`` on PATH), else ``mpijob``."""
    return "kubectl mpijob" if Path(sys.argv[0]).name == "kubectl-mpijob" else "mpijob"


def error_line(command: str | None, problem: str, fix: str = "") -> str:
    """``<program> <command>: <problem>: <fix>``, without a trailing newline."""
    where = f"{program()} {command}" if command else program()
    return f"{where}: {problem}: {fix}" if fix else f"{where}: {problem}"


def complain(command: str | None, problem: str, fix: str = "", stream: TextIO | None = None) -> None:
    """Print one error line (``error_line``) on ``stream`` (stderr)."""
    print(error_line(command, problem, fix), file=stream or sys.stderr)
