"""The ``mpijob`` program itself: bare ``mpijob`` shows what it can do, ``-V`` its version, and every
command's errors share one shape, ``mpijob <command>: <what is wrong>: <what to do>``
(``app/cli/complaints.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli.program import build_parser, package_version
from tests.unit.cli.test_cli import mpijob


def test_bare_mpijob_shows_every_command() -> None:
    done = mpijob()
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("usage: mpijob")
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert commands is not None
    assert all(f"\n    {name} " in done.stderr for name in commands), done.stderr


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version(flag: str) -> None:
    done = mpijob(flag)
    assert (done.returncode, done.stdout) == (0, f"mpijob {package_version()}\n")


# One failure per command (and the program's own): each prints exactly one error line with its prefix.
FAILURES = [
    ([], "nosuch", "mpijob"),
    ([], "serve --port 0", "mpijob serve"),
    (["MPI_OPERATOR_LOG_FORMAT=yaml"], "serve --port 1", "mpijob serve"),
    ([], "render /nonexistent.yaml", "mpijob render"),
    ([], "render --status", "mpijob render"),
    ([], "lint /nonexistent.yaml", "mpijob lint"),
    ([], "convert /nonexistent.yaml", "mpijob convert"),
    ([], "convert --to v1 x.yaml", "mpijob convert"),
    ([], "replay /nonexistent --url http://127.0.0.1:1", "mpijob replay"),
    ([], "doctor pi --kubeconfig /nonexistent", "mpijob doctor"),
    ([], "completion tcsh", "mpijob completion"),
]


@pytest.mark.parametrize(("env", "argv", "prefix"), FAILURES, ids=[argv for _, argv, _ in FAILURES])
def test_every_error_is_one_line_naming_the_command(
    env: list[str], argv: str, prefix: str, tmp_path: Path
) -> None:
    done = mpijob(*argv.split(), env=dict(item.split("=", 1) for item in env), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("mpijob")]
    assert line.startswith(f"{prefix}: ") and line.count(": ") >= 2, line
    assert "Traceback" not in done.stderr
