"""The request recorder: each hook request and its answer, redacted, for ``mpijob replay``
(``app.server.record``)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, field_validator

from app.settings.base import SettingsGroup, env_name


class RecorderSettings(SettingsGroup):
    record_dir: Path | None = Field(
        default=None,
        description="A writable directory: each /sync and /customize request and its answer are written "
        "there, redacted, for `mpijob replay` (unset: nothing is recorded).",
    )
    record_max_requests: int = Field(
        default=1000, ge=1, le=1_000_000, description="Recorded requests kept; the oldest go first."
    )
    record_max_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=64 * 1024,
        description="Bytes the recorded requests may take on disk; the oldest go first.",
    )

    @field_validator("record_dir", mode="before")
    @classmethod
    def _record_dir_unset_when_empty(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    def file_problems(self) -> list[str]:
        """The record directory, which must exist and be writable."""
        if self.record_dir is None:
            return []
        if not self.record_dir.is_dir():
            return [f"{env_name('record_dir')}: {self.record_dir} must be an existing directory"]
        if not os.access(self.record_dir, os.W_OK | os.X_OK):
            return [f"{env_name('record_dir')}: {self.record_dir} must be writable by the hook"]
        return []
