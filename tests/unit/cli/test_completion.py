"""``mpijob completion``: each script, loaded into the real shell, completes what the parser defines.

bash runs the function as its ``complete -F`` does; fish answers ``complete -C`` itself; zsh runs it through
``bashcompinit``'s ``compgen -F``, as its completion system does, and filters by the word typed, as zsh's
matcher does after it. CI installs zsh and fish (.ci/run); elsewhere a missing shell skips its cases.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.cli.program import build_parser
from tests.unit.cli.test_cli import MPIJOB

# (what is typed, what the shell should offer): commands, an option's choices, files, a positional's choices.
CASES = [
    ("mpijob re", {"render", "replay"}),
    ("mpijob lint --fail-on w", {"warning"}),
    ("mpijob doctor -o ", {"text", "json"}),
    ("mpijob lint p", {"pi.yaml"}),
    ("mpijob completion f", {"fish"}),
    ("mpijob lint --list-r", {"--list-rules"}),
    ("mpijob serve --port ", set()),  # a port: nothing to guess
]


def _shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (CI installs it)")
    return path


def _script(shell: str, folder: Path) -> Path:
    done = subprocess.run([MPIJOB, "completion", shell], capture_output=True, text=True, check=True)
    path = folder / f"mpijob.{shell}"
    path.write_text(done.stdout)
    return path


def _run(argv: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=60, check=True)
    return {line.split("\t")[0] for line in done.stdout.split("\n") if line}


def _offered(shell: str, typed: str, folder: Path) -> set[str]:
    script = _script(shell, folder)
    words = typed.split() + ([""] if typed.endswith(" ") else [])
    quoted = " ".join(f"'{word}'" for word in words)
    if shell == "fish":
        return _run([_shell("fish"), "-c", f"source {script}; complete -C '{typed}'"], folder)
    if shell == "bash":
        body = f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _mpijob"
        body += "; printf '%s\\n' \"${COMPREPLY[@]}\""
        return _run([_shell("bash"), "-c", f"source {script}; {body}"], folder)
    load = "autoload -U compinit && compinit -u"
    body = f"words=({quoted}); CURRENT=${{#words}}; COMP_WORDS=($words); COMP_CWORD=$((CURRENT-1))"
    offered = _run(
        [_shell("zsh"), "-f", "-c", f"{load}; source {script}; {body}; compgen -F _mpijob"], folder
    )
    return {word for word in offered if word.startswith(words[-1])}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize(("typed", "expected"), CASES, ids=[typed for typed, _ in CASES])
def test_the_shell_offers_what_the_parser_defines(
    shell: str, typed: str, expected: set[str], tmp_path: Path
) -> None:
    (tmp_path / "pi.yaml").write_text("kind: MPIJob\n")
    assert _offered(shell, typed, tmp_path) == expected


def test_every_command_and_option_is_in_every_script(tmp_path: Path) -> None:
    """Nothing to keep in sync by hand: a new command or option is in each script."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands is not None
    for shell in ("bash", "zsh", "fish"):
        text = _script(shell, tmp_path).read_text()
        for name, sub in commands.items():
            assert name in text
            for flag in (f for action in sub._actions for f in action.option_strings if f.startswith("--")):
                assert (flag if shell != "fish" else f"-l {flag[2:]}") in text, (shell, name, flag)


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = subprocess.run([MPIJOB, "completion", "tcsh"], capture_output=True, text=True)
    assert done.returncode == 2 and "invalid choice: 'tcsh'" in done.stderr and not done.stdout
