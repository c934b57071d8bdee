"""The core stays pure: the decision code imports no web framework, metrics library or I/O helpers.

``app/api``, ``app/core`` and ``app/children`` are what ``sync`` is made of; only ``app/main.py``,
``app/cli.py`` and ``app/metrics.py`` may touch FastAPI, uvicorn, prometheus_client or the clock.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"
PURE = sorted(p for layer in ("api", "core", "children") for p in (APP / layer).glob("*.py"))
FORBIDDEN = {
    "fastapi",
    "starlette",
    "uvicorn",
    "prometheus_client",
    "logging",
    "time",
    "random",
    "os",
    "app.main",
    "app.metrics",
    "app.cli",
}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", PURE, ids=[str(p.relative_to(APP)) for p in PURE])
def test_pure_layers_import_no_io(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m in FORBIDDEN or m.split(".")[0] in FORBIDDEN}
    assert bad == set(), f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", PURE, ids=[str(p.relative_to(APP)) for p in PURE])
def test_pure_layers_do_not_read_the_clock(path: Path) -> None:
    source = path.read_text()
    assert "datetime.now(" not in source and "utcnow(" not in source
