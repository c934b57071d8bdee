"""``mpijob replay`` against hostile folders and hostile servers: real files, real loopback servers.

A recorded folder may hold links out of it, FIFOs, huge or deeply nested files; the hook at ``--url`` may
answer endlessly, trickle, nest deeply or print escape sequences. Each is refused on its own line, the other
cases are still compared, nothing outside DIR is read or sent, and the exit code is 0, 1 or 2, never 3.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from app.cli import replay_io
from app.cli.replay import MAX_TIMEOUT
from app.cluster.tokens import TOKEN_FILE_BYTES
from app.settings import Settings
from tests.support import served
from tests.support.paths import ROOT

DEEP = b"[" * 300 + b"]" * 300  # past orjson's 255 levels
SERVER_SECONDS = 30.0  # no hostile server goes on longer than this, whatever the client does


# --- a hostile hook on loopback ----------------------------------------------------------------------------


class Hostile(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.behaviour = behaviour
        self.received: list[tuple[bytes, str]] = []  # (body, Authorization header)
        self.stop = threading.Event()

    def handle_error(self, *_: object) -> None:
        pass  # a client that hung up on a hostile answer: what replay is meant to do

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Hostile

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append((body, self.headers.get("Authorization", "")))
        with contextlib.suppress(OSError):  # the client gave up, as it should
            BEHAVIOURS[self.server.behaviour](self)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def drip(self, piece: bytes, every: float) -> None:
        """Write ``piece`` again and again until the client goes, the test ends, or SERVER_SECONDS."""
        end = time.monotonic() + SERVER_SECONDS
        while not self.server.stop.is_set() and time.monotonic() < end:
            self.wfile.write(piece)
            self.wfile.flush()
            self.server.stop.wait(every)


def _endless(handler: Handler) -> None:
    handler.send_response(200)
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.drip(b" " * (1 << 20), 0)


def _trickle_body(handler: Handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000000")
    handler.end_headers()
    handler.drip(b" ", 0.1)


def _trickle_headers(handler: Handler) -> None:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    handler.drip(b"a", 0.1)


def _escapes(handler: Handler) -> None:
    answer = {"\x1b[31mred\x1b]0;title\x07": "\x1b[2J", "k" * 5000: 1, "\u202eevil": "\x9b"}
    handler.answer(json.dumps(answer).encode())


BEHAVIOURS: dict[str, Callable[[Handler], None]] = {
    "empty-object": lambda h: h.answer(b"{}"),
    "deep": lambda h: h.answer(DEEP),
    "endless": _endless,
    "trickle-body": _trickle_body,
    "trickle-headers": _trickle_headers,
    "escapes": _escapes,
}


@pytest.fixture
def hook(request: pytest.FixtureRequest) -> Iterator[Hostile]:
    server = Hostile(getattr(request, "param", "empty-object"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --- running replay, measured ------------------------------------------------------------------------------


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mib: float


def replay(tmp_path: Path, *args: str) -> Done:
    """``mpijob replay ARGS`` as a real process: its exit code, output, wall time and peak memory."""
    out, err = tmp_path / "replay.out", tmp_path / "replay.err"
    command = [sys.executable, "-m", "app.cli.program", "replay", *args]
    started = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=ROOT, env=served.without_hook_settings(), stdout=stdout, stderr=stderr
        )
        status, peak_kib = _reap(process, started + 60)
    process.returncode = os.waitstatus_to_exitcode(status)
    done = Done(
        process.returncode,
        out.read_text(errors="replace"),
        err.read_text(errors="replace"),
        time.monotonic() - started,
        peak_kib / 1024,
    )
    assert "Traceback" not in done.stderr and done.returncode in (0, 1, 2), done
    return done


def _reap(process: subprocess.Popen[bytes], deadline: float) -> tuple[int, int]:
    """Wait for ``process`` (killed at ``deadline``): its status and its peak RSS in KiB, read from its own
    ``VmHWM`` every few milliseconds. Not ``wait4``'s ``ru_maxrss``: that keeps the RSS of the test process
    it was forked from, which in a long test run outgrows any bound asserted here."""
    peak = 0
    while time.monotonic() < deadline:
        peak = max(peak, _vm_hwm_kib(process.pid))
        pid, status = os.waitpid(process.pid, os.WNOHANG)
        if pid:
            return status, peak
        time.sleep(0.005)
    process.kill()
    _, status = os.waitpid(process.pid, 0)
    return status, peak


def _vm_hwm_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) if found else 0


def case(folder: Path, request: bytes = b'{"x": 1}', response: bytes = b"{}") -> Path:
    """A case the ``empty-object`` hook answers the same (no case.json: sync, status 200, the defaults)."""
    folder.mkdir(parents=True)
    (folder / "request.json").write_bytes(request)
    (folder / "response.json").write_bytes(response)
    return folder


def verdicts(done: Done) -> dict[str, str]:
    words = {"same", "differs", "skipped", "broken"}
    found = [line.split()[:2] for line in done.stdout.splitlines()]
    return {pair[1]: pair[0] for pair in found if len(pair) == 2 and pair[0] in words}


def line_of(done: Done, name: str) -> str:
    return next(line for line in done.stdout.splitlines() if line.split()[1:2] == [name])


# --- what the folder holds ---------------------------------------------------------------------------------


def test_a_link_out_of_dir_is_refused_and_nothing_of_it_is_sent(hook: Hostile, tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    case(cases / "a-good")
    case(cases / "passwd")
    (cases / "passwd" / "request.json").unlink()
    (cases / "passwd" / "request.json").symlink_to("/etc/passwd")
    case(cases / "answer-link")
    (cases / "answer-link" / "response.json").unlink()
    (cases / "answer-link" / "response.json").symlink_to("/etc/hostname")
    outside = case(tmp_path / "outside" / "case")
    (cases / "folder-link").symlink_to(outside)
    done = replay(tmp_path, str(cases), "--url", hook.url)
    assert done.returncode == 2, done
    assert verdicts(done) == {
        "a-good": "same",
        "answer-link": "broken",
        "folder-link": "broken",
        "passwd": "broken",
    }
    assert "request.json is a symbolic link: refused" in line_of(done, "passwd")
    assert "response.json is a symbolic link: refused" in line_of(done, "answer-link")
    assert "a symbolic link: refused" in line_of(done, "folder-link")
    assert [body for body, _ in hook.received] == [b'{"x": 1}']  # the good case's only
    assert "1 same, 0 differ, 0 skipped, 3 broken" in done.stdout
    assert "3 cases could not be compared" in done.stderr


def test_fifos_are_refused_without_blocking(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "fifo-request")
    (tmp_path / "fifo-request" / "request.json").unlink()
    os.mkfifo(tmp_path / "fifo-request" / "request.json")
    case(tmp_path / "fifo-response")
    (tmp_path / "fifo-response" / "response.json").unlink()
    os.mkfifo(tmp_path / "fifo-response" / "response.json")
    case(tmp_path / "good")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    assert done.returncode == 2, done
    assert verdicts(done) == {"fifo-request": "broken", "fifo-response": "broken", "good": "same"}
    assert "request.json is not a regular file" in line_of(done, "fifo-request")
    assert done.seconds < 20


def test_a_huge_sparse_case_is_skipped_unread(hook: Hostile, tmp_path: Path) -> None:
    big = case(tmp_path / "big")
    os.truncate(big / "request.json", 1 << 30)  # 1 GiB, sparse: nothing to read but zeros
    case(tmp_path / "good")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    assert done.returncode == 2, done
    assert verdicts(done) == {"big": "broken", "good": "same"}
    assert "request.json is 1.0 GiB, over replay's 160.0 MiB limit: not read" in line_of(done, "big")
    assert len(hook.received) == 1
    assert done.max_rss_mib < 200, f"replay held {done.max_rss_mib:.0f} MiB"


def test_the_documented_bounds_are_the_codes() -> None:
    text = " ".join((ROOT / "examples" / "requests" / "README.md").read_text().split())
    assert Settings.model_fields["max_body_bytes"].default == replay_io.MAX_BYTES
    assert f"over {replay_io.MAX_BYTES >> 20} MiB (the hook's default `MPI_OPERATOR_MAX_BODY_BYTES`)" in text
    assert f"An answer over {replay_io.MAX_BYTES >> 20} MiB" in text
    assert f"JSON nested deeper than {replay_io.EXCHANGE_MAX_DEPTH} levels" in text
    assert f"at most {MAX_TIMEOUT:g})" in text and f"up to {TOKEN_FILE_BYTES >> 10} KiB" in text
    assert f"at most {replay_io.LINE_CHARS} characters long" in text


def test_the_file_limit_holds_at_the_byte(tmp_path: Path) -> None:
    (tmp_path / "at").write_bytes(b"x" * 10)
    (tmp_path / "over").write_bytes(b"x" * 11)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert replay_io.read_case_file(folder, "at", cap=10) == b"x" * 10
        with pytest.raises(replay_io.Refused, match="over replay's"):
            replay_io.read_case_file(folder, "over", cap=10)
        assert replay_io.read_case_file(folder, "missing", cap=10) is None
    finally:
        os.close(folder)


@pytest.mark.parametrize("file", ["response.json", "case.json"])
def test_deep_json_in_a_case_is_broken_not_a_crash(hook: Hostile, tmp_path: Path, file: str) -> None:
    (case(tmp_path / "deep") / file).write_bytes(DEEP)
    case(tmp_path / "good")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    assert done.returncode == 2, done
    assert verdicts(done) == {"deep": "broken", "good": "same"}
    assert f"{file} nests deeper than {replay_io.EXCHANGE_MAX_DEPTH} levels: refused" in line_of(done, "deep")


def test_broken_cases_exit_2_even_when_others_differ(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "differs", response=b'{"a": 1}')
    (case(tmp_path / "unparsable") / "response.json").write_bytes(b"{not json")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    assert done.returncode == 2, done
    assert verdicts(done) == {"differs": "differs", "unparsable": "broken"}
    assert "a: 1 -> (absent)" in done.stdout and "response.json is not JSON" in done.stdout


def test_standard_input_is_not_a_folder(tmp_path: Path) -> None:
    done = replay(tmp_path, "-", "--url", "http://127.0.0.1:9")
    assert done.returncode == 2 and "replay does not read standard input" in done.stderr


def test_names_are_printed_safely(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "\x1b[31mred", response=b'{"a": 1}')
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    assert done.returncode == 1, done
    assert "\x1b" not in done.stdout and "\\x1b[31mred" in done.stdout


# --- what the hook answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hook", ["endless"], indirect=True)
def test_an_endless_answer_stops_at_the_limit(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "c")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert done.returncode == 2, done
    assert "the answer is over replay's 160.0 MiB limit: not read further" in line_of(done, "c")
    assert done.max_rss_mib < 400, f"replay held {done.max_rss_mib:.0f} MiB"
    assert done.seconds < 30


@pytest.mark.parametrize("hook", ["trickle-body", "trickle-headers"], indirect=True)
def test_a_trickling_answer_ends_at_the_timeout(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "one")
    case(tmp_path / "two")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url, "--timeout", "1.5")
    assert done.returncode == 2, done
    assert verdicts(done) == {"one": "broken", "two": "broken"}
    assert "no complete answer within --timeout 1.5 s" in line_of(done, "one")
    # Two calls of at most 1.5 s each and the watchdog's grace, plus starting Python.
    assert done.seconds < 2 * (1.5 + replay_io.WATCHDOG_GRACE) + 5, done.seconds


@pytest.mark.parametrize("hook", ["deep"], indirect=True)
def test_a_deep_answer_is_broken_not_a_crash(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "c")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert done.returncode == 2, done
    deepest = replay_io.EXCHANGE_MAX_DEPTH
    assert f"the answer nests deeper than {deepest} levels: refused" in line_of(done, "c")


@pytest.mark.parametrize("hook", ["escapes"], indirect=True)
def test_the_servers_text_is_printed_safely(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "c")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert done.returncode == 1, done
    assert not any(ch in done.stdout for ch in ("\x1b", "\x07", "\x9b", "\u202e")), done.stdout
    assert "\\x1b[31mred" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= replay_io.LINE_CHARS


# --- arguments ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "abc", "1e9"])
def test_a_bad_timeout_exits_2(tmp_path: Path, value: str) -> None:
    case(tmp_path / "c")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", "http://127.0.0.1:9", f"--timeout={value}")
    assert done.returncode == 2 and "--timeout" in done.stderr, done


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfesecret\x00\x80", "not a valid bearer token (contains control characters)"),
        (b"secret with spaces", "not a valid bearer token (contains characters other than visible ASCII)"),
        (b"secret" * 2000, "larger than 8192 bytes"),
        (b"  \n", "empty"),
    ],
    ids=["binary", "spaces", "too-long", "empty"],
)
def test_a_bad_token_file_exits_2_without_showing_it(
    hook: Hostile, tmp_path: Path, content: bytes, message: str
) -> None:
    case(tmp_path / "c")
    (tmp_path / "token").write_bytes(content)
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url, "--token-file", str(tmp_path / "token"))
    assert done.returncode == 2 and message in done.stderr, done
    assert "secret" not in done.stdout + done.stderr
    assert hook.received == []


def test_a_token_is_sent_as_a_bearer_token(hook: Hostile, tmp_path: Path) -> None:
    case(tmp_path / "c")
    (tmp_path / "token").write_bytes(b"  abc-DEF_123.~+/==\n")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url, "--token-file", str(tmp_path / "token"))
    assert done.returncode == 0, done
    assert "abc-DEF" not in done.stdout + done.stderr
    assert [auth for _, auth in hook.received] == ["Bearer abc-DEF_123.~+/=="]
