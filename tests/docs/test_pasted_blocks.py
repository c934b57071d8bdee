"""Blocks a newcomer pastes whole work the first time: each is run as pasted, in a fresh shell, and prints
what its page shows.

Which blocks: every ```` ```sh ```` block of README.md, docs/*.md and examples/**/README.md that starts a hook
(``mpijob serve ... &``), and every one followed by an output block: a ```` ```text ```` block whose fence
comes right after a ``<!-- output -->`` line (prose may stand between the two blocks). A block that starts a
hook must wait for its ``/healthz`` before using it, stop it (``kill $!`` or ``kill %1``) and show its
output.

How: ``bash -c`` with ``set -e`` (each command must succeed, as a reader's paste would) in a scratch copy of
the repository, with an environment of ``PATH`` alone (the venv's bin, then the system's), so nothing the
test runner set leaks in. The block's exit status must be what its last command's ``# exits N`` says (0
when it says nothing); its stdout must be its output block, where ``...`` stands for any text within a line
(a long JSON answer, abridged). The hook writes its log to stderr, which is not compared. A documented port
(``--port 8080``, ``127.0.0.1:8080``) is replaced by a free one, so two runs (or a hook you have running)
cannot collide. Whatever the block leaves running is killed by its process group when the test ends; the
block must have stopped its hook itself (its port closed) for the test to pass.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.test_docs import Block, background_serve, blocks, commands, scratch, where
from tests.e2e.processes import free_port
from tests.support.paths import ROOT
from tests.support.served import VENV_BIN

PAGES = sorted(
    {
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "examples").rglob("README.md"),
    }
)
OUTPUT_NOTE = re.compile(r"^\s*<!-- output -->\s*$")
EXITS = re.compile(r"#\s*exits\s+(\d+)\s*$")
SERVE_PORT = re.compile(r"--port[= ](\d+)")
HEALTH_WAIT = re.compile(
    r"^curl .*--retry-connrefused.*--retry-max-time \d+.* http://127\.0\.0\.1:(\d+)/healthz$"
)
STOP = {"kill $!", "kill %1"}
# A block runs its hook, a few requests and replay: far less on an idle machine, generous for a loaded one.
BLOCK_SECONDS = 180
STOPPED_SECONDS = 15


@dataclass(frozen=True)
class Pasted:
    """A block run as pasted, and the output its page shows for it (None: the page shows none)."""

    block: Block
    output: str | None

    @property
    def where(self) -> str:
        return where(self.block.page, self.block.line)


def _output_notes(page: Path) -> set[int]:
    """The lines of the fences that follow an ``<!-- output -->`` line."""
    lines = page.read_text().splitlines()
    return {number + 2 for number, line in enumerate(lines[:-1]) if OUTPUT_NOTE.match(line)}


def pasted_blocks(page: Path) -> list[Pasted]:
    """The page's blocks to run as pasted; an output note on anything but a ``text`` block right after an
    ``sh`` block is an error."""
    found: list[Pasted] = []
    notes, previous = _output_notes(page), None
    for block in blocks(page):
        if block.line in notes:
            assert block.language == "text", f"{page.name}:{block.line}: an output note on a {block.language}"
            assert found and found[-1].block is previous, f"{page.name}:{block.line}: output of no sh block"
            found[-1] = Pasted(found[-1].block, block.text)
        elif block.language == "sh":
            found.append(Pasted(block, None))
        previous = block
    return [p for p in found if p.output is not None or _starts_a_hook(p.block)]


def _starts_a_hook(block: Block) -> bool:
    return any(background_serve(command) for _, command in commands(block))


def structure_problems(pasted: Pasted) -> list[str]:
    """What a block that starts a hook must do besides succeeding: wait for ``/healthz`` right after it
    starts, stop it, and show the output."""
    lines = [command for _, command in commands(pasted.block)]
    problems = []
    for index, command in enumerate(lines):
        if not background_serve(command):
            continue
        port = SERVE_PORT.search(command)
        wait = HEALTH_WAIT.match(lines[index + 1]) if index + 1 < len(lines) else None
        if port is None or wait is None or wait.group(1) != port.group(1):
            problems.append(f"{pasted.where}: `{command}` is not followed by a bounded wait on its /healthz")
        if not STOP & set(lines[index + 1 :]):
            problems.append(f"{pasted.where}: `{command}` is never stopped (kill $!)")
    if pasted.output is None:
        problems.append(f"{pasted.where}: no output block (<!-- output --> before a ```text block)")
    return problems


PASTED = [pasted for page in PAGES for pasted in pasted_blocks(page)]


def test_the_pages_have_blocks_run_as_pasted() -> None:
    where = {pasted.where.split(":")[0] for pasted in PASTED}
    assert {"README.md", "examples/requests/README.md", "docs/troubleshooting.md"} <= where


@pytest.mark.parametrize("pasted", PASTED, ids=[p.where for p in PASTED])
def test_a_block_that_starts_a_hook_waits_for_it_stops_it_and_shows_its_output(pasted: Pasted) -> None:
    if _starts_a_hook(pasted.block):
        assert structure_problems(pasted) == []


# --- running a block as pasted --------------------------------------------------------------------------


def on_free_ports(text: str) -> tuple[str, list[int]]:
    """``text`` with each port a hook of it serves on (``--port N``) replaced by a free one everywhere it is
    named (``--port N``, ``127.0.0.1:N``, ``localhost:N``); the free ports."""
    ports = []
    for documented in dict.fromkeys(SERVE_PORT.findall(text)):
        port = free_port()
        ports.append(port)
        text = re.sub(rf"(--port[= ]|127\.0\.0\.1:|localhost:){documented}\b", rf"\g<1>{port}", text)
    return text, ports


def expected_status(block: Block) -> int:
    lines = commands(block)
    match = EXITS.search(lines[-1][1]) if lines else None
    return int(match.group(1)) if match else 0


def shows(expected: str, printed: str) -> bool:
    """Whether ``printed`` is ``expected``, where ``...`` in ``expected`` is any text within one line."""
    pattern = r"[^\n]*".join(re.escape(part) for part in expected.strip("\n").split("..."))
    return re.fullmatch(pattern, printed.strip("\n")) is not None


@dataclass(frozen=True)
class Ran:
    status: int
    stdout: str
    stderr: str
    # The ports of the hooks the block started that still accepted connections after it ended.
    left_open: list[int]


def run_as_pasted(text: str, directory: Path) -> Ran:
    """``text`` run by ``bash -c`` with ``set -e`` in ``directory``, on free ports, with ``PATH`` alone."""
    text, ports = on_free_ports(text)
    out, err = directory / ".pasted.out", directory / ".pasted.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", "set -e\n" + text],
            cwd=directory,
            env={"PATH": f"{VENV_BIN}{os.pathsep}{os.defpath}"},
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # its own process group: whatever it leaves running is killed with it
        )
    try:
        status = shell.wait(timeout=BLOCK_SECONDS)
        left_open = [port for port in ports if _still_open(port, STOPPED_SECONDS)]
    finally:
        _kill_group(shell.pid)
        for port in ports:  # SIGKILL is not instant: gone before the next test takes a port
            _still_open(port, STOPPED_SECONDS)
    return Ran(status, out.read_text(errors="replace"), err.read_text(errors="replace"), left_open)


def _still_open(port: int, seconds: float) -> bool:
    """Whether something still listens on ``port`` after ``seconds`` to stop."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        time.sleep(0.2)
    return True


def _kill_group(group: int) -> None:
    """SIGKILL to the process group the test started (the block's shell was its leader)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


@pytest.mark.parametrize("pasted", PASTED, ids=[p.where for p in PASTED])
def test_a_block_run_as_pasted_succeeds_and_prints_what_its_page_shows(
    pasted: Pasted, tmp_path: Path
) -> None:
    page = scratch(tmp_path)
    ran = run_as_pasted(pasted.block.text, page.directory)
    said = f"\n--- stdout\n{ran.stdout[-2000:]}\n--- stderr\n{ran.stderr[-2000:]}"
    assert ran.status == expected_status(pasted.block), f"{pasted.where}: exited {ran.status}{said}"
    assert ran.left_open == [], f"{pasted.where}: its hook still runs after the block (kill $!)"
    assert pasted.output is not None
    assert shows(pasted.output, ran.stdout), (
        f"{pasted.where}: printed\n{ran.stdout}\n--- the page shows\n{pasted.output}"
    )


# --- the checks catch what they should ------------------------------------------------------------------

SERVE = "MPI_OPERATOR_CALLER_AUTH=off mpijob serve --port 8080 &"
WAIT = "curl -sSf --retry 30 --retry-delay 1 --retry-connrefused --retry-max-time 30 http://127.0.0.1:8080/healthz"
PLANTED = """\
# A page

```sh
{block}
```

{note}
```text
{{"status":"ok"}}
```
"""


def _planted(tmp_path: Path, block: str, note: str = "<!-- output -->") -> list[Pasted]:
    page = tmp_path / "page.md"
    page.write_text(PLANTED.format(block=block, note=note))
    return pasted_blocks(page)


def _problems(pasted: list[Pasted]) -> list[str]:
    return [problem.split(": ", 1)[1] for p in pasted for problem in structure_problems(p)]


def test_the_structure_check_wants_a_wait_a_stop_and_the_output(tmp_path: Path) -> None:
    assert _problems(_planted(tmp_path, f"{SERVE}\n{WAIT}\nkill $!")) == []
    assert _problems(_planted(tmp_path, f"{SERVE}\ncurl http://127.0.0.1:8080/healthz\nkill $!")) == [
        f"`{SERVE}` is not followed by a bounded wait on its /healthz"
    ]
    assert _problems(_planted(tmp_path, f"{SERVE}\n{WAIT}")) == [f"`{SERVE}` is never stopped (kill $!)"]
    assert _problems(_planted(tmp_path, f"{SERVE}\n{WAIT}\nkill $!", note="")) == [
        "no output block (<!-- output --> before a ```text block)"
    ]
    assert _planted(tmp_path, "mpijob --help", note="") == []  # neither a hook nor an output: not run


def test_an_output_note_on_no_sh_block_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n<!-- output -->\n```text\nx\n```\n")
    with pytest.raises(AssertionError, match="output of no sh block"):
        pasted_blocks(page)


@pytest.mark.parametrize(
    ("printed", "shown"),
    [
        ('{"a":1}\nsame     new-job\n', '{"a":1}\nsame     new-job'),
        ('{"status":{"x":1},"children":[]}\n', '{"status":...,"children":[]}'),
    ],
)
def test_output_matches_with_ellipsis_within_a_line(printed: str, shown: str) -> None:
    assert shows(shown, printed)


@pytest.mark.parametrize(
    ("printed", "shown"),
    [
        ("same     new-job\n", "differs  new-job"),
        ("a\nb\nc\n", "a\n...\nc\nd"),
        ("a\nb\nc\n", "a...c"),  # ... never stands for lines
        ("a\nb\n", "a"),
    ],
)
def test_output_that_differs_is_found(printed: str, shown: str) -> None:
    assert not shows(shown, printed)


def test_documented_ports_move_to_free_ones_and_nothing_else_does() -> None:
    text = f"{SERVE}\n{WAIT}\ncurl localhost:8080/x http://127.0.0.1:18080/ :80801"
    moved, (port,) = on_free_ports(text)
    assert moved == text.replace("8080 &", f"{port} &").replace(":8080/", f":{port}/")
    assert "18080" in moved and ":80801" in moved


def test_a_block_that_uses_its_hook_before_it_listens_fails(tmp_path: Path) -> None:
    """The README's block as it was: nothing waited for the hook, so curl found no server (exit 7)."""
    ran = run_as_pasted(f"{SERVE}\ncurl -sS http://127.0.0.1:8080/healthz\nkill $!", tmp_path)
    assert ran.status == 7, ran.stderr
    assert ran.left_open == []


def test_a_block_that_leaves_its_hook_running_is_found_and_the_hook_killed(tmp_path: Path) -> None:
    ran = run_as_pasted(f"{SERVE}\n{WAIT}", tmp_path)
    assert (ran.status, ran.stdout) == (0, '{"status":"ok"}'), ran.stderr
    assert len(ran.left_open) == 1
    with pytest.raises(OSError):  # killed with the block's process group once the test had seen it
        socket.create_connection(("127.0.0.1", ran.left_open[0]), timeout=1).close()
