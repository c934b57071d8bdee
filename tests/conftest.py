"""Shared pytest setup: the ``--update-golden`` flag, a fixed clock and a fixed key seed, and Metacontroller's
published manifests served locally to ``kubectl kustomize deploy/`` (tests/metacontroller_standin.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.kube.keys import SeededKeys
from app.settings import Settings
from tests import metacontroller_standin
from tests.clusters import Logged, Target, namespace_name
from tests.e2e.controlplane import metacontroller_crds, tarball_dir

NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
# Test directories whose tests all run in one xdist worker, one after another (pytest_xdist_make_scheduler).
ONE_WORKER_SCOPES = ("tests/e2e/", "tests/mpi/", "tests/node/")
TEST_SEED = b"mpi-operator-hook test seed, not a secret"
STANDIN_DIR = pytest.StashKey[Path]()
# Hooks the suite starts (in-process or as processes that inherit this) serve without caller authentication
# unless a test sets it up: tests/test_auth.py, and tests/e2e and tests/node, which wire Metacontroller's
# credential as deploy/ does. Set here, on purpose, as a user running the hook locally must.
os.environ["MPI_OPERATOR_CALLER_AUTH"] = "off"


def pytest_configure(config: pytest.Config) -> None:
    """deploy/ pulls Metacontroller's manifests from GitHub: serve them locally instead, with its real CRDs
    when the e2e binaries are here (the real-node quick start installs them from deploy/)."""
    workdir = Path(tempfile.mkdtemp(prefix="mpi-hook-metacontroller-standin-"))
    config.stash[STANDIN_DIR] = workdir
    # The binaries' directory without extracting the tarball (slow, and not every session needs it).
    given = os.environ.get("MPI_HOOK_E2E_BIN_DIR")
    crds = metacontroller_crds(Path(given) if given else tarball_dir())
    metacontroller_standin.install_in_environ(workdir, crds)


def pytest_unconfigure(config: pytest.Config) -> None:
    workdir = config.stash.get(STANDIN_DIR, None)
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


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


@pytest.fixture
def ns(target: Target, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test on the cluster it runs against (``target``), deleted afterwards without
    waiting; the test fails if the cluster saw something go wrong in it (``Target.namespace_problems``)."""
    name = namespace_name(request.node.name)
    target.kube.create(
        "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    problems = target.namespace_problems(name)
    target.kube.delete("namespaces", None, name)
    assert problems == [], f"what went wrong in namespace {name}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    """On a failed test that ran against a cluster, attach the tails of its processes' logs to the report."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    harnesses = {id(v): v for v in getattr(item, "funcargs", {}).values() if isinstance(v, Logged)}
    for harness in harnesses.values():
        report.sections.append((harness.LOGS, harness.log_tails()))
