"""Shared pytest setup: the ``--update-golden`` flag, a fixed clock and a fixed key seed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.kube.keys import SeededKeys
from app.settings import Settings

NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
TEST_SEED = b"mpi-operator-hook test seed, not a secret"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*/ from the current code (review the diff before committing)",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def keys() -> SeededKeys:
    return SeededKeys(TEST_SEED)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the e2e tests measured (``e2e_summary`` properties of tests/e2e).

    Here, not in tests/e2e/conftest.py: under xdist the controller loads only this conftest.
    """
    for status in ("passed", "failed"):
        for report in terminalreporter.getreports(status):
            for key, value in getattr(report, "user_properties", []):
                if key == "e2e_summary":
                    terminalreporter.write_line(f"e2e: {value}")
