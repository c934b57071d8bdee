"""``mpijob replay`` and ``examples/requests``, against real ``mpijob serve`` processes.

Every example case is replayed against a hook started with that case's settings, so the recorded answers can
never go stale; a planted difference exits 1 and shows it; an unreachable hook or an unreadable folder exits
2; a case recorded under other settings is skipped with a note, or sent with ``--all``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.cli.replay import diff, without_volatile
from app.server.record import VOLATILE
from tests.e2e.processes import free_port
from tests.support import served
from tests.support.paths import ROOT

EXAMPLES = ROOT / "examples" / "requests"
CASES = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())


def case_meta(folder: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((folder / "case.json").read_text())
    return meta


def replay(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "app.cli.program", "replay", *args]
    return subprocess.run(
        command, cwd=ROOT, env=served.hook_env({}), capture_output=True, text=True, timeout=120, check=False
    )


def lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each case's verdict word, by case name."""
    return {
        line.split()[1]: line.split()[0]
        for line in done.stdout.splitlines()
        if line.split()[:1] in (["same"], ["differs"], ["skipped"], ["broken"])
    }


@pytest.fixture(scope="module")
def default_hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[served.Served]:
    with served.serving(tmp_path_factory.mktemp("replay") / "hook.log") as hook:
        yield hook


# --- the examples ------------------------------------------------------------------------------------------


def test_the_examples_cover_the_documented_cases() -> None:
    assert {p.name for p in CASES} == {
        "new-job",
        "running-job",
        "finished-job",
        "dead-worker-restarts",
        "invalid-edit",
        "gang-volcano",
    }


@pytest.mark.parametrize("folder", CASES, ids=[p.name for p in CASES])
def test_each_example_is_a_small_reviewed_v2_request(folder: Path) -> None:
    meta = case_meta(folder)
    assert meta["hook"] == "sync" and meta["status"] == 200 and len(meta["shows"]) > 40
    assert all(name.startswith("MPI_OPERATOR_") for name in meta["settings"])
    request = json.loads((folder / "request.json").read_text())
    assert request["controller"]["spec"]["hooks"]["sync"]["version"] == "v2"
    assert request["parent"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] <= 2  # 0: the invalid edit
    assert len(request["children"].get("Pod.v1", {})) <= 2
    for objects in request["children"].values():
        assert all("/" in key for key in objects), "hook v2 keys children by namespace/name"
    text = (folder / "request.json").read_text() + (folder / "response.json").read_text()
    assert "PRIVATE KEY" not in text and "LS0tLS1CRUdJTi" not in text  # PEM, and PEM in base64


def _settings_groups() -> dict[tuple[tuple[str, str], ...], list[str]]:
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for folder in CASES:
        groups.setdefault(tuple(sorted(case_meta(folder)["settings"].items())), []).append(folder.name)
    return groups


GROUPS = _settings_groups()


@pytest.mark.parametrize(
    "settings", list(GROUPS), ids=lambda s: ",".join(f"{k}={v}" for k, v in s) or "defaults"
)
def test_every_example_answers_as_recorded_by_a_hook_with_its_settings(
    settings: tuple[tuple[str, str], ...], tmp_path: Path, update_golden: bool
) -> None:
    names = GROUPS[settings]
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    env = {**dict(settings), "MPI_OPERATOR_RECORD_DIR": str(recorded)} if update_golden else dict(settings)
    with served.serving(tmp_path / "hook.log", env) as hook:
        if update_golden:
            _record_answers(hook, names, recorded)
        given = [f"--setting={name}={value}" for name, value in settings]
        done = replay(str(EXAMPLES), "--url", hook.url, *given)
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = lines(done)
    assert {name: verdicts[name] for name in names} == dict.fromkeys(names, "same"), done.stdout
    assert set(verdicts.values()) <= {"same", "skipped"}


def _record_answers(hook: served.Served, names: list[str], recorded: Path) -> None:
    """``--update-golden``: each example's answer as the hook records it now (redacted; review the diff)."""
    for name in names:
        path = "/" + case_meta(EXAMPLES / name)["hook"]
        request = urllib.request.Request(
            hook.url + path, data=(EXAMPLES / name / "request.json").read_bytes(), method="POST"
        )
        urllib.request.urlopen(request, timeout=30).close()
        deadline = time.monotonic() + 10
        while len(list(recorded.iterdir())) < names.index(name) + 1 or any(
            p.name.startswith(".") for p in recorded.iterdir()
        ):
            assert time.monotonic() < deadline, "the hook did not record the request"
            time.sleep(0.02)
        new = sorted(recorded.iterdir())[-1] / "response.json"
        old = EXAMPLES / name / "response.json"
        volatile = (*VOLATILE, *case_meta(EXAMPLES / name)["volatile"])
        old_answer, new_answer = (without_volatile(json.loads(f.read_text()), volatile) for f in (old, new))
        if diff(old_answer, new_answer):  # only times or keys changed: keep the file, and the diff small
            shutil.copyfile(new, old)


# --- what replay tells apart --------------------------------------------------------------------------------


def test_a_planted_difference_exits_1_and_shows_it(default_hook: served.Served, tmp_path: Path) -> None:
    for name in ("new-job", "running-job"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
    answer = json.loads((tmp_path / "running-job" / "response.json").read_text())
    answer["status"]["conditions"][1]["reason"] = "SomethingElse"
    answer["children"] = [c for c in answer["children"] if c["metadata"]["name"] != "pi-worker-1"]
    (tmp_path / "running-job" / "response.json").write_text(json.dumps(answer))
    done = replay(str(tmp_path), "--url", default_hook.url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines(done) == {"new-job": "same", "running-job": "differs"}
    assert 'status.conditions[1].reason: "SomethingElse" -> "MPIJobRunning"' in done.stdout
    assert "children[Pod pi-worker-1]: (absent) -> {" in done.stdout
    assert "1 same, 1 differ, 0 skipped" in done.stdout


def test_times_and_new_keys_are_not_differences(default_hook: served.Served, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "new-job", tmp_path / "new-job")
    answer = json.loads((tmp_path / "new-job" / "response.json").read_text())
    answer["status"]["startTime"] = "2001-01-01T00:00:00Z"
    secret = next(c for c in answer["children"] if c["kind"] == "Secret")
    secret["data"] = {"ssh-privatekey": "b3RoZXI=", "ssh-publickey": "b3RoZXI="}
    (tmp_path / "new-job" / "response.json").write_text(json.dumps(answer))
    done = replay(str(tmp_path / "new-job"), "--url", default_hook.url)  # one case's own folder
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines(done) == {"new-job": "same"}


def test_a_case_may_ignore_more(default_hook: served.Served, tmp_path: Path) -> None:
    case = tmp_path / "running-job"
    shutil.copytree(EXAMPLES / "running-job", case)
    answer = json.loads((case / "response.json").read_text())
    answer["resyncAfterSeconds"] = 7
    (case / "response.json").write_text(json.dumps(answer))
    assert replay(str(case), "--url", default_hook.url).returncode == 1
    meta = case_meta(case)
    meta["volatile"].append("resyncAfterSeconds")
    (case / "case.json").write_text(json.dumps(meta))
    assert replay(str(case), "--url", default_hook.url).returncode == 0


def test_cases_of_other_settings_are_skipped_or_sent_with_all(default_hook: served.Served) -> None:
    done = replay(str(EXAMPLES), "--url", default_hook.url)
    assert done.returncode == 0 and lines(done)["gang-volcano"] == "skipped"
    assert "needs MPI_OPERATOR_GANG_SCHEDULING=volcano" in done.stdout
    sent = replay(str(EXAMPLES), "--url", default_hook.url, "--all")
    assert sent.returncode == 1 and lines(sent)["gang-volcano"] == "differs"
    assert "children[PodGroup pi]: {" in sent.stdout  # a default hook makes no PodGroup
    alone = replay(str(EXAMPLES / "gang-volcano"), "--url", default_hook.url)
    assert alone.returncode == 2 and "no case was compared" in alone.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://127.0.0.1:{port}"], "cannot reach http://127.0.0.1:"),
        (["--url", "{hook}/sync"], "answered 404, as a server that is not the hook would"),
        (
            ["--url", "{hook}", "--setting", "MPI_OPERATOR_LOG_LEVEL=DEBUG"],
            "is not NAME=VALUE: give NAME=VALUE with NAME one of",
        ),
    ],
    ids=["unreachable", "not-the-base-url", "unknown-setting"],
)
def test_an_unusable_hook_or_setting_exits_2(
    default_hook: served.Served, args: list[str], message: str
) -> None:
    args = [a.format(port=free_port(), hook=default_hook.url) for a in args]
    done = replay(str(EXAMPLES), *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_an_unreadable_folder_exits_2(default_hook: served.Served, tmp_path: Path) -> None:
    assert "cannot read it" in replay(str(tmp_path / "missing"), "--url", default_hook.url).stderr
    assert "no recorded request" in replay(str(tmp_path), "--url", default_hook.url).stderr


def test_a_broken_case_is_reported_and_the_others_still_compared(
    default_hook: served.Served, tmp_path: Path
) -> None:
    shutil.copytree(EXAMPLES / "new-job", tmp_path / "a-good")
    shutil.copytree(EXAMPLES / "new-job", tmp_path / "broken")
    (tmp_path / "broken" / "response.json").write_text("{not json")
    done = replay(str(tmp_path), "--url", default_hook.url)
    assert done.returncode == 2, done.stdout + done.stderr
    assert lines(done) == {"a-good": "same", "broken": "broken"}
    assert "broken   broken  response.json is not JSON" in done.stdout
    assert "1 same, 0 differ, 0 skipped, 1 broken" in done.stdout
    assert "1 case could not be compared" in done.stderr
    (tmp_path / "broken" / "response.json").unlink()
    done = replay(str(tmp_path), "--url", default_hook.url)
    assert done.returncode == 2 and "broken   broken  cannot read response.json" in done.stdout


def test_children_are_matched_by_kind_and_name_not_order() -> None:
    one = {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"x": 1}}
    two = {"kind": "Pod", "metadata": {"name": "b"}, "spec": {"x": 2}}
    assert diff({"children": [one, two]}, {"children": [two, one]}) == []
    changed = {**two, "spec": {"x": 3}}
    assert diff({"children": [one, two]}, {"children": [changed, one]}) == ["children[Pod b].spec.x: 2 -> 3"]
    assert diff({"a": [1, 2]}, {"a": [2, 1]}) == ["a[0]: 1 -> 2", "a[1]: 2 -> 1"]  # other lists: by position
    assert diff({"a": 1}, {"a": 1.0}) == ["a: 1 -> 1.0"]
