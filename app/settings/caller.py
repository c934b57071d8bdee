"""Who may call ``/sync`` and ``/customize`` (``app.server.auth``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from app.settings.base import SettingsGroup, as_written

# Where deploy/ mounts the Secret whose token Metacontroller sends (deploy/base/deployment.yaml).
CALLER_TOKEN_FILE = Path("/etc/mpi-operator-hook/caller/token")


class CallerSettings(SettingsGroup):
    caller_auth: Literal["token", "off"] = Field(
        default="token",
        description="Who may call /sync and /customize: 'token' (only a caller that sends "
        "Authorization: Bearer <MPI_OPERATOR_CALLER_TOKEN_FILE's token>) or 'off' (anyone: local use only).",
    )
    caller_token_file: Path = Field(
        default=CALLER_TOKEN_FILE,
        description="The token Metacontroller sends (deploy/ mounts its Secret here); a regular file of at"
        " most 8 KiB, looked at every second off the event loop and re-read on change.",
    )
    caller_token_grace_seconds: float = Field(
        default=600.0,
        ge=0,
        le=86400,
        description="After the token file changes, how long the previous token is still accepted.",
    )

    @field_validator("caller_auth", mode="before")
    @classmethod
    def _caller_auth(cls, value: object) -> object:
        return as_written(value)
