"""What the cluster harnesses (tests/e2e, its gang module, tests/node) share: a fresh namespace per test
and the logs attached to a failed test's report (both in tests/conftest.py).

Each harness offers its cluster as the ``target`` fixture (tests/e2e/conftest.py, test_e2e_gang.py,
tests/node/conftest.py); the ``ns`` fixture makes the namespace on it.
"""

from __future__ import annotations

import re
import uuid
from typing import Protocol, runtime_checkable

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
