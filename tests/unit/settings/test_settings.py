"""``MPI_OPERATOR_*`` settings: defaults, normalisation, and start-up errors that name the variable.

``load_settings()`` reads the real environment (set with monkeypatch); ``mpijob serve`` is run as a process
to show a bad value stops it at once with a message, before uvicorn binds anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.kube.keys import MIN_SEED_BYTES, SeededKeys, random_keys
from app.settings import Settings, SettingsError, load_settings
from tests.e2e.processes import free_port
from tests.support.paths import ROOT

DOMAIN = "MPI_OPERATOR_CLUSTER_DOMAIN"
GANG = "MPI_OPERATOR_GANG_SCHEDULING"
SEED = "MPI_OPERATOR_SSH_KEY_SEED_FILE"
LOG_LEVEL = "MPI_OPERATOR_LOG_LEVEL"
# Printable, so a leak into an error message would be visible in the assertion output.
SEED_CONTENT = b"seed-content-must-never-be-printed-0123456789"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("MPI_OPERATOR_"):
            monkeypatch.delenv(name)
    yield


def _error(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> str:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    return str(caught.value)


def test_defaults() -> None:
    settings = load_settings()
    assert isinstance(settings, Settings)
    assert settings.cluster_domain == ""
    assert settings.gang_scheduling == ""
    assert settings.ssh_key_seed_file is None
    assert settings.log_level == "INFO"
    assert settings.keys is random_keys


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.cluster_domain = "example.org"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cluster.local", "cluster.local"),
        ("cluster.local.", "cluster.local"),  # the fully-qualified spelling
        (" cluster.local ", "cluster.local"),
        ("example.org", "example.org"),
        ("", ""),
    ],
)
def test_cluster_domain_accepted_and_normalised(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    monkeypatch.setenv(DOMAIN, value)
    assert load_settings().cluster_domain == expected


@pytest.mark.parametrize("value", ["Bad_Domain!", "-cluster.local", "cluster..local", "a" * 254])
def test_cluster_domain_rejected_naming_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    message = _error(monkeypatch, DOMAIN, value)
    assert DOMAIN in message
    assert "DNS subdomain" in message


@pytest.mark.parametrize("value", ["volcano", "scheduler-plugins-scheduler", ""])
def test_gang_scheduling_accepted(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(GANG, value)
    assert load_settings().gang_scheduling == value


def test_gang_scheduling_rejected_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert GANG in _error(monkeypatch, GANG, "Volcano Scheduler")


@pytest.mark.parametrize(("value", "expected"), [("debug", "DEBUG"), ("Warning", "WARNING")])
def test_log_level_accepted(monkeypatch: pytest.MonkeyPatch, value: str, expected: str) -> None:
    monkeypatch.setenv(LOG_LEVEL, value)
    assert load_settings().log_level == expected


def test_log_level_rejected_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LOG_LEVEL in _error(monkeypatch, LOG_LEVEL, "verbose")


def test_every_bad_variable_is_named_in_one_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DOMAIN, "Bad_Domain!")
    message = _error(monkeypatch, SEED, str(tmp_path / "absent"))
    assert DOMAIN in message
    assert SEED in message


# --- the SSH key seed file ---------------------------------------------------------------------------


def test_seed_file_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    message = _error(monkeypatch, SEED, str(tmp_path / "no-such-seed"))
    assert SEED in message
    assert "cannot read" in message


def test_seed_file_is_a_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert SEED in _error(monkeypatch, SEED, str(tmp_path))


@pytest.mark.parametrize("size", [0, 16, MIN_SEED_BYTES - 1])
def test_seed_file_too_short_names_the_variable_not_the_content(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, size: int
) -> None:
    seed = tmp_path / "seed"
    seed.write_bytes(SEED_CONTENT[:size])
    message = _error(monkeypatch, SEED, str(seed))
    assert SEED in message
    assert str(MIN_SEED_BYTES) in message
    if size:  # 16+ distinctive bytes: absent unless the content was printed
        assert SEED_CONTENT[:size].decode() not in message


def test_empty_seed_variable_means_no_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEED, "")
    settings = load_settings()
    assert settings.ssh_key_seed_file is None
    assert settings.keys is random_keys


@pytest.mark.parametrize("kind", ["a FIFO", "huge"])
def test_a_seed_that_is_not_one_is_refused_without_reading_it_whole(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    seed = tmp_path / "seed"
    if kind == "a FIFO":
        os.mkfifo(seed)  # opened for reading, a FIFO with no writer would block start-up for ever
    else:
        with seed.open("wb") as file:
            file.truncate(1 << 30)  # 1 GiB, sparse: reading it whole would take a GiB of memory
    message = _error(monkeypatch, SEED, str(seed))
    assert SEED in message and ("not a regular file" if kind == "a FIFO" else "not a seed") in message


def test_the_seed_is_read_once_and_bounded_even_when_it_changes_after_start_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seed = tmp_path / "seed"
    seed.write_bytes(SEED_CONTENT)
    monkeypatch.setenv(SEED, str(seed))
    settings = load_settings()  # looks at the file: fine
    os.mkfifo(tmp_path / "fifo")
    seed.unlink()
    (tmp_path / "fifo").rename(seed)  # swapped for a FIFO before the hook reads it
    with pytest.raises(SettingsError, match=f"{SEED}: cannot read .*: not a regular file"):
        settings.keys  # noqa: B018
    seed.unlink()
    seed.write_bytes(SEED_CONTENT)
    settings = Settings()
    first = settings.keys("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40")
    seed.write_bytes(SEED_CONTENT[::-1])  # read once: the running hook keeps the keys it started with
    assert settings.keys("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40") == first
    assert Settings().keys("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40") != first


def test_settings_is_its_groups_and_keeps_every_check() -> None:
    """A validator named alike in two groups would shadow the other in ``Settings``: each stays."""
    from app.settings import GROUPS

    def checks(model: type) -> set[str]:
        return set(model.__pydantic_decorators__.field_validators)  # type: ignore[attr-defined]

    every = [name for group in GROUPS for name in checks(group)]
    assert len(every) == len(set(every)) and set(every) == checks(Settings)
    # Settings is exactly the groups load_settings checks, and each field belongs to one group.
    assert Settings.__bases__ == GROUPS
    fields = [name for group in GROUPS for name in group.model_fields]
    assert len(fields) == len(set(fields)) and set(fields) == set(Settings.model_fields)


@pytest.mark.parametrize(
    ("name", "value", "field", "expected"),
    [
        ("MPI_OPERATOR_LOG_FORMAT", " JSON ", "log_format", "json"),
        ("MPI_OPERATOR_EVENTS", " Auto ", "events", "auto"),
        ("MPI_OPERATOR_EVENTS", "FALSE", "events", "off"),
        ("MPI_OPERATOR_CALLER_AUTH", "OFF", "caller_auth", "off"),
    ],
)
def test_choices_are_read_as_written_in_any_case(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, field: str, expected: str
) -> None:
    monkeypatch.setenv(name, value)
    assert getattr(load_settings(), field) == expected


def test_a_bad_choice_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _error(monkeypatch, "MPI_OPERATOR_METACONTROLLER_APPLY_STRATEGY", "apply")
    assert "MPI_OPERATOR_METACONTROLLER_APPLY_STRATEGY: Input should be 'dynamic-apply' or" in message


def _seeded(monkeypatch: pytest.MonkeyPatch, path: Path, content: bytes) -> SeededKeys:
    path.write_bytes(content)
    monkeypatch.setenv(SEED, str(path))
    keys = load_settings().keys
    assert isinstance(keys, SeededKeys)
    return keys


def test_seeded_keys_are_deterministic_per_uid(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys = _seeded(monkeypatch, tmp_path / "seed", SEED_CONTENT[:MIN_SEED_BYTES])
    first = keys("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40")
    assert first.private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert first.public_line.startswith(b"ecdsa-sha2-nistp521 ")
    assert first.public_line.endswith(b"\n")
    # Same seed and UID: the same key, also from a fresh load (another replica, a restart).
    assert keys("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40") == first
    assert load_settings().keys("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40") == first
    # Another UID, another key.
    other = keys("5d0c2c1e-0000-4000-8000-000000000000")
    assert other.private_pem != first.private_pem
    assert other.public_line != first.public_line
    # Neither the seed nor the private key shows in a repr.
    assert SEED_CONTENT[:MIN_SEED_BYTES].decode() not in repr(keys)
    assert b"PRIVATE" not in repr(first).encode()


def test_another_seed_gives_another_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    uid = "3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40"
    one = _seeded(monkeypatch, tmp_path / "one", b"a" * MIN_SEED_BYTES)(uid)
    two = _seeded(monkeypatch, tmp_path / "two", b"b" * MIN_SEED_BYTES)(uid)
    assert one.private_pem != two.private_pem


# --- mpijob serve stops at once on a bad setting -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [(DOMAIN, "Bad_Domain!"), (SEED, "/nonexistent/mpi-operator-hook/seed")],
    ids=["cluster-domain", "seed-file"],
)
def test_serve_with_a_bad_setting_exits_with_a_clear_message(name: str, value: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
    env[name] = value
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "app.cli.program", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode != 0
    assert time.monotonic() - started < 20
    assert done.stderr.startswith("mpijob serve: invalid hook settings: ")
    assert name in done.stderr
    assert "Traceback" not in done.stderr
    assert "Uvicorn running" not in done.stderr + done.stdout


# ------------------------------------------------------------------------------------------ Events


@pytest.fixture
def in_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """What a Pod sees: the API server's Service in the environment, the token and CA mounted (here at
    tmp_path, pointed to by the settings that default to the kubelet's mount)."""
    for name, value in {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "token").write_text("token")
    (tmp_path / "ca.crt").write_text("ca")
    monkeypatch.setenv("MPI_OPERATOR_EVENTS_TOKEN_FILE", str(tmp_path / "token"))
    monkeypatch.setenv("MPI_OPERATOR_EVENTS_CA_FILE", str(tmp_path / "ca.crt"))
    return tmp_path


def test_events_are_off_outside_a_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings = load_settings()
    assert settings.events == "auto"
    assert settings.events_access() is None


def test_events_are_on_in_a_cluster(in_cluster: Path) -> None:
    access = load_settings().events_access()
    assert access is not None
    assert access.server == "https://10.96.0.1:443"
    assert (access.token_file, access.ca_file) == (in_cluster / "token", in_cluster / "ca.crt")


def test_events_in_an_ipv6_cluster(in_cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    access = load_settings().events_access()
    assert access is not None and access.server == "https://[fd00::1]:443"


def test_events_need_the_mounted_token_and_ca_in_auto_mode(in_cluster: Path) -> None:
    (in_cluster / "ca.crt").unlink()
    assert load_settings().events_access() is None
    (in_cluster / "ca.crt").write_text("ca")
    (in_cluster / "token").unlink()
    assert load_settings().events_access() is None


@pytest.mark.parametrize("value", ["off", "OFF", "false"])
def test_events_off_switch(in_cluster: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MPI_OPERATOR_EVENTS", value)
    assert load_settings().events_access() is None


def test_events_with_an_explicit_api_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    (tmp_path / "token").write_text("token")
    monkeypatch.setenv("MPI_OPERATOR_EVENTS_API_SERVER", "https://api.example.com:6443/")
    monkeypatch.setenv("MPI_OPERATOR_EVENTS_TOKEN_FILE", str(tmp_path / "token"))
    monkeypatch.setenv("MPI_OPERATOR_EVENTS_CA_FILE", str(tmp_path / "absent-ca.crt"))
    access = load_settings().events_access()
    assert access is not None
    assert access.server == "https://api.example.com:6443"
    assert access.ca_file is None  # the system's CAs


def test_events_on_without_an_api_server_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    message = _error(monkeypatch, "MPI_OPERATOR_EVENTS", "on")
    assert "MPI_OPERATOR_EVENTS=on needs an API server" in message


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("MPI_OPERATOR_EVENTS", "sometimes", "Input should be 'auto', 'on' or 'off'"),
        ("MPI_OPERATOR_EVENTS_API_SERVER", "api.example.com", "must be an http(s) URL"),
        ("MPI_OPERATOR_EVENTS_QUEUE_SIZE", "0", "greater than or equal to 1"),
    ],
)
def test_bad_events_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    message = _error(monkeypatch, name, value)
    assert name in message and words in message
