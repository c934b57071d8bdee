"""``mpijob serve``'s arguments and exit codes, run as the image runs it: a real process, a real socket, curl.

Bad arguments stop it before anything starts (exit 2, the flag named); an address it cannot listen on is
exit 4 after uvicorn's own log line; a host given by name serves.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from app.cli.exits import EXIT_CANNOT_SERVE, EXIT_UNUSABLE
from tests.support.served import UNAUTHENTICATED, without_hook_settings
from tests.unit.cli.test_cli import MPIJOB, ROOT, mpijob


def _environment() -> dict[str, str]:
    return {**without_hook_settings(), **UNAUTHENTICATED}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "99999"], "argument --port: 99999 is not a TCP port (1-65535)"),
        (["--port", "0"], "argument --port: 0 is not a TCP port (1-65535)"),
        (["--port", "-1"], "argument --port: -1 is not a TCP port (1-65535)"),
        (["--port", "http"], "argument --port: 'http' is not a whole number"),
        (
            ["--host", "no-such-host.invalid"],
            "argument --host: 'no-such-host.invalid' is neither an IP address nor a name that resolves",
        ),
        (
            ["--host", "300.1.1.1"],
            "argument --host: '300.1.1.1' is neither an IP address nor a name that resolves",
        ),
        (["--workers", "0"], "argument --workers: 0 is not at least 1"),
    ],
    ids=[
        "port-too-large",
        "port-zero",
        "port-negative",
        "port-not-a-number",
        "host-unknown",
        "host-bad-ip",
        "no-workers",
    ],
)
def test_bad_arguments_stop_serve_before_it_starts(args: list[str], message: str) -> None:
    done = mpijob("serve", *args)
    assert done.returncode == EXIT_UNUSABLE
    assert done.stderr.splitlines()[-1] == f"mpijob serve: {message}: see mpijob serve --help"
    assert "Uvicorn running" not in done.stderr and "Started server" not in done.stderr


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_an_address_in_use_is_exit_4_with_why(taken_port: int) -> None:
    done = mpijob("serve", "--host", "127.0.0.1", "--port", str(taken_port), env=UNAUTHENTICATED)
    assert done.returncode == EXIT_CANNOT_SERVE
    assert "address already in use" in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"mpijob serve: cannot listen on 127.0.0.1:{taken_port} (the log above says why): stop what holds the"
        " address, or choose another --host/--port"
    )


def test_a_metrics_port_in_use_is_exit_4_too(taken_port: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    done = mpijob(
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(free),
        env={"MPI_OPERATOR_METRICS_PORT": str(taken_port), **UNAUTHENTICATED},
    )
    assert done.returncode == EXIT_CANNOT_SERVE
    assert done.stderr.splitlines()[-1].startswith(f"mpijob serve: cannot listen on 127.0.0.1:{taken_port}")


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_host_given_by_name_serves() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with subprocess.Popen(
        [str(MPIJOB), "serve", "--host", "localhost", "--port", str(port)],
        cwd=ROOT,
        env=_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as server:
        try:
            deadline = time.monotonic() + 30
            answer = ""
            while time.monotonic() < deadline and answer != "200":
                time.sleep(0.2)
                curl = [
                    "curl",
                    "-s",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    f"http://localhost:{port}/healthz",
                ]
                answer = subprocess.run(curl, capture_output=True, text=True, check=False, timeout=10).stdout
            assert answer == "200"
        finally:
            server.terminate()
            server.wait(timeout=30)


def test_serve_help_shows_the_ranges() -> None:
    done = mpijob("serve", "--help")
    assert "1-65535" in done.stdout
