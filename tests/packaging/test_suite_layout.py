"""The suite's layout (docs/testing.md, "Where a test goes"): tests sorted by what they test, harness apart.

- tests/ holds only the folders of the layout (and its shared data): a new folder is a decision made here.
- Where tests are sorted (tests/unit, hook, docs, packaging), every module is a test module, a conftest.py or
  an ``__init__.py``: harness modules live in tests/support, which holds no tests. tests/e2e, tests/node and
  tests/mpi are suites of their own and keep their harness beside their tests.
- tests/unit/<layer>/ names a part of ``app/`` (tests/unit/core/policies: ``app/core/policies``).
- The root conftest.py, which every test loads, imports nothing of the cluster suites, directly or not.
- The fast folders (all but the cluster suites) are the ones CI runs again under the oldest Python, and the
  cluster suites are the ones xdist keeps in one worker each.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ONE_WORKER_SCOPES
from tests.support.paths import ROOT, TESTS

SORTED = ("unit", "hook", "docs", "packaging")  # tests sorted by what they test
OWN_SUITES = ("e2e", "node", "mpi")  # a cluster, a real node, real MPI: each with its own harness
SUPPORT = "support"
DATA = ("golden", "fixtures", "manifests", "schemas")
TOP = {"__init__.py", "conftest.py", SUPPORT, *SORTED, *OWN_SUITES, *DATA}
NOT_TESTS = {"__init__.py", "conftest.py"}


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith((".", "__pycache__")))


def misplaced(tests: Path) -> list[str]:
    """What breaks the layout under ``tests``, as paths relative to it (empty when nothing does)."""
    wrong = [f"{p.name} (not a folder of the layout)" for p in _entries(tests) if p.name not in TOP]
    for name in SORTED:
        for path in sorted((tests / name).rglob("*.py")):
            if not (path.name.startswith("test_") or path.name in NOT_TESTS):
                wrong.append(f"{path.relative_to(tests)} (a harness module among tests: tests/support)")
        for folder in [tests / name, *(p for p in (tests / name).rglob("*") if p.is_dir())]:
            if folder.name != "__pycache__" and not (folder / "__init__.py").is_file():
                wrong.append(f"{folder.relative_to(tests)} (no __init__.py)")
    wrong += [
        f"{p.relative_to(tests)} (a test in tests/support)"
        for p in sorted((tests / SUPPORT).rglob("*.py"))
        if p.name.startswith("test_") or p.name == "conftest.py"
    ]
    return wrong


def test_every_module_is_where_the_layout_puts_it() -> None:
    assert misplaced(TESTS) == []


def test_a_harness_module_among_tests_or_a_stray_folder_is_found(tmp_path: Path) -> None:
    for name in (*TOP, "unit/core"):
        if "." not in name:
            (tmp_path / name).mkdir(parents=True, exist_ok=True)
            (tmp_path / name / "__init__.py").touch()
    assert misplaced(tmp_path) == []
    (tmp_path / "unit" / "core" / "builders.py").touch()
    (tmp_path / "support" / "test_builders.py").touch()
    (tmp_path / "unit" / "kube").mkdir()
    (tmp_path / "test_loose.py").touch()
    assert misplaced(tmp_path) == [
        "test_loose.py (not a folder of the layout)",
        "unit/core/builders.py (a harness module among tests: tests/support)",
        "unit/kube (no __init__.py)",
        "support/test_builders.py (a test in tests/support)",
    ]


def test_unit_folders_name_parts_of_the_app() -> None:
    unit = TESTS / "unit"
    folders = [p.relative_to(unit) for p in unit.rglob("*") if p.is_dir() and p.name != "__pycache__"]
    assert folders, "no tests/unit/<layer> folder"
    app = ROOT / "app"
    assert [
        str(f) for f in folders if not (app / f).is_dir() and not (app / f).with_suffix(".py").is_file()
    ] == []


def test_the_root_conftest_loads_no_cluster_suite() -> None:
    """Imported as pytest imports it, in a fresh interpreter: whatever it pulls in, directly or not."""
    probe = "import sys, tests.conftest; print(*sorted(m for m in sys.modules if m.startswith('tests')))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    loaded = done.stdout.split()
    assert "tests.conftest" in loaded
    assert [m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in OWN_SUITES] == []


def test_the_fast_folders_are_the_ones_ci_runs_again_and_the_cluster_suites_keep_one_worker() -> None:
    """.ci/oldest-python names the folders it runs: a new folder of tests cannot be left out of it."""
    script = (ROOT / ".ci" / "oldest-python").read_text()
    words = shlex.split(script[script.index("exec .venv-oldest/bin/python -m pytest") :], comments=True)
    assert sorted(w.removeprefix("tests/").rstrip("/") for w in words if w.startswith("tests/")) == sorted(
        SORTED
    )
    assert sorted(scope.removeprefix("tests/").rstrip("/") for scope in ONE_WORKER_SCOPES) == sorted(
        OWN_SUITES
    )
