"""Fixtures of the real MPI suite: each build's examples/hello compiled once, and the build to run.

``build`` runs a test once per installed build; ``@pytest.mark.parametrize("build", [...], indirect=True)``
narrows it to some. A build that is not installed skips, as does everything without root (in CI that fails).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mpi.builds import BUILDS, PREFIX, Build


def _bed_missing() -> str | None:
    if os.geteuid() != 0:
        return "the MPI test bed needs root (network, mount and PID namespaces)"
    for tool in ("ip", "unshare", "setpriv", "ssh-keygen", "/usr/sbin/sshd", "ssh"):
        if shutil.which(tool) is None:
            return f"the MPI test bed needs {tool}"
    return None


@pytest.fixture(scope="session")
def hello_dir() -> Iterator[Path]:
    """examples/hello compiled per build, in a folder every user of the "pods" can read (not /tmp: the pods
    have their own)."""
    PREFIX.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"hello-{os.getpid()}-", dir=PREFIX))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=sorted(BUILDS))
def build(request: pytest.FixtureRequest, hello_dir: Path) -> Build:
    b = BUILDS[request.param]
    reason = _bed_missing() or b.missing()
    if reason:
        if os.environ.get("CI") and _bed_missing():
            pytest.fail(reason)
        pytest.skip(reason)
    binary = hello_dir / b.name
    if not binary.exists():
        b.compile(binary)
    return b
