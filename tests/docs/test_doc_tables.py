"""The docs' reference tables against what they describe, so that a page and the code cannot disagree.

docs/operations.md carries the hook's settings (``app/settings/``), its metrics (the registry ``/metrics``
serves) and Metacontroller's flags (``deploy/components/metacontroller/``); docs/compatibility.md carries the
differences from the Go operator. Each table is parsed from its page and compared with the code or the
manifest: a setting, metric or flag without its row fails, as does a row for one that does not exist or a
value that changed. Each fact has its row on one page only, the pages have one index (the README's), and links
to a heading point at one that exists.
Every check returns its problems, so the tests at the end can show it catches a planted contradiction.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.server.main import create_app
from app.settings import Settings, answer_setting_defaults
from tests.docs.test_docs import PAGES
from tests.packaging.test_manifests import kustomize
from tests.support.paths import ROOT

DOCS = ROOT / "docs"
OPERATIONS = DOCS / "operations.md"
COMPATIBILITY = DOCS / "compatibility.md"
REQUESTS = ROOT / "examples" / "requests" / "README.md"
# Metacontroller's published StatefulSet, as the tests serve it instead of GitHub (metacontroller_standin).
PUBLISHED_METACONTROLLER = ROOT / "tests" / "manifests" / "metacontroller-production" / "metacontroller.yaml"
UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


@dataclass(frozen=True)
class Table:
    page: str
    header: list[str]
    rows: list[list[str]]


def cells(line: str) -> list[str]:
    """A table line's cells; ``\\|`` is a pipe inside a cell."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def tables(text: str, page: str = "") -> list[Table]:
    """Every Markdown table of a page outside code fences: header, then rows (the ``|---|`` line skipped)."""
    found: list[Table] = []
    current: list[list[str]] = []
    fenced = False
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.lstrip().startswith("|"):
            current.append(cells(line))
            continue
        if len(current) >= 2:
            found.append(Table(page, current[0], current[2:]))
        current = []
    return found


def the_table(text: str, first_column: str) -> Table:
    """The one table of a page whose first column header starts with ``first_column``."""
    matches = [t for t in tables(text) if t.header[0].startswith(first_column)]
    assert len(matches) == 1, f"expected one table headed {first_column!r}, found {len(matches)}"
    return matches[0]


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def page_texts() -> dict[str, str]:
    return {str(page.relative_to(ROOT)): page.read_text() for page in PAGES if page.is_file()}


# --- settings --------------------------------------------------------------------------------------------


def setting_variables() -> dict[str, Any]:
    """Every ``MPI_OPERATOR_*`` variable ``Settings`` reads, with its default as a page would state it."""
    prefix = Settings.model_config.get("env_prefix", "")
    found = {}
    for name, field in Settings.model_fields.items():
        default = field.default
        found[f"{prefix}{name}".upper()] = str(default) if isinstance(default, Path) else default
    return found


def documented_default(cell: str) -> Any:
    """The value a default cell states before any comment: ``empty`` is "", ``unset`` is None, a code span
    is its text, a number may carry a binary unit (``160 MiB``)."""
    if cell.startswith("empty"):
        return ""
    if cell.startswith("unset"):
        return None
    if match := re.match(r"`([^`]*)`", cell):
        return match.group(1)
    if match := re.match(r"(\d[\d,]*(?:\.\d+)?)\s*(KiB|MiB|GiB)?(?![\w.])", cell):
        return float(match.group(1).replace(",", "")) * UNITS.get(match.group(2) or "", 1)
    raise ValueError(f"cannot read a default from {cell!r}")


def same_default(documented: Any, real: Any) -> bool:
    if isinstance(real, int | float) and not isinstance(real, bool):
        return isinstance(documented, float) and documented == float(real)
    return bool(documented == real)


def settings_problems(text: str) -> list[str]:
    """Rows of the settings table against ``Settings``: each variable once, with its real default."""
    table = the_table(text, "variable")
    real = setting_variables()
    problems, seen = [], []
    for row in table.rows:
        (variable, *_) = code_spans(row[0]) or [row[0]]
        seen.append(variable)
        if variable not in real:
            problems.append(f"{variable}: no such setting in app/settings")
            continue
        try:
            documented = documented_default(row[1])
        except ValueError as err:
            problems.append(f"{variable}: {err}")
            continue
        if not same_default(documented, real[variable]):
            problems.append(f"{variable}: the page says {row[1]!r}, the default is {real[variable]!r}")
    problems += [f"{v}: no row" for v in sorted(set(real) - set(seen))]
    problems += [f"{v}: {seen.count(v)} rows" for v in sorted(set(seen)) if seen.count(v) > 1]
    return problems


# --- metrics ---------------------------------------------------------------------------------------------


def exported_metrics() -> set[str]:
    """The metric families the hook's ``/metrics`` serves, as users query them (counters with ``_total``)."""
    registry = create_app(Settings(events="off")).hook.metrics.registry
    return {f"{m.name}_total" if m.type == "counter" else m.name for m in registry.collect()}


def metrics_problems(text: str, exported: set[str]) -> list[str]:
    """Rows of the metrics table against the exported names; ``process_*`` stands for a prefix."""
    table = the_table(text, "metric")
    named = [name for row in table.rows for name in code_spans(row[0])]
    prefixes = [name.removesuffix("*") for name in named if name.endswith("*")]
    exact = [name for name in named if not name.endswith("*")]
    problems = [f"{name}: not exported" for name in exact if name not in exported]
    problems += [f"{p}*: nothing exported" for p in prefixes if not any(m.startswith(p) for m in exported)]
    problems += [f"{name}: {exact.count(name)} rows" for name in sorted(set(exact)) if exact.count(name) > 1]
    problems += [
        f"{name}: exported, no row"
        for name in sorted(exported)
        if name not in exact and not any(name.startswith(p) for p in prefixes)
    ]
    return problems


# --- the record layout ----------------------------------------------------------------------------------


def layout_settings(text: str) -> set[str]:
    """The settings the record layout (examples/requests/README.md) says a ``case.json`` keeps."""
    layout = text[text.index("## The layout") :]
    bullet = layout[layout.index("- `case.json`") :].split("\n- ", 1)[0].split("\n\n", 1)[0]
    return set(re.findall(r"`(MPI_OPERATOR_\w+)`", bullet))


# --- Metacontroller's flags ------------------------------------------------------------------------------


def container_flags(statefulset: dict[str, Any]) -> dict[str, str]:
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    return dict(arg.split("=", 1) for arg in container["args"])


def flags_problems(text: str, shipped: dict[str, str], published: dict[str, str]) -> list[str]:
    """Rows of the flag table against the flags ``deploy/`` gives Metacontroller (``shipped``) and those its
    own manifests set (``published``; a flag they leave out must say ``unset``)."""
    table = the_table(text, "flag")
    problems, seen = [], []
    for row in table.rows:
        (flag, _, value) = (code_spans(row[0]) or [row[0]])[0].partition("=")
        seen.append(flag)
        if flag not in shipped:
            problems.append(f"{flag}: deploy/ does not set it")
        elif value != shipped[flag]:
            problems.append(f"{flag}: the page says {value!r}, deploy/ sets {shipped[flag]!r}")
        theirs = (code_spans(row[1]) or [""])[0] if not row[1].startswith("unset") else None
        if theirs != published.get(flag):
            problems.append(
                f"{flag}: the page says its manifests set {row[1]!r}, they set {published.get(flag)!r}"
            )
    problems += [f"{flag}: set by deploy/, no row" for flag in sorted(set(shipped) - set(seen))]
    problems += [f"{f}: {seen.count(f)} rows" for f in sorted(set(seen)) if seen.count(f) > 1]
    return problems


# --- one copy of each fact -------------------------------------------------------------------------------


def row_pages(texts: dict[str, str], names: set[str]) -> dict[str, list[str]]:
    """For each name, the pages with a table row about it: its first cell opens with code naming it (a
    decision that mentions a setting in passing is not its row)."""
    found: dict[str, list[str]] = {name: [] for name in names}
    for page, text in texts.items():
        for table in tables(text, page):
            for row in table.rows:
                for name in set(code_spans(row[0]) if row[0].startswith("`") else []) & names:
                    found[name].append(page)
    return found


def said_more_than_once(texts: dict[str, str], names: set[str]) -> list[str]:
    return [f"{name}: rows in {pages}" for name, pages in row_pages(texts, names).items() if len(pages) > 1]


def compatibility_rows_elsewhere(texts: dict[str, str]) -> list[str]:
    """The compatibility table's rows (by their first cell) anywhere but docs/compatibility.md."""
    home = str(COMPATIBILITY.relative_to(ROOT))
    behaviours = {row[0] for row in the_table(texts[home], "behaviour").rows}
    return [
        f"{page}: {row[0]}"
        for page, text in texts.items()
        if page != home
        for table in tables(text, page)
        for row in table.rows
        if row[0] in behaviours
    ]


def index_tables(texts: dict[str, str]) -> list[tuple[str, set[str]]]:
    """Each table that lists pages (its first column links to three or more of them): the page it is on and
    the pages it lists."""
    found = []
    for page, text in texts.items():
        for table in tables(text, page):
            listed = {
                str(((ROOT / page).parent / target).resolve().relative_to(ROOT))
                for row in table.rows
                for target in re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", row[0])
            }
            if len(listed & set(texts)) >= 3:
                found.append((page, listed))
    return found


def exit_code_tables(texts: dict[str, str]) -> list[str]:
    """The pages with a table of exit codes (a header cell naming them); the user guide's command table is
    the one copy (tests/docs/test_cli_docs.py checks it against ``app/cli/exits.py``)."""
    return [
        page
        for page, text in texts.items()
        for table in tables(text, page)
        if any("exit code" in cell.lower() for cell in table.header)
    ]


# A measured ratio or share (a number then a multiplication sign, an "x" or "%": four times, 0.10x, ~40%),
# not a case size (50 by 64 workers, written with the sign between two numbers).
TIMES = "\N{MULTIPLICATION SIGN}"
MEASURED = re.compile(rf"\d(?:{TIMES}|x\b|%)(?!\s*\d)")


def quoted_measurements(texts: dict[str, str]) -> list[str]:
    """Measured figures on the pages under docs/: bench/README.md's tables hold them (the README's front door
    quotes its headline, with the link), the pages give guidance and link to them."""
    return [
        f"{page}:{text.count(chr(10), 0, match.start()) + 1}: {match.group()}"
        for page, text in texts.items()
        if page.startswith("docs/")
        for match in MEASURED.finditer(re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL))
    ]


# --- links to headings -----------------------------------------------------------------------------------


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    body = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return {anchor(h) for h in re.findall(r"^#+ (.+)$", body, re.MULTILINE)}


def broken_anchors() -> list[str]:
    broken = []
    for page in PAGES:
        if not page.is_file():
            continue
        for target, fragment in re.findall(r"\]\(([^)#:\s]*)#([^)\s]+)\)", page.read_text()):
            linked = (page.parent / target) if target else page
            if linked.suffix == ".md" and linked.is_file() and fragment not in anchors(linked.read_text()):
                broken.append(f"{page.relative_to(ROOT)} -> {target}#{fragment}")
    return broken


# --- the tests -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped_flags() -> dict[str, str]:
    """Metacontroller's flags as ``kubectl kustomize deploy/metacontroller/`` builds its StatefulSet."""
    (statefulset,) = [o for o in kustomize("deploy/metacontroller") if o["kind"] == "StatefulSet"]
    return container_flags(statefulset)


@pytest.fixture(scope="module")
def published_flags() -> dict[str, str]:
    return container_flags(yaml.safe_load(PUBLISHED_METACONTROLLER.read_text()))


def test_the_settings_table_is_app_settings() -> None:
    assert settings_problems(OPERATIONS.read_text()) == []


def test_the_metrics_table_is_what_metrics_serves() -> None:
    assert metrics_problems(OPERATIONS.read_text(), exported_metrics()) == []


def test_the_record_layout_names_the_settings_answers_depend_on() -> None:
    assert layout_settings(REQUESTS.read_text()) == set(answer_setting_defaults())


def test_the_layout_check_catches_a_setting_left_out() -> None:
    planted = _plant(REQUESTS.read_text(), "`MPI_OPERATOR_CLUSTER_DOMAIN`, ", "")
    assert layout_settings(planted) == set(answer_setting_defaults()) - {"MPI_OPERATOR_CLUSTER_DOMAIN"}


def test_the_flag_table_is_what_deploy_gives_metacontroller(
    shipped_flags: dict[str, str], published_flags: dict[str, str]
) -> None:
    assert flags_problems(OPERATIONS.read_text(), shipped_flags, published_flags) == []


def test_each_setting_metric_and_flag_has_its_row_on_one_page(shipped_flags: dict[str, str]) -> None:
    names = set(setting_variables()) | exported_metrics() | {f"{k}={v}" for k, v in shipped_flags.items()}
    assert said_more_than_once(page_texts(), names) == []


def test_the_compatibility_rows_are_only_on_the_compatibility_page() -> None:
    assert compatibility_rows_elsewhere(page_texts()) == []


def test_the_pages_have_one_index_the_readmes_listing_every_page() -> None:
    texts = page_texts()
    [(page, listed)] = index_tables(texts)
    assert page == "README.md"
    assert set(texts) - {"README.md", "examples/requests/README.md"} <= listed


def test_exit_codes_are_tabled_only_in_the_user_guide() -> None:
    assert exit_code_tables(page_texts()) == ["docs/user-guide.md"]


def test_the_readmes_python_is_the_one_pyproject_requires() -> None:
    readme = (ROOT / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| Python |")]
    (version,) = re.findall(r"^\| Python \| (\d+\.\d+) or newer\b", row)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == f">={version}"


def test_the_docs_quote_no_benchmark_figure() -> None:
    assert quoted_measurements(page_texts()) == []


def test_links_to_headings_find_them() -> None:
    assert broken_anchors() == []


# --- the checks catch a planted contradiction ------------------------------------------------------------


def _plant(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"cannot plant: {old!r} is not in the page once"
    return text.replace(old, new)


SETTINGS_PLANTS = {
    "a changed default": (
        "| `MPI_OPERATOR_READ_TIMEOUT_SECONDS` | 20 |",
        "| `MPI_OPERATOR_READ_TIMEOUT_SECONDS` | 30 |",
    ),
    "a changed size": (
        "| `MPI_OPERATOR_MAX_BODY_BYTES` | 160 MiB |",
        "| `MPI_OPERATOR_MAX_BODY_BYTES` | 16 MiB |",
    ),
    "a setting that does not exist": ("| `MPI_OPERATOR_LOG_LEVEL` |", "| `MPI_OPERATOR_LOG_COLOUR` |"),
    "a row twice": ("| `MPI_OPERATOR_LOG_FORMAT` |", "| `MPI_OPERATOR_LOG_LEVEL` |"),
}


@pytest.mark.parametrize(("old", "new"), SETTINGS_PLANTS.values(), ids=SETTINGS_PLANTS.keys())
def test_the_settings_check_catches(old: str, new: str) -> None:
    assert settings_problems(_plant(OPERATIONS.read_text(), old, new)) != []


def test_the_metrics_check_catches_a_missing_and_an_invented_metric() -> None:
    text = OPERATIONS.read_text()
    exported = exported_metrics()
    invented = _plant(text, "`mpi_operator_hook_parent_memo_entries`", "`mpi_operator_hook_parent_memo_size`")
    assert metrics_problems(invented, exported) == [
        "mpi_operator_hook_parent_memo_size: not exported",
        "mpi_operator_hook_parent_memo_entries: exported, no row",
    ]
    assert metrics_problems(text, exported | {"mpi_operator_hook_new_total"}) == [
        "mpi_operator_hook_new_total: exported, no row"
    ]


def test_the_flag_check_catches_a_changed_value_and_a_new_flag(
    shipped_flags: dict[str, str], published_flags: dict[str, str]
) -> None:
    changed = _plant(OPERATIONS.read_text(), "`--client-go-qps=50`", "`--client-go-qps=20`")
    assert flags_problems(changed, shipped_flags, published_flags) == [
        "--client-go-qps: the page says '20', deploy/ sets '50'"
    ]
    more = {**shipped_flags, "--workers": "10"}
    assert flags_problems(OPERATIONS.read_text(), more, published_flags) == [
        "--workers: set by deploy/, no row"
    ]
    theirs = {**published_flags, "--zap-log-level": "5"}
    assert len(flags_problems(OPERATIONS.read_text(), shipped_flags, theirs)) == 1


def test_the_one_copy_checks_catch_a_second_copy() -> None:
    texts = page_texts()
    settings_row = next(
        line for line in texts["docs/operations.md"].splitlines() if "`MPI_OPERATOR_EVENTS` |" in line
    )
    compat_row = next(
        line for line in texts["docs/compatibility.md"].splitlines() if line.startswith("| evicted worker |")
    )
    copied = {
        **texts,
        "README.md": f"{texts['README.md']}\n| variable | default |\n|---|---|\n{settings_row}\n",
    }
    assert said_more_than_once(copied, set(setting_variables())) == [
        "MPI_OPERATOR_EVENTS: rows in ['README.md', 'docs/operations.md']"
    ]
    copied = {
        **texts,
        "docs/user-guide.md": f"{texts['docs/user-guide.md']}\n| a | b |\n|---|---|\n{compat_row}\n",
    }
    assert compatibility_rows_elsewhere(copied) == ["docs/user-guide.md: evicted worker"]


def test_the_index_check_catches_a_second_index() -> None:
    texts = page_texts()
    readme = texts["README.md"]
    index = readme[readme.index("| page | for |") :].split("\n\n", 1)[0].replace("](docs/", "](")
    copied = {**texts, "docs/README.md": f"{texts['docs/README.md']}\n{index}\n"}
    assert [page for page, _ in index_tables(copied)] == ["README.md", "docs/README.md"]


def test_the_exit_code_check_catches_a_second_table() -> None:
    texts = page_texts()
    table = "| exit code | means |\n|---|---|\n| 0 | nothing is wrong |\n"
    copied = {**texts, "docs/troubleshooting.md": f"{texts['docs/troubleshooting.md']}\n{table}"}
    assert exit_code_tables(copied) == ["docs/troubleshooting.md", "docs/user-guide.md"]


def test_the_figure_check_catches_a_quoted_ratio() -> None:
    texts = page_texts()
    quoted_line = f"~40% less CPU, 2-4{TIMES} the Go operator's, 50 {TIMES} 64 workers\n"
    quoted = {**texts, "docs/operations.md": f"{texts['docs/operations.md']}\n{quoted_line}"}
    assert [found.split(": ")[1] for found in quoted_measurements(quoted)] == ["0%", f"4{TIMES}"]
