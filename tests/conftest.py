"""Shared pytest setup, kept light (every test loads it): the ``--update-golden`` flag (and the golden files
made whole before it and shared again after it), default settings, the environment every local hook inherits,
and how xdist shares the folders out.

What only some folders need lives in their own conftest.py: the Metacontroller stand-in that ``kubectl
kustomize deploy/`` reads (tests/support/metacontroller_standin.py) in tests/docs, tests/packaging,
tests/e2e and tests/node; the cluster harnesses' ``ns`` fixture (tests/support/clusters.py) in tests/e2e and
tests/node. tests/packaging/test_suite_layout.py keeps this file free of tests.e2e.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from app.settings import Settings

# Test directories whose tests all run in one xdist worker, one after another (pytest_xdist_make_scheduler).
ONE_WORKER_SCOPES = ("tests/e2e/", "tests/mpi/", "tests/node/")
# Hooks the suite starts (in-process or as processes that inherit this) serve without caller authentication
# unless a test sets it up: tests/unit/server/test_auth.py, and tests/e2e and tests/node, which wire
# Metacontroller's credential as deploy/ does. Set here, on purpose, as a user running the hook locally must.
os.environ["MPI_OPERATOR_CALLER_AUTH"] = "off"


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


def _updates_goldens(config: pytest.Config) -> bool:
    """``--update-golden``, in the process that runs the session (under xdist the controller, no worker)."""
    return bool(config.getoption("--update-golden", default=False)) and not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """Under ``--update-golden``, every patched golden file becomes whole before any test (or xdist worker)
    starts, so each test rewrites whole files whatever order the tests run in (tests/support/golden_store.py).
    """
    if _updates_goldens(config):
        from tests.support import golden_store

        golden_store.expand()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """...and once every test has run, each shared golden file is patched onto its final base again."""
    if not _updates_goldens(session.config):
        return
    from tests.support import golden_store

    try:
        golden_store.compact()
    except golden_store.GoldenError as error:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"--update-golden left the goldens whole: {error}", red=True)


@pytest.fixture
def settings() -> Settings:
    return Settings()


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``-n``: every e2e test (tests/e2e) in one work unit, so one worker runs them all against one
    control plane while the others share the rest, test by test (like ``--dist load``). The MPI tests
    (tests/mpi) are one unit too: run beside each other on two cores, an MPICH rank's busy-polling
    MPI_Finalize sometimes outlasted the launcher's 60 s (seen in about half the runs with -n 2). The
    real-node tests (tests/node) are one unit as well: they share one node.

    Not ``xdist_group`` + ``--dist loadgroup``: with pytest 9, xdist 3.8's renaming of node ids has no effect.
    """
    if config.getoption("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class E2EInOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return next((scope for scope in ONE_WORKER_SCOPES if nodeid.startswith(scope)), nodeid)

    return E2EInOneWorker(config, log)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the e2e tests measured (``e2e_summary`` properties of tests/e2e).

    Here, not in tests/e2e/conftest.py: under xdist the controller loads only this conftest.
    """
    for status in ("passed", "failed"):
        for report in terminalreporter.getreports(status):
            for key, value in getattr(report, "user_properties", []):
                if key == "e2e_summary":
                    terminalreporter.write_line(f"e2e: {value}")
