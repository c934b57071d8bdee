"""``MPI_OPERATOR_RECORD_DIR``: requests and answers recorded for ``mpijob replay``, redacted, bounded, never
able to fail a sync.

A real ``mpijob serve`` records a running job whose SSH Secret carries a real key (no key byte may reach the
disk), then ``mpijob replay`` replays the recording against it; the recorder's bounds and failures are driven
directly, and a record directory that disappears under a real server costs a log line and a metric, not a 500.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.kube.keys import random_keys
from app.server import record
from app.server.record import RequestRecorder
from app.server.redact import REDACTED, redact
from app.settings import Settings, SettingsError, load_settings
from tests.support import served
from tests.support.paths import ROOT

EXAMPLES = ROOT / "examples" / "requests"
CREDENTIAL = "s3cr3t-token-value-never-on-disk"


def post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def records(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def wait_for(condition: Any, what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def metric(url: str, series: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[1])
    raise AssertionError(f"{series} not in /metrics")


def running_job_with_real_key() -> tuple[bytes, list[bytes]]:
    """The running-job example with a freshly made SSH key in its Secret (data and last-applied copy) and a
    token in an env var of the launcher; also every form of those secrets that must not reach the disk."""
    request = json.loads((EXAMPLES / "running-job" / "request.json").read_text())
    pair = random_keys("uid")
    data = {
        "ssh-privatekey": base64.b64encode(pair.private_pem).decode(),
        "ssh-publickey": base64.b64encode(pair.public_line).decode(),
    }
    secret = request["children"]["Secret.v1"]["default/pi-ssh"]
    secret["data"] = data
    annotations = secret["metadata"]["annotations"]
    applied = json.loads(annotations["metacontroller.k8s.io/last-applied-configuration"])
    annotations["metacontroller.k8s.io/last-applied-configuration"] = json.dumps({**applied, "data": data})
    launcher = request["parent"]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["env"] = [{"name": "HF_TOKEN", "value": CREDENTIAL}, {"name": "MODE", "value": "fast"}]
    pem_body = pair.private_pem.splitlines()[3]  # one line of the key's base64 body
    forbidden = [pair.private_pem, pem_body, data["ssh-privatekey"].encode(), data["ssh-privatekey"][40:80]]
    forbidden = [f if isinstance(f, bytes) else f.encode() for f in forbidden]
    return json.dumps(request).encode(), [*forbidden, CREDENTIAL.encode()]


@pytest.fixture
def recording_hook(tmp_path: Path) -> Iterator[tuple[served.Served, Path]]:
    directory = tmp_path / "recorded"
    directory.mkdir()
    with served.serving(tmp_path / "hook.log", {"MPI_OPERATOR_RECORD_DIR": str(directory)}) as hook:
        yield hook, directory


# --- against a real hook ---------------------------------------------------------------------------------


def test_no_key_or_token_byte_reaches_the_disk_and_the_recording_replays(
    recording_hook: tuple[served.Served, Path],
) -> None:
    hook, directory = recording_hook
    body, forbidden = running_job_with_real_key()
    status, answer = post(f"{hook.url}/sync", body)
    reused = forbidden[2].decode() in answer.decode()  # the hook reuses the observed key
    assert status == 200 and reused, "the observed key was not reused"  # never print key material
    status, answer = post(f"{hook.url}/sync", (EXAMPLES / "new-job" / "request.json").read_bytes())
    new_key = next(c for c in json.loads(answer)["children"] if c["kind"] == "Secret")["data"]
    forbidden.append(new_key["ssh-privatekey"].encode())
    status, _ = post(f"{hook.url}/customize", (EXAMPLES / "new-job" / "request.json").read_bytes())
    assert status == 200
    wait_for(lambda: len(records(directory)) == 3, "three records")

    on_disk = b"".join(f.read_bytes() for f in directory.rglob("*") if f.is_file())
    assert REDACTED.encode() in on_disk
    leaked = [index for index, secret in enumerate(forbidden) if secret in on_disk]
    assert leaked == [], "secrets on disk (by index, never printed)"
    kept = records(directory)
    assert [p.name.split("-", 3)[2] for p in kept] == ["sync", "sync", "customize"]
    case = json.loads((kept[0] / "case.json").read_text())
    assert case["hook"] == "sync" and case["status"] == 200 and case["settings"] == {}
    assert case["shows"] == "recorded sync of default/pi" and case["recorded"].endswith("Z")
    recorded_request = json.loads((kept[0] / "request.json").read_text())
    env = recorded_request["parent"]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    assert env[0]["env"] == [{"name": "HF_TOKEN", "value": REDACTED}, {"name": "MODE", "value": "fast"}]

    replayed = subprocess.run(
        [sys.executable, "-m", "app.cli.program", "replay", str(directory), "--url", hook.url],
        cwd=ROOT, env=served.hook_env({}), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "3 same, 0 differ, 0 skipped" in replayed.stdout
    written = 'mpi_operator_hook_recorded_requests_total{result="written"}'
    wait_for(lambda: metric(hook.url, written) == 6, "the replayed requests, recorded in turn")


def test_a_lost_record_directory_costs_a_log_line_and_a_metric_not_a_sync(
    recording_hook: tuple[served.Served, Path],
) -> None:
    hook, directory = recording_hook
    request = (EXAMPLES / "running-job" / "request.json").read_bytes()
    directory.rmdir()
    directory.write_text("not a directory any more")  # every write fails, as on a full or lost disk
    for _ in range(3):
        assert post(f"{hook.url}/sync", request)[0] == 200
    failed = 'mpi_operator_hook_recorded_requests_total{result="failed"}'
    wait_for(lambda: metric(hook.url, failed) == 3, "three failed records")
    wait_for(lambda: "request not recorded" in hook.log_text(), "the log line")
    assert hook.log_text().count("request not recorded") == 1  # the first failure, not one per sync
    directory.unlink()
    directory.mkdir()
    assert post(f"{hook.url}/sync", request)[0] == 200
    wait_for(lambda: len(records(directory)) == 1, "recording again")
    written = 'mpi_operator_hook_recorded_requests_total{result="written"}'
    wait_for(lambda: metric(hook.url, written) == 1, "the written record, counted")
    assert "recording requests again" not in hook.log_text()  # within the minute of the failure's line


def test_a_body_that_is_not_json_is_answered_and_not_recorded(
    recording_hook: tuple[served.Served, Path],
) -> None:
    hook, directory = recording_hook
    assert post(f"{hook.url}/sync", b"not json")[0] == 400
    skipped = 'mpi_operator_hook_recorded_requests_total{result="skipped"}'
    wait_for(lambda: metric(hook.url, skipped) == 1, "the skipped record")
    assert records(directory) == []


# --- the recorder's bounds -------------------------------------------------------------------------------


class Counts(dict[str, int]):
    def __call__(self, result: str) -> None:
        self[result] = self.get(result, 0) + 1


def recorder(directory: Path, counts: Counts, **bounds: int) -> RequestRecorder:
    bounds = {"max_requests": 1000, "max_bytes": 1 << 30, **bounds}
    return RequestRecorder(directory, settings={}, count=counts, **bounds)


def exchange(name: str, pad: int = 0) -> bytes:
    return json.dumps({"parent": {"metadata": {"name": name, "namespace": "ns"}, "pad": "x" * pad}}).encode()


def test_the_oldest_records_make_room_for_new_ones(tmp_path: Path) -> None:
    counts = Counts()
    rec = recorder(tmp_path, counts, max_requests=3)
    for index in range(5):
        rec.offer("sync", exchange(f"job-{index}"), 200, b"{}")
    rec.stop()
    assert [p.name.rsplit("-", 2)[-2:] for p in records(tmp_path)] == [
        ["job", "2"],
        ["job", "3"],
        ["job", "4"],
    ]
    assert counts == {"written": 5, "pruned": 2}


def test_the_byte_bound_holds_and_a_record_too_large_for_it_is_skipped(tmp_path: Path) -> None:
    counts = Counts()
    rec = recorder(tmp_path, counts, max_bytes=100_000)
    for index in range(4):
        rec.offer("sync", exchange(f"job-{index}", pad=30_000), 200, b"{}")
    rec.offer("sync", exchange("huge", pad=200_000), 200, b"{}")
    rec.stop()
    sizes = sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file())
    assert sizes <= 100_000 and len(records(tmp_path)) == 3
    assert counts == {"written": 4, "pruned": 1, "skipped": 1}


def test_records_from_before_a_restart_count_and_half_written_ones_go(tmp_path: Path) -> None:
    counts = Counts()
    first = recorder(tmp_path, counts)
    first.offer("sync", exchange("old"), 200, b"{}")
    first.stop()
    (tmp_path / ".record-interrupted").mkdir()
    (tmp_path / "someone-elses-file").write_text("kept")
    second = recorder(tmp_path, counts, max_requests=1)
    second.offer("customize", exchange("new"), 200, b"{}")
    second.stop()
    assert [p.name.rsplit("-", 3)[-3:] for p in records(tmp_path)] == [["customize", "ns", "new"]]
    assert not (tmp_path / ".record-interrupted").exists() and (tmp_path / "someone-elses-file").exists()


def test_a_full_queue_drops_the_record_not_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record, "QUEUE_BYTES", 1000)
    counts = Counts()
    rec = recorder(tmp_path, counts)
    rec.offer("sync", exchange("big", pad=2000), 200, b"{}")  # returns at once
    rec.stop()
    assert counts == {"skipped": 1} and records(tmp_path) == []


# --- redaction -------------------------------------------------------------------------------------------


def test_redaction_keeps_the_shape_and_drops_every_secret_value() -> None:
    secret = {"kind": "Secret", "data": {"a": "QQ=="}, "stringData": {"b": "B"}, "type": "Opaque"}
    applied = json.dumps(secret)
    obj = {
        "children": {"Secret.v1": {"ns/s": {**secret, "metadata": {"annotations": {
            "metacontroller.k8s.io/last-applied-configuration": applied,
            "kubectl.kubernetes.io/last-applied-configuration": "{not json",
            "other": applied,
        }}}}},
        "env": [{"name": "DB_PASSWORD", "value": "p"}, {"name": "aws_access_key_id", "value": "k"},
                {"name": "REPLICAS", "value": "2"}],
    }  # fmt: skip
    out = redact(obj)
    got = out["children"]["Secret.v1"]["ns/s"]
    assert got["data"] == {"a": REDACTED} and got["stringData"] == {"b": REDACTED} and got["type"] == "Opaque"
    annotations = got["metadata"]["annotations"]
    assert json.loads(annotations["metacontroller.k8s.io/last-applied-configuration"])["data"] == {
        "a": REDACTED
    }
    assert annotations["kubectl.kubernetes.io/last-applied-configuration"] == REDACTED
    assert annotations["other"] == applied  # not a copy of an object: left alone
    assert [e["value"] for e in out["env"]] == [REDACTED, REDACTED, "2"]
    assert obj["env"][0]["value"] == "p"  # the input is not changed


# --- settings --------------------------------------------------------------------------------------------


def test_the_record_directory_is_checked_at_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("MPI_OPERATOR_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MPI_OPERATOR_RECORD_DIR", str(tmp_path / "missing"))
    with pytest.raises(SettingsError, match=r"MPI_OPERATOR_RECORD_DIR: .*must be an existing directory"):
        load_settings()
    monkeypatch.setenv("MPI_OPERATOR_RECORD_MAX_BYTES", "10")
    monkeypatch.setenv("MPI_OPERATOR_RECORD_DIR", str(tmp_path))
    with pytest.raises(SettingsError, match="MPI_OPERATOR_RECORD_MAX_BYTES"):
        load_settings()
    monkeypatch.delenv("MPI_OPERATOR_RECORD_MAX_BYTES")
    monkeypatch.setenv("MPI_OPERATOR_RECORD_DIR", "")
    assert load_settings().record_dir is None  # empty: off, as unset


def test_mpijob_serve_refuses_a_record_directory_that_is_a_file(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    env = served.hook_env({"MPI_OPERATOR_RECORD_DIR": str(not_a_dir)})
    done = subprocess.run(
        [sys.executable, "-m", "app.cli.program", "serve", "--port", "1"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (
        done.returncode == 2 and "MPI_OPERATOR_RECORD_DIR" in done.stderr and "Traceback" not in done.stderr
    )


def test_a_record_notes_only_the_settings_that_change_answers() -> None:
    assert Settings(log_level="DEBUG").answer_settings() == {}
    assert Settings(gang_scheduling="volcano", cluster_domain="cluster.local.").answer_settings() == {
        "MPI_OPERATOR_CLUSTER_DOMAIN": "cluster.local",
        "MPI_OPERATOR_GANG_SCHEDULING": "volcano",
    }


# --- refused requests, modes, depth, a full disk, the log throttle ----------------------------------------


def test_a_refused_request_is_recorded_redacted_like_any_other(
    recording_hook: tuple[served.Served, Path],
) -> None:
    hook, directory = recording_hook
    request = json.loads((EXAMPLES / "running-job" / "request.json").read_text())
    request["children"]["Secret.v1"]["default/pi-ssh"] = {"data": {"ssh-privatekey": CREDENTIAL, "n": 1}}
    request["parent"]["apiVersion"] = "kubeflow.org/v1"  # refused: 400
    request["parent"]["spec"]["env"] = [{"name": "GITHUB_PAT", "value": CREDENTIAL}]
    assert post(f"{hook.url}/sync", json.dumps(request).encode())[0] == 400
    wait_for(lambda: len(records(directory)) == 1, "the refused request's record")
    (kept,) = records(directory)
    assert json.loads((kept / "case.json").read_text())["status"] == 400
    on_disk = b"".join(f.read_bytes() for f in kept.iterdir())
    assert CREDENTIAL.encode() not in on_disk and REDACTED.encode() in on_disk


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_records_are_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        rec = recorder(tmp_path, Counts())
        rec.offer("sync", exchange("job"), 200, b"{}")
        rec.stop()
    finally:
        os.umask(old)
    (kept,) = records(tmp_path)
    assert oct(kept.stat().st_mode & 0o777) == oct(0o700)
    files = sorted(kept.iterdir())
    assert [f.name for f in files] == ["case.json", "request.json", "response.json"]
    assert {oct(f.stat().st_mode & 0o777) for f in files} == {oct(0o600)}


def nested(levels: int) -> bytes:
    """A sync request whose parent's pod template metadata nests ``levels`` deep in all."""
    return b'{"parent": {"metadata": {"name": "deep", "x": ' + b'{"a": ' * (levels - 3) + b"1" + b"}" * levels


def test_a_request_nested_too_deep_is_not_recorded_at_all_and_the_next_one_is(tmp_path: Path) -> None:
    counts = Counts()
    rec = recorder(tmp_path, counts)
    rec.offer("sync", nested(1000), 200, b"{}")
    rec.offer("sync", nested(record.EXCHANGE_MAX_DEPTH + 1), 200, b"{}")
    rec.offer("sync", nested(record.EXCHANGE_MAX_DEPTH), 200, b"{}")  # the deepest that is recorded
    rec.offer("sync", exchange("next"), 200, b"{}")
    rec.stop()
    assert counts == {"skipped": 2, "written": 2}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    deepest, last = records(tmp_path)
    assert json.loads((deepest / "request.json").read_text())["parent"]["metadata"]["name"] == "deep"
    assert last.name.endswith("-ns-next")


class FullDisk:
    """``write_private`` on a disk with room for ``room`` records: ENOSPC beyond, as the kernel says it."""

    def __init__(self, directory: Path, room: int) -> None:
        self.directory, self.room, self.calls = directory, room, 0
        self.write = record.write_private

    def __call__(self, path: Path, content: bytes) -> None:
        self.calls += 1
        if len(records(self.directory)) >= self.room:
            raise OSError(28, "No space left on device")
        self.write(path, content)


def test_a_full_disk_drops_the_oldest_records_to_keep_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record, "write_private", FullDisk(tmp_path, room=3))
    counts = Counts()
    rec = recorder(tmp_path, counts)
    for index in range(6):
        rec.offer("sync", exchange(f"job-{index}"), 200, b"{}")
    rec.stop()
    assert [p.name.rsplit("-", 1)[-1] for p in records(tmp_path)] == ["3", "4", "5"]
    assert counts == {"written": 6, "pruned": 3}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_disk_full_of_other_files_loses_the_record_after_bounded_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FullDisk(tmp_path, room=0)  # other files fill the disk: no write ever succeeds
    monkeypatch.setattr(record, "write_private", disk)
    for index in range(record.FULL_DISK_RETRIES + 5):  # records of its own to drop: more than the retries
        (tmp_path / f"20260101T000000.{index:06d}Z-{index:06d}-sync-ns-old").mkdir()
        (tmp_path / f"20260101T000000.{index:06d}Z-{index:06d}-sync-ns-old" / "case.json").write_text("{}")
    counts = Counts()
    rec = recorder(tmp_path, counts)
    rec.offer("sync", exchange("new"), 200, b"{}")
    rec.stop()
    assert counts == {"pruned": record.FULL_DISK_RETRIES, "failed": 1}
    assert disk.calls == record.FULL_DISK_RETRIES + 1
    assert len(records(tmp_path)) == 5 and not any(p.name.startswith(".") for p in tmp_path.iterdir())


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (root only), unmounted after the test."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()[:200]}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True, timeout=30, check=False)


def test_a_real_full_disk_keeps_the_newest_records_whole(small_disk: Path) -> None:
    counts = Counts()
    rec = recorder(small_disk, counts)
    for index in range(12):  # ~200 KB each: five fit in 1 MiB
        rec.offer("sync", exchange(f"job-{index:02d}", pad=200_000), 200, b"{}")
    rec.stop()
    kept = records(small_disk)
    assert kept[-1].name.endswith("-ns-job-11") and 2 <= len(kept) <= 5
    assert all(
        sorted(f.name for f in p.iterdir()) == ["case.json", "request.json", "response.json"] for p in kept
    )
    assert counts["written"] == 12 and counts["pruned"] == 12 - len(kept) and "failed" not in counts


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_log_throttle_writes_at_most_one_line_a_minute_and_counts_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    throttle = record.LogThrottle(record.log, clock, directory="d")
    caplog.set_level("INFO", logger=record.log.name)
    for step in range(4000):  # 200 s of a recorder failing and recovering every other request
        clock.now = step * 0.05
        if step % 2:
            throttle.success()
        else:
            throttle.failure(40, "request not recorded", "No space left on device")
    for step in range(4000, 6000):  # then 100 s of successes only
        clock.now = step * 0.05
        throttle.success()
    lines = [(getattr(r, "event", ""), getattr(r, "fields", {})["held_back"]) for r in caplog.records]
    # One line at 0, 60, 120, 180 s (whatever came first), then the recovery at 240 s: 5 lines in 300 s.
    assert lines == [("request not recorded", 0)] + [("request not recorded", 1199)] * 3 + [
        ("recording requests again", 1199)
    ]
