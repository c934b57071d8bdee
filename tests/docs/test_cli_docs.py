"""The user guide's ``mpijob`` tables stay true: exit codes against ``app/cli/exits.py``, lint rules against
the rule registry (``app.api.lint.RULES`` and ``SEVERITIES``).

Each check also runs on a planted contradiction, so a parser that finds nothing cannot pass.
"""

from __future__ import annotations

import re

import pytest

from app.api.lint import RULES, SEVERITIES
from app.cli import exits
from tests.support import paths

GUIDE = paths.ROOT / "docs" / "user-guide.md"
SECTION = "## The `mpijob` command"
COMMANDS = ("render", "lint", "convert", "serve", "replay", "doctor")
# In an exit-code cell: "0 rendered, 1 a job is invalid (...), 2 unusable input": a code starts the cell or
# follows ", ", and a word follows it.
_CODE = re.compile(r"(?:^|, )(\d+) (?=[a-zA-Z(`])")


def _section(text: str) -> str:
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else len(text)]


def _rows(section: str, header: str) -> list[list[str]]:
    """The cells of each row of the table whose header line starts with ``header``."""
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        rows.append([cell.strip() for cell in cells])
    return rows


def documented_exit_codes(text: str) -> dict[str, set[int]]:
    """command (its row's first word after ``mpijob``, or ``every command``) -> the codes its row lists."""
    codes = {}
    for command, _, cell in _rows(_section(text), "| command | what | exit codes |"):
        name = command.strip("`").split()[1] if command.startswith("`mpijob") else command
        codes[name] = {int(code) for code in _CODE.findall(cell)}
    return codes


def documented_rules(text: str) -> list[tuple[str, str]]:
    """(rule, severity) per row of the lint-rule table, in order; the severity is the cell's first word."""
    return [
        (rule.strip("`"), severity.split()[0])
        for rule, severity, _ in _rows(_section(text), "| rule | severity | finds |")
    ]


def exit_codes() -> set[int]:
    return {value for name, value in vars(exits).items() if name.startswith("EXIT_")}


def exit_code_problems(text: str) -> list[str]:
    documented = documented_exit_codes(text)
    problems = [f"no row for mpijob {c}" for c in COMMANDS if c not in documented]
    problems += [f"no exit code in the row of {c}" for c, codes in documented.items() if not codes]
    every = set().union(*documented.values())
    problems += [f"exit code {c} is in app/cli/exits.py but not documented" for c in exit_codes() - every]
    problems += [f"exit code {c} is documented but not in app/cli/exits.py" for c in every - exit_codes()]
    return problems


def rule_problems(text: str) -> list[str]:
    rows = documented_rules(text)
    names = [rule for rule, _ in rows]
    problems = [
        f"rule {r} documented {names.count(r)} times" for r in sorted(set(names)) if names.count(r) > 1
    ]
    problems += [f"rule {r} is not documented" for r in RULES if r not in names]
    problems += [f"rule {r} is documented but not in the registry" for r in names if r not in RULES]
    problems += [
        f"rule {rule} is documented as {severity}, the registry says {SEVERITIES[rule].value}"
        for rule, severity in rows
        if rule in SEVERITIES and severity != SEVERITIES[rule].value
    ]
    return problems


def test_the_exit_code_table_matches_exits_py() -> None:
    assert exit_code_problems(GUIDE.read_text()) == []


def test_each_command_documents_what_its_code_means() -> None:
    documented = documented_exit_codes(GUIDE.read_text())
    assert documented["serve"] == {exits.EXIT_OK, exits.EXIT_UNUSABLE, exits.EXIT_CANNOT_SERVE}
    assert (
        documented["lint"]
        == documented["render"]
        == {exits.EXIT_OK, exits.EXIT_FINDINGS, exits.EXIT_UNUSABLE}
    )
    assert documented["convert"] == {exits.EXIT_OK, exits.EXIT_UNUSABLE}
    assert documented["doctor"] == {exits.EXIT_OK, exits.EXIT_FINDINGS, exits.EXIT_UNUSABLE}
    assert documented["replay"] == {exits.EXIT_OK, exits.EXIT_FINDINGS, exits.EXIT_UNUSABLE}
    every = {exits.EXIT_INTERNAL, exits.EXIT_INTERRUPTED, exits.EXIT_BROKEN_PIPE}
    assert documented["every command"] == every


def test_the_rule_table_matches_the_registry() -> None:
    assert rule_problems(GUIDE.read_text()) == []


# --- the checks can fail: each planted contradiction is found ---------------------------------------------

PLANTED_EXITS = {
    "a code that does not exist": ("4 cannot listen", "5 cannot listen"),
    "a code left out": (", 130 interrupted (Ctrl-C)", ""),
    "a command row left out": ("| `mpijob serve` |", "| `mpijob serve-it` |"),
}
PLANTED_RULES = {
    "a rule left out": ("| `ssh-path-for-root` | warning |", "| `ssh-path-for-rot` | warning |"),
    "a wrong severity": ("| `gpus-at-pod-level` | error |", "| `gpus-at-pod-level` | warning |"),
    "a rule twice": (
        "| `np-mismatch` | warning |",
        "| `np-mismatch` | warning | x |\n| `np-mismatch` | warning |",
    ),
}


@pytest.mark.parametrize(("old", "new"), PLANTED_EXITS.values(), ids=PLANTED_EXITS.keys())
def test_a_planted_exit_code_contradiction_is_found(old: str, new: str) -> None:
    text = GUIDE.read_text()
    assert old in _section(text)
    assert exit_code_problems(text.replace(old, new, 1)) != []


@pytest.mark.parametrize(("old", "new"), PLANTED_RULES.values(), ids=PLANTED_RULES.keys())
def test_a_planted_rule_contradiction_is_found(old: str, new: str) -> None:
    text = GUIDE.read_text()
    assert old in _section(text)
    assert rule_problems(text.replace(old, new, 1)) != []
