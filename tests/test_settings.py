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

ROOT = Path(__file__).resolve().parents[1]
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
    assert settings.key_source() is random_keys


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
    assert settings.key_source() is random_keys


def _seeded(monkeypatch: pytest.MonkeyPatch, path: Path, content: bytes) -> SeededKeys:
    path.write_bytes(content)
    monkeypatch.setenv(SEED, str(path))
    keys = load_settings().key_source()
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
    assert load_settings().key_source()("3e1f7c52-9a4d-4c0b-8f6e-2b7d1a9c5e40") == first
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
        [sys.executable, "-m", "app.cli.main", "serve", "--port", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert done.returncode != 0
    assert time.monotonic() - started < 20
    assert done.stderr.startswith("mpijob: ")
    assert name in done.stderr
    assert "Traceback" not in done.stderr
    assert "Uvicorn running" not in done.stderr + done.stdout
