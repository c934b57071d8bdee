"""Gang scheduling through the real shell: uvicorn started with MPI_OPERATOR_GANG_SCHEDULING, driven by curl.

The environment variable is the only switch: each gang golden request, posted to a server started with its
overlay's setting (and the golden files' SSH key seed), gets exactly the golden children back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.e2e.processes import free_port
from tests.hook.test_http import ROOT, Hook, _wait_healthy, curl
from tests.hook.test_http import pytestmark as needs_curl
from tests.support import golden_store
from tests.support.golden_cases import CASES, SEED, request_path, response_path
from tests.support.served import hook_env

pytestmark = needs_curl
GANG_CASES = sorted(name for name, case in CASES.items() if case.settings.get("gang_scheduling"))


@contextmanager
def server(workdir: Path, gang_scheduling: str) -> Iterator[Hook]:
    seed = workdir / "ssh-key-seed"
    seed.write_bytes(SEED)
    log = workdir / "server.log"
    env = hook_env(
        {"MPI_OPERATOR_SSH_KEY_SEED_FILE": str(seed), "MPI_OPERATOR_GANG_SCHEDULING": gang_scheduling}
    )
    port = free_port()
    uvicorn = [sys.executable, "-m", "uvicorn", "app.server.main:app"]
    command = [*uvicorn, "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}", process, log)
        yield Hook(url=f"http://127.0.0.1:{port}", workdir=workdir, log=log, process=process)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Hook]]:
    """One server per setting the gang golden cases use."""
    settings = sorted({CASES[name].settings["gang_scheduling"] for name in GANG_CASES})
    with ExitStack() as stack:
        yield {s: stack.enter_context(server(tmp_path_factory.mktemp("gang-hook"), s)) for s in settings}


def test_gang_cases_were_found() -> None:
    assert len(GANG_CASES) >= 8


@pytest.mark.parametrize("name", GANG_CASES)
def test_server_answers_the_golden_children(servers: dict[str, Hook], name: str) -> None:
    hook = servers[CASES[name].settings["gang_scheduling"]]
    code, answer = curl(hook, "/sync", golden_store.read_bytes(request_path(name)))
    assert code == 200, answer[:300]
    assert json.loads(answer)["children"] == golden_store.load(response_path(name))["children"]
