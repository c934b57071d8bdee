"""Only a caller with the hook's token is answered: parsing, the token file as it rotates, the 401 the hook
gives everyone else (over ASGI, with hypothesis over headers), and the same through real uvicorn and curl.

The other tests serve without authentication on purpose (tests/conftest.py); these turn it on as deploy/ does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cluster.tokens import TOKEN_FILE_BYTES, read_token
from app.cluster.untrusted import Hostile
from app.kube.keys import SeededKeys
from app.server.auth import MAX_HEADER_BYTES, WHAT, CallerCredential, Refusal, presented_token
from app.server.guard import UNAUTHORIZED
from app.server.main import create_app
from app.settings import Settings
from tests.support import served
from tests.support.golden_cases import SEED as TEST_SEED
from tests.support.paths import ROOT

FIRST_SYNC = ROOT / "tests" / "fixtures" / "wire" / "sync-request-01-first-sync-no-children.json"
TOKEN = "caller-token-never-printed-0123456789"
OTHER = "another-token-never-printed-9876543210"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def kubelet_secret_volume(directory: Path, token: str, version: int) -> Path:
    """What the kubelet makes of a Secret volume: ``token`` -> ``..data/token``, ``..data`` -> a
    timestamped folder, swapped atomically on every update. The path the hook reads."""
    folder = directory / f"..2026_12_04_{version:02d}"
    folder.mkdir(parents=True)
    (folder / "token").write_text(token + "\n")
    (directory / "..data_tmp").symlink_to(folder.name)
    os.replace(directory / "..data_tmp", directory / "..data")
    link = directory / "token"
    if not link.is_symlink():
        link.symlink_to("..data/token")
    return link


# ------------------------------------------------------------------------------------------ the header


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], Refusal.MISSING),
        ([b"Bearer"], Refusal.MALFORMED),
        ([b"Bearer "], Refusal.MALFORMED),
        ([b"Basic dXNlcjpwYXNz"], Refusal.MALFORMED),
        ([b"Token abc"], Refusal.MALFORMED),
        ([b"abc"], Refusal.MALFORMED),
        ([b"Bearer abc", b"Bearer abc"], Refusal.MALFORMED),
        ([b"Bearer " + b"a" * MAX_HEADER_BYTES], Refusal.MALFORMED),
        ([b"Bearer abc"], b"abc"),
        ([b"bearer abc"], b"abc"),
        ([b"BEARER   abc  "], b"abc"),
    ],
    ids=[
        *("none", "scheme-only", "scheme-space", "basic", "other-scheme", "no-scheme", "twice", "too-long"),
        *("bearer", "lower-case", "spaces"),
    ],
)
def test_the_bearer_token_is_read_from_exactly_one_header(values: list[bytes], expected: object) -> None:
    assert presented_token(values) == expected


# ------------------------------------------------------------------------------------------ the token file


def test_a_rotated_token_is_accepted_and_the_previous_one_for_the_grace_time(tmp_path: Path) -> None:
    clock = Clock()
    path = kubelet_secret_volume(tmp_path / "caller", TOKEN, 1)
    credential = CallerCredential(path, grace_seconds=600, clock=clock)
    assert credential.accepts(TOKEN.encode())
    assert not credential.accepts(OTHER.encode())

    kubelet_secret_volume(tmp_path / "caller", OTHER, 2)  # the kubelet swaps in the rotated Secret
    assert not credential.accepts(OTHER.encode()), "a caller's check never reads the file"
    credential.refresh()  # what the server's watch does every second, off the event loop
    assert credential.accepts(OTHER.encode())
    assert credential.accepts(TOKEN.encode()), "the previous token, within the grace time"
    clock.now += 600
    assert credential.accepts(OTHER.encode())
    assert not credential.accepts(TOKEN.encode()), "the previous token, after the grace time"


def test_without_a_grace_time_the_previous_token_stops_at_once(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "token"
    path.write_text(TOKEN)
    credential = CallerCredential(path, grace_seconds=0, clock=clock)
    path.write_text(OTHER + "\n")
    credential.refresh()
    assert credential.accepts(OTHER.encode())
    assert not credential.accepts(TOKEN.encode())


def test_the_watch_takes_up_a_rotation_while_nobody_calls(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An idle hook still takes up (and logs) a rotated token: the rotation procedure waits for that line."""
    path = kubelet_secret_volume(tmp_path / "caller", TOKEN, 1)
    credential = CallerCredential(path, grace_seconds=0)

    async def rotate_while_watched() -> None:
        watch = asyncio.create_task(credential.watch(every=0.01))
        kubelet_secret_volume(tmp_path / "caller", OTHER, 2)
        for _ in range(200):
            await asyncio.sleep(0.01)
            if "caller credential changed" in caplog.text:
                break
        watch.cancel()

    with caplog.at_level(logging.INFO, logger="mpi_operator_hook.auth"):
        asyncio.run(rotate_while_watched())
    assert "caller credential changed" in caplog.text
    assert credential.accepts(OTHER.encode()) and not credential.accepts(TOKEN.encode())
    assert TOKEN not in caplog.text and OTHER not in caplog.text


@pytest.mark.parametrize("damage", ["removed", "emptied", "a FIFO", "huge"])
def test_a_token_file_that_goes_bad_keeps_the_last_token(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    path = tmp_path / "token"
    path.write_text(TOKEN)
    credential = CallerCredential(path, grace_seconds=600, clock=clock)
    if damage == "removed":
        path.unlink()
    elif damage == "emptied":
        path.write_text("  \n")
    elif damage == "a FIFO":
        path.unlink()
        os.mkfifo(path)  # opened for reading, a FIFO with no writer would block for ever
    else:
        with path.open("wb") as file:
            file.truncate(1 << 30)  # 1 GiB, sparse: reading it whole would take a GiB of memory
    with caplog.at_level(logging.WARNING, logger="mpi_operator_hook.auth"):
        credential.refresh()
        assert credential.accepts(TOKEN.encode())
        assert not credential.accepts(b"")
    assert TOKEN not in caplog.text
    expected = {"removed": "", "emptied": ": empty", "a FIFO": "not a regular file", "huge": "larger than"}
    assert expected[damage] in caplog.text


@pytest.mark.parametrize("kind", ["a FIFO", "a device", "huge"])
def test_a_token_file_that_is_not_a_small_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "token"
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "huge":
        with path.open("wb") as file:
            file.truncate(1 << 30)
    else:
        path = Path("/dev/zero")
    with pytest.raises(
        Hostile, match="not a regular file" if kind != "huge" else f"larger than {TOKEN_FILE_BYTES}"
    ):
        read_token(path, WHAT)
    tmp_path.joinpath("good").write_bytes(b"  a-token\n")
    assert read_token(tmp_path / "good", WHAT) == "a-token"


# ------------------------------------------------------------------------------------------ the app


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "caller-token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture
def app(token_file: Path) -> Any:
    return create_app(Settings(caller_auth="token", caller_token_file=token_file), SeededKeys(TEST_SEED))


Headers = list[tuple[bytes, bytes]]


def asgi_post(app: Any, path: str, headers: Headers, body: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    """One POST straight into the ASGI app: any header bytes at all, as a raw socket could send them."""
    scope = {
        "type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
        "headers": [(b"content-length", str(len(body)).encode()), *headers], "http_version": "1.1",
        "scheme": "http", "server": ("127.0.0.1", 8080), "client": ("127.0.0.1", 40000), "root_path": "",
    }  # fmt: skip
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, body_message = sent[0], sent[1]
    return start["status"], dict(start["headers"]), body_message["body"]


def unauthorized(app: Any) -> dict[tuple[str, str], float]:
    registry = app.hook.metrics.registry
    return {
        (hook, reason): registry.get_sample_value(
            "mpi_operator_hook_unauthorized_requests_total", {"hook": hook, "reason": reason}
        )
        or 0.0
        for hook in ("sync", "customize")
        for reason in ("missing", "malformed", "wrong")
    }


@pytest.mark.parametrize("path", ["/sync", "/customize"])
def test_callers_without_the_token_get_401_and_the_same_answer(
    app: Any, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    body = FIRST_SYNC.read_bytes()
    answers = []
    with caplog.at_level(logging.DEBUG):
        for value in (None, b"Basic " + TOKEN.encode(), b"Bearer x"):
            headers = [] if value is None else [(b"authorization", value)]
            status, response_headers, payload = asgi_post(app, path, headers, body)
            assert status == 401
            assert response_headers[b"www-authenticate"].startswith(b"Bearer")
            assert response_headers[b"connection"] == b"close"
            answers.append(payload)
        status, _, payload = asgi_post(app, path, [(b"authorization", b"Bearer " + TOKEN.encode())], body)
    assert status == 200, payload
    assert len(set(answers)) == 1, "the answer never says which part was wrong"
    assert json.loads(answers[0]) == {"error": UNAUTHORIZED}
    hook = path.lstrip("/")
    assert {k: v for k, v in unauthorized(app).items() if k[0] == hook} == {
        (hook, "missing"): 1.0, (hook, "malformed"): 1.0, (hook, "wrong"): 1.0
    }  # fmt: skip
    assert (
        app.hook.metrics.registry.get_sample_value(
            "mpi_operator_hook_errors_total", {"hook": hook, "kind": "unauthorized"}
        )
        == 3.0
    )
    refused = [r for r in caplog.records if getattr(r, "event", None) == "refused"]
    assert len(refused) == 1, "one line per 10 s however many are refused"
    assert refused[0].fields["reason"] == "missing" and refused[0].fields["status"] == 401  # type: ignore[attr-defined]
    assert TOKEN not in caplog.text


def test_probes_and_metrics_stay_open(app: Any) -> None:
    client = TestClient(app)
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert "mpi_operator_hook_unauthorized_requests_total" in client.get("/metrics").text


NEAR_MISSES = [
    b"Bearer " + TOKEN.encode() + b"x",
    b"Bearer " + TOKEN[:-1].encode(),
    b"Bearer " + OTHER.encode(),
    b"bearer\t" + TOKEN.encode(),
    b"Bearer\xa0" + TOKEN.encode(),
    b"Bearer " + TOKEN.upper().encode(),
]


@pytest.mark.parametrize("path", ["/sync", "/customize"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    headers=st.lists(
        st.one_of(
            st.binary(max_size=64),
            st.binary(min_size=MAX_HEADER_BYTES - 8, max_size=MAX_HEADER_BYTES + 64),
            st.builds(lambda t: b"Bearer " + t, st.binary(max_size=64)),
            st.builds(lambda t: b"Bearer " + t.encode("utf-8"), st.text(max_size=40)),
            st.sampled_from(NEAR_MISSES),
        ).map(lambda value: (b"authorization", value)),
        max_size=3,
    )
)  # fmt: skip
def test_any_other_authorization_is_401_never_500(
    app: Any, path: str, headers: list[tuple[bytes, bytes]]
) -> None:
    status, _, payload = asgi_post(app, path, headers, b"{}")
    values = [value for _, value in headers]
    exact = len(values) == 1 and presented_token(values) == TOKEN.encode()
    # 400 only when the token was right: "{}" is no request.
    assert status == (400 if exact else 401), payload
    assert TOKEN.encode() not in payload


def test_the_hook_does_not_serve_without_a_token_unless_told(tmp_path: Path) -> None:
    env = served.without_hook_settings()
    env["MPI_OPERATOR_CALLER_TOKEN_FILE"] = str(tmp_path / "missing")
    done = subprocess.run(
        [str(served.VENV_BIN / "mpijob"), "serve", "--port", "1"], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("mpijob serve: invalid hook settings: MPI_OPERATOR_CALLER_TOKEN_FILE ")
    assert "missing: cannot be read" in done.stderr
    assert "MPI_OPERATOR_CALLER_AUTH=off" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------------------------------ real uvicorn


CURL = shutil.which("curl")


@pytest.fixture
def authenticated(tmp_path: Path, token_file: Path) -> Iterator[served.Served]:
    settings_ = {"MPI_OPERATOR_CALLER_TOKEN_FILE": str(token_file)}
    with served.serving(tmp_path / "hook.log", settings_, authenticated=True) as hook:
        yield hook


def curl(url: str, *headers: str) -> str:
    assert CURL is not None
    argv = [CURL, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary", f"@{FIRST_SYNC}", url]
    for header in headers:
        argv[1:1] = ["-H", header]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout


@pytest.mark.skipif(CURL is None and not os.environ.get("CI"), reason="needs curl")
def test_real_uvicorn_answers_the_token_and_refuses_the_rest(authenticated: served.Served) -> None:
    sync = f"{authenticated.url}/sync"
    assert curl(sync) == "401"
    assert curl(sync, f"Authorization: Bearer {OTHER}") == "401"
    assert curl(sync, "Authorization: Bearer " + "x" * 70_000) in {"400", "401", "431"}  # never 500
    assert curl(sync, f"Authorization: Bearer {TOKEN}") == "200"
    log = authenticated.log_text()
    assert "callers must send the token of" in log
    assert TOKEN not in log and OTHER not in log


def test_serving_without_authentication_says_so_loudly(tmp_path: Path) -> None:
    with served.serving(tmp_path / "hook.log") as hook:  # the suite's hooks: MPI_OPERATOR_CALLER_AUTH=off
        log = hook.log_text()
    assert "CALLER AUTHENTICATION IS OFF" in log and "WARNING" in log
