"""What the hostile-client suites share: a real ``mpijob serve`` as users run it (the caller check on), the
probes Metacontroller and the kubelet would send during an attack, and raw-socket helpers."""

from __future__ import annotations

import http.client
import re
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import served
from tests.support.paths import ROOT

WIRE = (ROOT / "tests" / "fixtures" / "wire" / "sync-request-02-running-all-children-exist.json").read_bytes()
TOKEN = "hostile-suite-caller-token-0123456789abcdef"
# The Deployment's memory limit is 768 Mi; the hook idles near 90 MB. Every attack must stay far below.
RSS_BOUND_BYTES = 400 * 1024 * 1024
HEADER_TIMEOUT = 2.0
READ_TIMEOUT = 2.0
# The deadlines of a hook the suites attack: short, so a test waits them out in seconds.
SHORT_TIMEOUTS = {
    "MPI_OPERATOR_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT),
    "MPI_OPERATOR_READ_TIMEOUT_SECONDS": str(READ_TIMEOUT),
}


def allow_sockets(count: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(count, hard), hard))


def serving(factory: pytest.TempPathFactory, name: str, settings: dict[str, str]) -> Iterator[served.Served]:
    """A real ``mpijob serve`` as users run it (the caller check on), with these settings besides."""
    workdir = factory.mktemp(name)
    token = workdir / "token"
    token.write_text(TOKEN)
    defaults = {"MPI_OPERATOR_CALLER_TOKEN_FILE": str(token), "MPI_OPERATOR_EVENTS": "off"}
    with served.serving(workdir / "hook.log", defaults | settings, authenticated=True) as server:
        yield server


def healthz_seconds(hook: served.Served, timeout: float = 5.0) -> float:
    """How long ``GET /healthz`` took on a new connection, as the kubelet asks (it must answer 200)."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", hook.port, timeout=timeout)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        assert response.status == 200, response.status
        response.read()
    finally:
        connection.close()
    return time.monotonic() - started


def sync_status(hook: served.Served, body: bytes = WIRE, timeout: float = 10.0) -> int:
    """Status of one authenticated ``POST /sync`` on a new connection, as Metacontroller sends it."""
    connection = http.client.HTTPConnection("127.0.0.1", hook.port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        connection.request("POST", "/sync", body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def assert_serving(hook: served.Served) -> None:
    """What must hold during and after every attack."""
    assert healthz_seconds(hook) < 1.0
    assert sync_status(hook) == 200
    assert rss_bytes(hook) < RSS_BOUND_BYTES


def rss_bytes(hook: served.Served) -> int:
    status = Path(f"/proc/{hook.process.pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


def metric(hook: served.Served, name: str) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", hook.port, timeout=5)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def connect(hook: served.Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", hook.port))


def read_answer(sock: socket.socket, timeout: float) -> bytes:
    """What the hook sent before closing ``sock`` (b"" if it closed without a word)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data
