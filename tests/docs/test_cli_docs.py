"""The user guide's ``mpijob`` tables stay true: exit codes against ``app/cli/exits.py``, lint rules against
the rule registry (``app.api.lint.RULES`` and ``SEVERITIES``), and what it says lint, render and convert
print (the old versions they send to convert, the GPU example's findings) against what they print.

Each check also runs on a planted contradiction, so a parser that finds nothing cannot pass.
"""

from __future__ import annotations

import re

import pytest
import yaml

from app.api.lint import RULES, SEVERITIES, lint_manifest
from app.api.types import OLD_API_VERSIONS
from app.cli import exits
from tests.support import paths
from tests.unit.cli.test_cli import mpijob

GUIDE = paths.ROOT / "docs" / "user-guide.md"
GPU_EXAMPLE = paths.ROOT / "docs" / "examples" / "gpu-mistakes.yaml"
SECTION = "## The `mpijob` command"
COMMANDS = ("render", "lint", "convert", "serve", "replay", "doctor", "completion")
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


_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
# A version as the guide writes it: `kubeflow.org/v1alpha1`, or `v1` after the first.
_VERSION = re.compile(r"`(?:kubeflow\.org/)?(v\d+(?:(?:alpha|beta)\d+)?)`")


def _versions(cell: str) -> set[str]:
    return {f"kubeflow.org/{v}" for v in _VERSION.findall(cell)}


def _row(section: str, header: str, first_cell: str) -> list[str]:
    [row] = [r for r in _rows(section, header) if r[0].startswith(first_cell)]
    return row


def old_version_problems(text: str) -> list[str]:
    """The versions the old-api-version row and the convert row name, and the command the row gives, against
    ``OLD_API_VERSIONS`` and the rule's fix."""
    section = _section(text)
    advice = _row(section, "| rule | severity | finds |", "`old-api-version`")[2]
    convert = _row(section, "| command | what | exit codes |", "`mpijob convert")[1].split(" to `v2beta1`")[0]
    problems = [
        f"{where} names {sorted(_versions(cell))}, convert reads {sorted(OLD_API_VERSIONS)}"
        for where, cell in (("old-api-version", advice), ("convert", convert))
        if _versions(cell) != set(OLD_API_VERSIONS)
    ]
    [fix] = {f.fix for v in OLD_API_VERSIONS for f in lint_manifest({"apiVersion": v, "kind": "MPIJob"})}
    commands = re.findall(r"`(mpijob [^`]*)`", advice)
    if not commands or any(command not in fix for command in commands):
        problems.append(f"old-api-version advises {commands}, lint's fix says {fix!r}")
    return problems


def gpu_example_problems(text: str) -> list[str]:
    """The guide's count and rules for docs/examples/gpu-mistakes.yaml, and the file's own count, against
    lint's findings."""
    [paragraph] = [p for p in text.split("\n\n") if p.startswith("`mpijob lint` finds")]
    said = re.search(r"finds (\w+) mistakes", paragraph)
    rules = set(re.findall(r"`([a-z-]+)`", paragraph)) & set(RULES)
    findings = lint_manifest(yaml.safe_load(GPU_EXAMPLE.read_text()))
    in_file = re.match(r"# (\w+) silent mistakes", GPU_EXAMPLE.read_text())
    problems = []
    for where, match in (("the guide", said), (GPU_EXAMPLE.name, in_file)):
        if match is None or _NUMBERS.get(match.group(1).lower()) != len(findings):
            problems.append(f"{where} counts {match and match.group(1)!r}, lint finds {len(findings)}")
    if rules != {f.rule for f in findings}:
        problems.append(f"the guide names {sorted(rules)}, lint finds {sorted(f.rule for f in findings)}")
    return problems


def test_the_guide_names_the_versions_convert_reads_and_lints_advice() -> None:
    assert old_version_problems(GUIDE.read_text()) == []


def test_render_gives_the_advice_the_guide_documents() -> None:
    """The row says render advises what lint does; the command is the documented one, for the file given."""
    advice = _row(_section(GUIDE.read_text()), "| rule | severity | finds |", "`old-api-version`")[2]
    [command] = re.findall(r"`(mpijob [^`]*)`", advice)
    for version in OLD_API_VERSIONS:
        done = mpijob("render", "-", stdin=f"apiVersion: {version}\nkind: MPIJob\nmetadata: {{name: a}}\n")
        assert done.returncode == exits.EXIT_UNUSABLE
        assert f"run `{command.replace('FILE', '-')}` first" in done.stderr


def test_the_gpu_example_finds_what_the_guide_says() -> None:
    assert gpu_example_problems(GUIDE.read_text()) == []


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
    assert documented["completion"] == {exits.EXIT_OK, exits.EXIT_UNUSABLE}
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
PLANTED_ADVICE = {
    "a version left out of the lint table": ("`v1`, `v2`: `mpijob", "`v1`: `mpijob"),
    "a version left out of the convert row": (
        "`kubeflow.org/v1alpha1`, `v1alpha2`, `v1` (",
        "`v1alpha2`, `v1` (",
    ),
    "another command": ("`mpijob convert FILE > new.yaml` (`render`", "`mpijob upgrade FILE` (`render`"),
}
PLANTED_GPU = {
    "a wrong count": ("finds three mistakes", "finds four mistakes"),
    "a rule lint does not find there": (
        "and, from the same arithmetic, `np-mismatch`",
        "`launcher-gpus-hidden`",
    ),
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


@pytest.mark.parametrize(("old", "new"), PLANTED_ADVICE.values(), ids=PLANTED_ADVICE.keys())
def test_a_planted_advice_contradiction_is_found(old: str, new: str) -> None:
    text = GUIDE.read_text()
    assert old in _section(text)
    assert old_version_problems(text.replace(old, new, 1)) != []


@pytest.mark.parametrize(("old", "new"), PLANTED_GPU.values(), ids=PLANTED_GPU.keys())
def test_a_planted_gpu_example_contradiction_is_found(old: str, new: str) -> None:
    text = GUIDE.read_text()
    assert text.count(old) == 1
    assert gpu_example_problems(text.replace(old, new)) != []
