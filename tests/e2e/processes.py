"""Child processes the e2e run starts, tracked by PID so that exactly those (and nothing else) are stopped.

Every process gets its own session (``start_new_session``) and a log file; stopping sends SIGTERM to that PID,
waits, then SIGKILL. ``Processes.stop_all`` runs in reverse start order and also from ``atexit``, so a failed
start-up or an interrupted run leaves nothing behind; on Linux each child also gets SIGTERM should the test
process itself be killed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

STOP_SECONDS = 10.0
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the test process dies, even by SIGKILL. The kernel
    sends it when the *thread* that started the child exits: start long-lived processes from a thread that
    lives as long as they should (the main thread), never from a pool's worker."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_ISSUED: set[int] = set()  # never hand out one port twice in a session


def free_port() -> int:
    """A loopback TCP port nothing uses right now, below the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` is also what it picks as the source port of outgoing
    connections, so between this call and the server binding it, any client on the machine (another
    test's) could take it: etcd once failed with "address already in use" that way.
    """
    lowest = 32768
    with contextlib.suppress(OSError, ValueError):
        lowest = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    start, stop = _worker_share(max(1024, lowest - 12000), lowest)
    for _ in range(100):
        port = random.randrange(start, stop)
        if port in _ISSUED:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            _ISSUED.add(port)
            return port
    raise RuntimeError("no free loopback port below the ephemeral range")


def _worker_share(start: int, stop: int) -> tuple[int, int]:
    """This pytest-xdist worker's own slice of ``[start, stop)``: a port checked free here cannot be taken
    by another worker's server before ours binds it (``_ISSUED`` is one worker's memory only)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not worker.startswith("gw") or not worker[2:].isdigit() or not count.isdigit() or int(count) < 2:
        return start, stop
    size = (stop - start) // int(count)
    first = start + int(worker[2:]) % int(count) * size
    return first, first + size


@dataclass
class Started:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop this PID: ``sig`` first, SIGKILL if it is still there after STOP_SECONDS."""
        if self.process.poll() is not None:
            return
        try:
            os.kill(self.process.pid, sig)
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_SECONDS)
        except ProcessLookupError:
            pass


class Processes:
    """The processes this run started, in start order."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.started: list[Started] = []
        atexit.register(self.stop_all)

    def start(
        self, name: str, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> Started:
        log = self.logdir / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        started = Started(name, process, log)
        self.started.append(started)
        return started

    def stop(self, started: Started, sig: int = signal.SIGTERM) -> None:
        started.stop(sig)
        if started in self.started:
            self.started.remove(started)

    def stop_all(self) -> None:
        for started in reversed(self.started):
            started.stop()
        self.started.clear()


def wait_until_ready(started: Started, probe: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``probe`` until it is true; fail with the process's log tail if it exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if started.process.poll() is not None:
            raise RuntimeError(f"{what} exited with {started.process.returncode}:\n{started.tail()}")
        if probe():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s:\n{started.tail()}")


def http_ok(url: str, context: ssl.SSLContext | None = None) -> Callable[[], bool]:
    """A probe: GET ``url`` answers 200 (any error is "not yet")."""

    def probe() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                return bool(response.status == 200)
        except (OSError, ValueError):
            return False

    return probe
