"""A real ``mpijob serve`` on loopback for a test: started on a free port, waited for, stopped by its PID.

The environment is the test's without any ``MPI_OPERATOR_*``, plus ``MPI_OPERATOR_CALLER_AUTH=off`` unless
the test wants the hook as users get it (``authenticated``), plus the settings given; the server's output goes
to a log file the test can read (the hook logs to standard error).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.processes import free_port
from tests.support.paths import ROOT

VENV_BIN = Path(sys.executable).parent
# A loaded CI machine can take many seconds to import FastAPI; a slow start is not what is tested.
STARTUP_SECONDS = 60.0


@dataclass
class Served:
    url: str
    port: int
    log: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """SIGTERM to this server's PID (uvicorn shuts down cleanly), SIGKILL if it will not."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


# A local hook of the suite accepts any caller, on purpose (tests/conftest.py), unless a test says otherwise.
UNAUTHENTICATED = {"MPI_OPERATOR_CALLER_AUTH": "off"}


def without_hook_settings() -> dict[str, str]:
    """The test's environment without any ``MPI_OPERATOR_*`` setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}


def hook_env(settings: Mapping[str, str], *, authenticated: bool = False) -> dict[str, str]:
    env = without_hook_settings()
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env.update({} if authenticated else UNAUTHENTICATED)
    env.update(settings)
    return env


def start(
    log: Path,
    settings: Mapping[str, str] = {},  # read only
    argv: Sequence[str] | None = None,
    cwd: Path = ROOT,
    *,
    authenticated: bool = False,
) -> Served:
    """Start ``argv`` (default ``mpijob serve --host 127.0.0.1``) with ``--port`` set to a free port;
    ``authenticated``: with the hook's default caller authentication (the settings then name the token)."""
    port = free_port()
    command = [*(argv or ["mpijob", "serve", "--host", "127.0.0.1"]), "--port", str(port)]
    command[0] = str(VENV_BIN / "mpijob") if command[0] == "mpijob" else command[0]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=hook_env(settings, authenticated=authenticated),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    served = Served(f"http://127.0.0.1:{port}", port, log, process)
    try:
        _wait_healthy(served)
    except BaseException:
        served.stop()
        raise
    return served


@contextmanager
def serving(log: Path, settings: Mapping[str, str] = {}, *, authenticated: bool = False) -> Iterator[Served]:
    served = start(log, settings, authenticated=authenticated)
    try:
        yield served
    finally:
        served.stop()


def _wait_healthy(served: Served) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise AssertionError(
                f"mpijob serve exited with {served.process.returncode}:\n{served.log_text()}"
            )
        try:
            with urllib.request.urlopen(f"{served.url}/healthz", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"mpijob serve not healthy after {STARTUP_SECONDS}s:\n{served.log_text()}")
