"""Hook settings from ``MPI_OPERATOR_*`` environment variables, mirroring the Go operator's flags.

Validated once at start-up: a bad value stops the process with a message naming the variable.
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.core.config import SyncConfig
from app.kube.gang import gang_scheduler
from app.kube.keys import MIN_SEED_BYTES, KeySource, SeededKeys, random_keys

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MPI_OPERATOR_", frozen=True, extra="ignore")

    cluster_domain: str = Field(
        default="", description="Like --cluster-domain: suffix of the host names in the hostfile."
    )
    gang_scheduling: str = Field(
        default="", description="Like --gang-scheduling: 'volcano', another scheduler name, or empty."
    )
    ssh_key_seed_file: Path | None = Field(
        default=None,
        description="File with >= 32 secret bytes; SSH keys are derived from it and the job UID.",
    )
    log_level: str = Field(default="INFO", description="Python log level of the hook.")
    log_format: str = Field(default="text", description="'text' or 'json' (one JSON object per line).")
    max_body_bytes: int = Field(
        default=160 * 1024 * 1024,
        ge=1024,
        description="Largest hook request body, enforced while reading (chunked included): 413 beyond.",
    )
    memory_budget_bytes: int = Field(
        default=160 * 1024 * 1024,
        ge=1024,
        description="Request bytes admitted at once; a request waits for room (503 after the wait).",
    )
    admission_wait_seconds: float = Field(
        default=20.0, gt=0, description="How long a request may wait for room in the memory budget."
    )
    read_timeout_seconds: float = Field(
        default=20.0, gt=0, description="Time to receive a whole request body: 408 beyond."
    )
    job_info_ttl_seconds: float = Field(
        default=7200.0, gt=0, description="mpi_operator_job_info drops a job not synced for this long."
    )
    metrics_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="A second port serving only /metrics (0: none; /metrics is always on the main port).",
    )
    metacontroller_apply_strategy: str = Field(
        default="dynamic-apply",
        description="Metacontroller's --apply-strategy: sizes the largest ConfigMap a job may need.",
    )

    @field_validator("cluster_domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        value = value.strip().strip(".")
        if value and (len(value) > 253 or not _DNS1123_SUBDOMAIN.match(value)):
            raise ValueError("must be a DNS subdomain such as 'cluster.local'")
        return value

    @field_validator("gang_scheduling")
    @classmethod
    def _scheduler(cls, value: str) -> str:
        value = value.strip()
        if value and not _DNS1123_SUBDOMAIN.match(value):
            raise ValueError("must be empty, 'volcano' or a scheduler name (a DNS subdomain)")
        return value

    @field_validator("ssh_key_seed_file", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("ssh_key_seed_file")
    @classmethod
    def _seed_file(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        try:
            size = len(value.read_bytes())
        except OSError as err:
            raise ValueError(f"cannot read {value}: {err.strerror}") from None
        if size < MIN_SEED_BYTES:
            raise ValueError(f"{value} must hold at least {MIN_SEED_BYTES} bytes")
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        value = value.upper()
        if value not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR")
        return value

    @field_validator("log_format")
    @classmethod
    def _log_format(cls, value: str) -> str:
        value = value.lower()
        if value not in {"text", "json"}:
            raise ValueError("must be 'text' or 'json'")
        return value

    @field_validator("metacontroller_apply_strategy")
    @classmethod
    def _apply_strategy(cls, value: str) -> str:
        if value not in {"dynamic-apply", "server-side-apply"}:
            raise ValueError("must be 'dynamic-apply' or 'server-side-apply'")
        return value

    @property
    def annotation_budget(self) -> bool:
        """dynamic-apply copies each child into a 256 KiB annotation, which bounds its size."""
        return self.metacontroller_apply_strategy == "dynamic-apply"

    @functools.cached_property
    def sync_config(self) -> SyncConfig:
        return SyncConfig(self.cluster_domain, gang_scheduler(self.gang_scheduling), self.annotation_budget)

    def key_source(self) -> KeySource:
        if self.ssh_key_seed_file is None:
            return random_keys
        # A job without a UID gets a random key; the hook's log says so (keys.py, README).
        warn = logging.getLogger("mpi_operator_hook.keys").warning
        return SeededKeys(self.ssh_key_seed_file.read_bytes(), on_fallback=warn)


class SettingsError(RuntimeError):
    """Start-up configuration is invalid; the message names each bad variable."""


def load_settings() -> Settings:
    from pydantic import ValidationError

    try:
        return Settings()
    except ValidationError as err:
        problems = "; ".join(
            f"MPI_OPERATOR_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in err.errors()
        )
        raise SettingsError(f"invalid hook settings: {problems}") from None
