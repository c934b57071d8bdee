"""The SSH keys' seed: random keys per job, or keys derived from a secret file and the job's UID, so every
replica of the hook writes the same Secret (``app.kube.keys``)."""

from __future__ import annotations

import functools
import logging
import os
import stat
from pathlib import Path

from pydantic import Field, field_validator

from app.kube.keys import MIN_SEED_BYTES, KeySource, SeededKeys, random_keys
from app.settings.base import SettingsGroup, env_name, invalid

# A seed is 32 or more secret bytes; a file far larger is not one, and is never read whole.
MAX_SEED_BYTES = 64 * 1024
SEED = env_name("ssh_key_seed_file")


class KeySeedSettings(SettingsGroup):
    ssh_key_seed_file: Path | None = Field(
        default=None,
        description="File with >= 32 secret bytes; SSH keys are derived from it and the job UID.",
    )

    @field_validator("ssh_key_seed_file", mode="before")
    @classmethod
    def _seed_unset_when_empty(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    def file_problems(self) -> list[str]:
        """The seed file looked at (its metadata; ``keys`` reads it, once)."""
        path = self.ssh_key_seed_file
        if path is None:
            return []
        try:
            info = path.stat()
        except OSError as err:
            return [f"{SEED}: cannot read {path}: {err.strerror}"]
        if not stat.S_ISREG(info.st_mode):
            return [f"{SEED}: cannot read {path}: not a regular file"]
        problem = _size_problem(path, info.st_size)
        return [f"{SEED}: {problem}"] if problem else []

    @functools.cached_property
    def keys(self) -> KeySource:
        """Random keys, or keys derived from the seed file, read here once and bounded: ``SettingsError``
        naming the variable and the problem when it cannot be used, never the content."""
        if self.ssh_key_seed_file is None:
            return random_keys
        try:
            seed = _read_seed(self.ssh_key_seed_file)
        except ValueError as err:
            raise invalid(f"{SEED}: {err}") from None
        # A job without a UID gets a random key; the hook's log says so (keys.py, README).
        warn = logging.getLogger("mpi_operator_hook.keys").warning
        return SeededKeys(seed, on_fallback=warn)


def _read_seed(path: Path) -> bytes:
    """The seed in ``path``, a regular file (a FIFO swapped in is refused without blocking); ``ValueError``
    saying what is wrong."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(f"cannot read {path}: not a regular file")
        try:
            seed = file.read(MAX_SEED_BYTES + 1)
        except OSError as err:
            raise ValueError(f"cannot read {path}: {err.strerror}") from None
    problem = _size_problem(path, len(seed))
    if problem:
        raise ValueError(problem)
    return seed


def _size_problem(path: Path, size: int) -> str | None:
    if size < MIN_SEED_BYTES:
        return f"{path} must hold at least {MIN_SEED_BYTES} bytes"
    if size > MAX_SEED_BYTES:
        return f"{path} holds more than {MAX_SEED_BYTES // 1024} KiB: not a seed"
    return None
