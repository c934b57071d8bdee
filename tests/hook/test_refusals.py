"""Each request the hook refuses is logged once, with its status and the reason the client got, not the body.

Against a real ``mpijob serve`` with a small body cap and read timeout: a malformed body (400, from the
endpoint), a body past the cap (413) and a body that never ends (408, both from the body guard).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import served

MARKER = "BODY-MARKER-must-not-be-logged"
CAP = 64 * 1024


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[served.Served]:
    settings = {
        "MPI_OPERATOR_MAX_BODY_BYTES": str(CAP),
        "MPI_OPERATOR_READ_TIMEOUT_SECONDS": "1",
        "MPI_OPERATOR_LOG_FORMAT": "json",
    }
    with served.serving(tmp_path_factory.mktemp("refusals") / "hook.log", settings) as server:
        yield server


def post(url: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def refusals(hook: served.Served) -> list[dict[str, object]]:
    """The ``refused`` lines of the hook's JSON log, after a probe's access line shows it caught up."""
    urllib.request.urlopen(f"{hook.url}/readyz", timeout=10).close()
    lines = [json.loads(line) for line in hook.log_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == "refused"]


@pytest.mark.parametrize(
    ("path", "body"),
    [("/sync", b'{"parent": "' + MARKER.encode() + b'"'), ("/customize", MARKER.encode())],
    ids=["sync", "customize"],
)
def test_a_malformed_request_is_logged_with_its_reason(hook: served.Served, path: str, body: bytes) -> None:
    before = len(refusals(hook))
    status, answer = post(hook.url + path, body)
    assert status == 400
    reason = json.loads(answer)["error"]
    logged = refusals(hook)[before:]
    assert [(r["hook"], r["status"], r["reason"], r["level"]) for r in logged] == [
        (path.lstrip("/"), 400, reason, "WARNING")
    ]
    assert MARKER not in hook.log_text()


def test_a_body_past_the_cap_is_logged_as_413(hook: served.Served) -> None:
    before = len(refusals(hook))
    status, answer = post(f"{hook.url}/sync", b'{"x": "' + MARKER.encode() * (CAP // 10) + b'"}')
    assert status == 413
    assert [(r["status"], r["reason"]) for r in refusals(hook)[before:]] == [
        (413, json.loads(answer)["error"])
    ]


def test_a_body_that_never_ends_is_logged_as_408(hook: served.Served) -> None:
    before = len(refusals(hook))
    with socket.create_connection(("127.0.0.1", hook.port), timeout=10) as sock:
        sock.sendall(b"POST /sync HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{" + MARKER.encode())
        answer = b""
        while chunk := sock.recv(4096):  # until the hook closes: headers and body may come apart
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408")
    reason = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    assert [(r["status"], r["reason"]) for r in refusals(hook)[before:]] == [(408, reason)]
    assert MARKER not in hook.log_text()


def test_a_good_request_logs_no_refusal(hook: served.Served) -> None:
    before = len(refusals(hook))
    request = (Path(served.ROOT) / "examples" / "requests" / "new-job" / "request.json").read_bytes()
    assert post(f"{hook.url}/sync", request)[0] == 200
    assert refusals(hook)[before:] == []
