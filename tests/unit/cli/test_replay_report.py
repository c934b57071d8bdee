"""What ``mpijob replay`` prints, against a stand-in hook on loopback: its error lines in the one shape
``mpijob replay: <what is wrong>: <what to do>`` (``app.cli.complaints``), a 401 that blames what was sent,
counts in the singular when there is one, and ``-o json``: one object per run (the schema in
docs/user-guide.md), bounded, without the token.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.cli.replay_compare import VALUE_CHARS
from app.cli.replay_io import LINE_CHARS
from app.cli.replay_report import MAX_DIFF_LINES, VERDICTS
from tests.unit.cli.test_render_json import GUIDE, SCHEMAS, documented
from tests.unit.cli.test_replay_hostile import Done, case, line_of, replay

TOKEN = "s3cret-token"
VOLCANO = {"settings": {"MPI_OPERATOR_GANG_SCHEDULING": "volcano"}}


class StandIn(ThreadingHTTPServer):
    """Answers every POST with ``status`` and ``answer`` (401 unless the caller sends ``Bearer TOKEN`` when
    ``token`` is set)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Answer)
        self.status = 200
        self.answer: Any = {}
        self.token = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StandIn

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        wrong = self.server.token and self.headers.get("Authorization") != f"Bearer {self.server.token}"
        status = 401 if wrong else self.server.status
        body = json.dumps(self.server.answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[StandIn]:
    server = StandIn()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def error_lines(done: Done) -> list[str]:
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("mpijob replay: ") and line.count(": ") >= 2 for line in lines), (
        lines
    )
    return lines


# --- 401: what was sent is what the hook refused ----------------------------------------------------------


def test_a_refused_token_names_its_file_not_the_flag_to_give(hook: StandIn, tmp_path: Path) -> None:
    hook.token = TOKEN
    case(tmp_path / "c")
    token = tmp_path / "token"
    token.write_text("an-old-token\n")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url, "--token-file", str(token))
    assert done.returncode == 2, done
    [line] = error_lines(done)
    assert f"answered 401: the hook refused the token in {token}: " in line
    assert "MPI_OPERATOR_CALLER_TOKEN_FILE" in line
    assert "pass the hook's caller token" not in line and "an-old-token" not in done.stdout + done.stderr


def test_no_token_is_told_to_send_one(hook: StandIn, tmp_path: Path) -> None:
    hook.token = TOKEN
    case(tmp_path / "c")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert done.returncode == 2, done
    [line] = error_lines(done)
    assert "answered 401: the hook takes only callers with its token" in line
    assert line.endswith("--token-file FILE")


def test_the_right_token_is_taken(hook: StandIn, tmp_path: Path) -> None:
    hook.token = TOKEN
    case(tmp_path / "c")
    (tmp_path / "token").write_text(TOKEN)
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url, "--token-file", str(tmp_path / "token"))
    assert done.returncode == 0, done


# --- counts ----------------------------------------------------------------------------------------------


def test_one_difference_and_one_broken_case_are_singular(hook: StandIn, tmp_path: Path) -> None:
    case(tmp_path / "one", response=b'{"a": 1}')
    case(tmp_path / "two", response=b'{"a": 1, "b": 2}')
    (case(tmp_path / "unparsable") / "response.json").write_bytes(b"{not json")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    assert done.returncode == 2, done
    assert line_of(done, "one").endswith("(1 difference)")
    assert line_of(done, "two").endswith("(2 differences)")
    [line] = error_lines(done)
    assert "1 case could not be compared" in line


def test_several_broken_cases_are_plural(hook: StandIn, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (case(tmp_path / name) / "response.json").write_bytes(b"{not json")
    done = replay(tmp_path, str(tmp_path), "--url", hook.url)
    [line] = error_lines(done)
    assert "2 cases could not be compared" in line


# --- every error line in one shape -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["{dir}/missing", "--url", "{url}"], "cannot read it"),
        (["-", "--url", "{url}"], "replay does not read standard input"),
        (["{dir}/c", "--url", "http://127.0.0.1:9"], "cannot reach http://127.0.0.1:9"),
        (["{dir}/c", "--url", "{url}/sync"], "answered 404"),
        (["{dir}/c", "--url", "{url}", "--setting", "NOPE=1"], "--setting 'NOPE=1'"),
        (["{dir}/c", "--url", "{url}", "--token-file", "{dir}/none"], "--token-file"),
        (["{dir}/v", "--url", "{url}"], "no case was compared"),
    ],
    ids=["no-dir", "stdin", "unreachable", "not-the-base-url", "bad-setting", "no-token-file", "all-skipped"],
)
def test_every_error_is_one_line_in_the_one_shape(
    hook: StandIn, tmp_path: Path, args: list[str], says: str
) -> None:
    hook.status = 404 if "/sync" in "".join(args) else 200
    case(tmp_path / "c")
    (case(tmp_path / "v") / "case.json").write_text(json.dumps(VOLCANO))
    done = replay(tmp_path, *[a.format(dir=tmp_path, url=hook.url) for a in args])
    assert done.returncode == 2, done
    [line] = error_lines(done)
    assert says in line, line


# --- -o json ---------------------------------------------------------------------------------------------


def as_json(tmp_path: Path, *args: str) -> tuple[Done, Any]:
    done = replay(tmp_path, *args, "-o", "json")
    return done, json.loads(done.stdout)


def test_json_is_one_object_with_each_case_and_its_verdict(hook: StandIn, tmp_path: Path) -> None:
    case(tmp_path / "cases" / "a-same")
    case(tmp_path / "cases" / "b-differs", response=json.dumps({f"k{i:02}": i for i in range(25)}).encode())
    (case(tmp_path / "cases" / "c-skipped") / "case.json").write_text(json.dumps(VOLCANO))
    (case(tmp_path / "cases" / "d-broken") / "response.json").write_bytes(b"{not json")
    (tmp_path / "token").write_text(TOKEN)
    done, printed = as_json(tmp_path, str(tmp_path / "cases"), "--url", hook.url, "--token-file",
                            str(tmp_path / "token"))  # fmt: skip
    assert done.returncode == 2  # a broken case, as in text
    assert set(printed) == {"cases", "summary"}
    assert printed["summary"] == {"same": 1, "differs": 1, "skipped": 1, "broken": 1}
    cases = {c["case"]: c for c in printed["cases"]}
    assert list(cases) == ["a-same", "b-differs", "c-skipped", "d-broken"]
    assert all(set(c) == {"case", "verdict", "differences", "moreDifferences", "why"} for c in cases.values())
    assert cases["a-same"] == {"case": "a-same", "verdict": "same", "differences": [], "moreDifferences": 0,
                               "why": ""}  # fmt: skip
    differs = cases["b-differs"]
    assert differs["verdict"] == "differs" and len(differs["differences"]) == MAX_DIFF_LINES
    assert (
        differs["differences"][0] == "k00: 0 -> (absent)"
        and differs["moreDifferences"] == 25 - MAX_DIFF_LINES
    )
    assert cases["c-skipped"]["verdict"] == "skipped"
    assert "needs MPI_OPERATOR_GANG_SCHEDULING=volcano" in cases["c-skipped"]["why"]
    assert cases["d-broken"]["verdict"] == "broken"
    assert cases["d-broken"]["why"].startswith("response.json is not JSON")
    assert TOKEN not in done.stdout + done.stderr
    [line] = error_lines(done)
    assert "1 case could not be compared" in line


def test_json_exit_codes_are_the_texts(hook: StandIn, tmp_path: Path) -> None:
    case(tmp_path / "c")
    done, printed = as_json(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert (done.returncode, done.stderr, printed["summary"]["same"]) == (0, "", 1)
    hook.answer = {"a": "\x1b[31m" + "x" * 5000}
    done, printed = as_json(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert done.returncode == 1 and printed["cases"][0]["verdict"] == "differs"
    [difference] = printed["cases"][0]["differences"]
    assert len(difference) <= LINE_CHARS and "\x1b" not in done.stdout  # bounded, and escaped as JSON does


def test_json_prints_nothing_when_the_run_stops(hook: StandIn, tmp_path: Path) -> None:
    hook.token = TOKEN
    case(tmp_path / "c")
    done = replay(tmp_path, str(tmp_path / "c"), "--url", hook.url, "-o", "json")
    assert (done.returncode, done.stdout) == (2, "")
    error_lines(done)


def test_the_object_is_as_the_guide_documents_it(hook: StandIn, tmp_path: Path) -> None:
    shown = documented(1)
    case(tmp_path / "c")
    _, printed = as_json(tmp_path, str(tmp_path / "c"), "--url", hook.url)
    assert set(shown) == set(printed) and set(shown["summary"]) == set(printed["summary"]) == set(VERDICTS)
    assert all(set(c) == set(printed["cases"][0]) for c in shown["cases"])
    assert {c["verdict"] for c in shown["cases"]} <= set(VERDICTS)
    section = GUIDE.read_text().split(SCHEMAS, 1)[1].split("\n## ", 1)[0]
    fields = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert fields == [*printed["cases"][0], "summary"]
    said = " ".join(section.split())
    assert f"the first {MAX_DIFF_LINES}," in said and f"cut to {VALUE_CHARS} characters" in said
    assert f"at most {LINE_CHARS} characters" in said
