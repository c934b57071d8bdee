"""What the cluster harnesses (tests/e2e, its gang module, tests/node) share: a fresh namespace per test
(the ``ns`` fixture) and the logs attached to a failed test's report (``pytest_runtest_makereport``).

Each harness offers its cluster as the ``target`` fixture (tests/e2e/conftest.py, test_e2e_gang.py,
tests/node/conftest.py) and takes both from here in its conftest.py: only the folders that talk to a
cluster load this module (and tests/e2e/kube.py with it).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import pytest

from tests.e2e.kube import Kube


class Target(Protocol):
    """A cluster a test runs against."""

    kube: Kube

    def namespace_problems(self, namespace: str) -> list[str]:
        """What went wrong in ``namespace`` during the test (checked before it is deleted)."""
        ...


@runtime_checkable
class Logged(Protocol):
    """A harness whose processes' logs explain a failed test."""

    LOGS: str  # the report section's title

    def log_tails(self) -> str: ...


def namespace_name(test: str) -> str:
    """The test's name made a DNS label, and a random suffix: a namespace no other test (or run) has."""
    short = re.sub(r"[^a-z0-9]+", "-", test.lower()).strip("-")[:40].strip("-")
    return f"{short}-{uuid.uuid4().hex[:5]}"


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
