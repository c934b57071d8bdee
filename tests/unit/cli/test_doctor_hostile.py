"""``mpijob doctor`` against a hostile API server (a real one on 127.0.0.1, tests/support/doctor_api.py) and
hostile ``--load`` files: every wrong answer is exit 2 with one line naming the read and what was wrong, never
exit 3 ("internal error"); answers are bounded in bytes and in time; server text is printed without its
controls.
"""

from __future__ import annotations

import copy
import json
import random
import resource
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.cli.doctor.checks import diagnose
from app.cli.doctor.snapshot import Snapshot
from app.cluster.connection import Connection
from app.cluster.reads import CannotRead, Read, Reader
from app.cluster.untrusted import Hostile
from tests.support import doctor_api
from tests.support.doctor_api import (
    EVENTS,
    JOB,
    LAUNCHER,
    PODS,
    Answer,
    Api,
    Serving,
    as_json,
    doctor,
    kubeconfig,
)
from tests.support.doctor_api import recorded as recorded_snapshot
from tests.support.paths import ROOT
from tests.unit.cli import test_doctor_reads as reads

api = pytest.fixture(name="api")(doctor_api.running)


def _run(api: tuple[Api, Serving], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    config = kubeconfig(tmp_path / "config", api[1].url, {"token": "t0ken-for-tests"})
    done = doctor("pi", "--kubeconfig", str(config), *args)
    return done.returncode, done.stdout, done.stderr


def test_the_recorded_job_is_read_and_judged(api: tuple[Api, Serving], tmp_path: Path) -> None:
    code, out, err = _run(api, tmp_path)
    assert code == 0, err
    assert out.startswith("healthy: MPIJob doctor/pi is Running")


def _job(edit: Callable[[dict[str, Any]], None]) -> Answer:
    job = copy.deepcopy(recorded_snapshot()["job"])
    edit(job)
    return as_json(job)


def _pods(edit: Callable[[dict[str, Any]], None]) -> Answer:
    """The recorded Pods, the first worker (items[1]) edited."""
    pods = copy.deepcopy(recorded_snapshot()["pods"])
    edit(pods[1])
    return as_json({"items": pods, "metadata": {}})


def _nested(depth: int) -> Answer:
    return Answer(200, b'{"a":' * depth + b"1" + b"}" * depth)


# path -> the answer there, and what stderr's one line must say.
HOSTILE: dict[str, tuple[str, Answer, str]] = {
    "a 3xx with {}": (JOB, Answer(302, b"{}"), f"answered GET {JOB} with HTTP 302"),
    "annotations as a list": (
        JOB,
        _job(lambda j: j["metadata"].update(annotations=["a", "b"])),
        "metadata.annotations is not an object",
    ),
    "a List where the Job should be": (
        LAUNCHER,
        as_json({"kind": "JobList", "apiVersion": "batch/v1", "metadata": {}, "items": []}),
        "a JobList where a Job should be",
    ),
    "JSON 100,000 deep": (JOB, _nested(100_000), "JSON nested deeper than 64 levels"),
    "not JSON": (JOB, Answer(200, b"<html>"), f"answer to GET {JOB}: not JSON"),
    "an array": (JOB, Answer(200, b"[]"), "something other than an object"),
    "no metadata": (JOB, as_json({"kind": "MPIJob"}), "metadata is missing"),
    "conditions not a list": (
        JOB,
        _job(lambda j: j["status"].update(conditions={"type": "Running"})),
        "status.conditions is not a list",
    ),
    "a condition type that is a list": (
        JOB,
        _job(lambda j: j["status"]["conditions"].append({"type": ["x"], "status": "True"})),
        "status.conditions[2].type is not a string",
    ),
    "items not a list": (PODS, as_json({"items": "x", "metadata": {}}), "something other than a list"),
    "a Pod with a numeric label": (
        PODS,
        _pods(lambda p: p["metadata"]["labels"].update(x=1)),
        "items[1].metadata.labels.x is not a string",
    ),
    "a Pod the hook cannot decode": (
        PODS,
        _pods(lambda p: p["metadata"].update(namespace=7)),
        "items[1]: `$.metadata.namespace` is not of the shape a Kubernetes object has",
    ),
    "a running state that is a string": (
        PODS,
        _pods(lambda p: p["status"]["containerStatuses"][0].update(state={"running": "yes"})),
        "containerStatuses[0].state.running is not an object",
    ),
    "an Event count that is a string": (
        EVENTS,
        as_json({"items": [{"involvedObject": {"name": "pi"}, "count": "9"}], "metadata": {}}),
        "items[0].count is not an integer",
    ),
}


@pytest.mark.parametrize(("path", "answer", "message"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_answer_is_exit_2_with_one_line(
    api: tuple[Api, Serving], tmp_path: Path, path: str, answer: Answer, message: str
) -> None:
    api[0].answers[path] = answer
    code, out, err = _run(api, tmp_path)
    assert code == 2, err
    assert out == "" and err.count("\n") == 1 and err.startswith("mpijob doctor: "), err
    assert message in err


def test_server_text_is_printed_without_its_controls(api: tuple[Api, Serving], tmp_path: Path) -> None:
    escape = "\x1b]0;owned\x07\x1b[2J"
    forged = "evidence: forged line"

    def crash_loop(pod: dict[str, Any]) -> None:
        waiting = {"reason": "CrashLoopBackOff", "message": f"{escape}bad\r\n{forged}\u202e"}
        pod["status"]["containerStatuses"][0]["state"] = {"waiting": waiting}

    api[0].answers[PODS] = _pods(crash_loop)
    for output in ("text", "json"):
        code, out, err = _run(api, tmp_path, "-o", output)
        assert code == 1, err
        assert not any(c in out for c in "\x1b\x07\r\u202e"), out
        assert "\\x1b]0;owned\\x07\\x1b[2J" in out.replace("\\\\", "\\")
        assert not any(line.startswith(forged) for line in out.splitlines())
    api[0].answers[JOB] = as_json({"kind": "Status", "message": f"{escape}no\n{forged}"}, 403)
    code, out, err = _run(api, tmp_path)
    assert code == 2 and "\x1b" not in err and err.count("\n") == 1  # the refusal: the Role's hint
    assert err.rstrip().endswith("the Role in docs/troubleshooting.md grants exactly that")
    assert "(403 Forbidden: \\x1b]0;owned" in err


def _endless(chunk: bytes, total: int) -> Callable[[], Iterator[bytes]]:
    def stream() -> Iterator[bytes]:
        for _ in range(total // len(chunk)):
            yield chunk

    return stream


def test_a_huge_answer_is_cut_at_the_cap(api: tuple[Api, Serving], tmp_path: Path) -> None:
    """400 MB offered: the doctor reads 64 MiB, stops, and says so; its memory stays well under 1 GB."""
    api[0].answers[PODS] = Answer(200, stream=_endless(b'{"items":[' + b" " * (1 << 20), 400 << 20))
    code, out, err = _run(api, tmp_path)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert code == 2 and out == ""
    assert f"answer to GET {PODS} is larger than 67108864 bytes" in err
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib} KiB"


def test_a_trickling_server_cannot_hold_a_read_past_its_deadline(api: tuple[Api, Serving]) -> None:
    def trickle() -> Iterator[bytes]:
        for _ in range(100):  # 20 s at most, far past the deadline: each byte well inside a read timeout
            time.sleep(0.2)
            yield b" "

    api[0].answers[JOB] = Answer(200, stream=trickle)
    reader = Reader(Connection(api[1].url, "x", "doctor", False), deadline=1.0)
    started = time.monotonic()
    with pytest.raises(CannotRead, match=r"did not finish answering GET .* within 1 s"):
        reader.json(Read("get", "mpijobs.kubeflow.org", "doctor", JOB))
    assert time.monotonic() - started < 2.0
    reader.close()


def _load(tmp_path: Path, content: bytes) -> tuple[int, str, str]:
    file = tmp_path / "snapshot.json"
    file.write_bytes(content)
    done = doctor("--load", str(file))
    return done.returncode, done.stdout, done.stderr


LOADED: dict[str, tuple[bytes, str]] = {
    "{}": (b"{}", "not a snapshot written by --save: namespace is missing"),
    "a list": (b"[1]", "not a snapshot written by --save: the top level is not an object"),
    "a hook request": (
        (ROOT / "examples" / "requests" / "running-job" / "request.json").read_bytes(),
        "not a snapshot written by --save: namespace is missing",
    ),
    "nested 100,000 deep": (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested deeper than 65 levels"),
    "not JSON": (b"\xff\xfe", "not JSON"),
    "pods not a list": (
        json.dumps({**recorded_snapshot(), "pods": {"a": 1}}).encode(),
        "pods is not a list",
    ),
    "logs with a number": (
        json.dumps({**recorded_snapshot(), "logs": {"p/c": 1}}).encode(),
        "logs.p/c is not a string",
    ),
}


@pytest.mark.parametrize(("content", "message"), LOADED.values(), ids=LOADED.keys())
def test_a_file_it_did_not_write_is_exit_2(tmp_path: Path, content: bytes, message: str) -> None:
    code, out, err = _load(tmp_path, content)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and message in err, err


def test_a_saved_snapshot_loads_again(api: tuple[Api, Serving], tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    assert _run(api, tmp_path, "--save", str(saved))[0] == 0
    code, out, _ = _load(tmp_path, saved.read_bytes())
    assert code == 0 and out.startswith("healthy: MPIJob doctor/pi")


# --- many hostile answers at once: fields of the recorded objects replaced by values of other types ---------

_VALUES: tuple[Any, ...] = (
    None,
    1,
    -1,
    1.5,
    True,
    "x",
    "",
    [],
    {},
    ["a"],
    {"a": 1},
    [{}],
    [None],
    {"a": None},
)


def _mutated(obj: Any, rng: random.Random) -> Any:
    """``obj`` with one to three of its fields (at any depth) replaced by a value of another type."""
    obj = copy.deepcopy(obj)
    for _ in range(rng.randint(1, 3)):
        paths = list(_paths(obj))
        *parents, last = rng.choice(paths)
        target = obj
        for part in parents:
            target = target[part]
        target[last] = copy.deepcopy(rng.choice(_VALUES))
    return obj


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    children = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in children:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


def test_any_mutated_answer_is_judged_or_refused_never_a_crash() -> None:
    """In-process (httpx's MockTransport, tests/unit/cli/test_doctor_reads.py's server) for speed: 250
    answers."""
    rng = random.Random(20261205)
    refused = 0
    for _ in range(250):
        server = reads.Server(reads._recorded())
        path = rng.choice([p for p, obj in server.objects.items() if obj])
        server.objects[path] = _mutated(server.objects[path], rng)
        try:
            diagnose(reads._gather(server))
        except CannotRead:
            refused += 1
    assert 0 < refused < 250


def test_any_mutated_snapshot_is_judged_or_refused_never_a_crash() -> None:
    rng = random.Random(20261206)
    refused = 0
    for _ in range(250):
        try:
            diagnose(Snapshot.from_json(_mutated(recorded_snapshot(), rng), "--load x"))
        except Hostile:
            refused += 1
    assert 0 < refused < 250
