"""What the hook tells its operators: the log's level and format, and how many jobs its metrics keep."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from app.settings.base import SettingsGroup, as_written


class ObservabilitySettings(SettingsGroup):
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Python log level of the hook."
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="'text' or 'json' (one JSON object per line)."
    )
    job_info_ttl_seconds: float = Field(
        default=7200.0, gt=0, description="mpi_operator_job_info drops a job not synced for this long."
    )
    job_info_max_series: int = Field(
        default=5000,
        ge=1,
        description="mpi_operator_job_info keeps at most this many jobs, dropping the least recently synced.",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: object) -> object:
        return as_written(value, str.upper)

    @field_validator("log_format", mode="before")
    @classmethod
    def _format(cls, value: object) -> object:
        return as_written(value)
