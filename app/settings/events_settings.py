"""The Kubernetes Events the hook posts about MPIJobs: whether, where, how fast (``app.server.events``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path

from pydantic import Field, field_validator

from app.kube.in_cluster import SERVICE_ACCOUNT_DIR, EventsAccess, in_cluster_server
from app.settings.base import SettingsGroup, as_written


class EventsMode(StrEnum):
    AUTO = "auto"  # in a cluster, or with an API server set
    ON = "on"  # a start-up error when impossible
    OFF = "off"


# The words ``MPI_OPERATOR_EVENTS`` also takes, as a boolean.
_EVENTS_SYNONYMS = {"true": EventsMode.ON, "false": EventsMode.OFF}


class EventsSettings(SettingsGroup):
    events: EventsMode = Field(
        default=EventsMode.AUTO,
        description="Post Kubernetes Events about MPIJobs: 'auto' (in a cluster, or with an API server "
        "set), 'on' (a start-up error when impossible) or 'off'.",
    )
    events_api_server: str = Field(
        default="", description="API server URL for Events (default: the in-cluster KUBERNETES_SERVICE_*)."
    )
    events_token_file: Path = Field(
        default=SERVICE_ACCOUNT_DIR / "token",
        description="Bearer token file for Events, looked at every second (off the event loop) and re-read"
        " when it changes (the kubelet rotates bound tokens).",
    )
    events_ca_file: Path = Field(
        default=SERVICE_ACCOUNT_DIR / "ca.crt",
        description="CA bundle that signs the API server's certificate (absent: the system's CAs).",
    )
    events_queue_size: int = Field(
        default=1000, ge=1, le=1_000_000, description="Events waiting to be posted; more are dropped."
    )
    events_namespace_burst: int = Field(
        default=100, ge=1, le=1_000_000, description="Events one namespace may post at once; more wait."
    )
    events_namespace_per_second: float = Field(
        default=1.0, gt=0, le=10_000, description="Events per second one namespace may post, on average."
    )
    events_total_burst: int = Field(
        default=1000, ge=1, le=1_000_000, description="Events all namespaces together may post at once."
    )
    events_total_per_second: float = Field(
        default=20.0, gt=0, le=100_000, description="Events per second all namespaces together may post."
    )

    @field_validator("events", mode="before")
    @classmethod
    def _events(cls, value: object) -> object:
        word = as_written(value)
        return _EVENTS_SYNONYMS.get(word, word) if isinstance(word, str) else word

    @field_validator("events_api_server")
    @classmethod
    def _api_server(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not re.match(r"^https?://[^/?#\s]+(/[^?#\s]*)?$", value):
            raise ValueError("must be an http(s) URL such as 'https://10.96.0.1:443'")
        return value

    def events_access(self, environ: Mapping[str, str] | None = None) -> EventsAccess | None:
        """Where to post Events, or None when they are off. ``auto`` turns them on with an explicit API
        server, or in a Pod whose service-account token and CA are mounted; ``on`` whenever the token file
        exists; ``off`` never. Looks at the files: start-up calls it, never validation."""
        if self.events == EventsMode.OFF:
            return None
        server = self.events_api_server or in_cluster_server(os.environ if environ is None else environ)
        if not server or not self.events_token_file.is_file():
            return None
        ca_file = self.events_ca_file if self.events_ca_file.is_file() else None
        if self.events == EventsMode.AUTO and not self.events_api_server and ca_file is None:
            return None
        return EventsAccess(server, self.events_token_file, ca_file)

    def file_problems(self) -> list[str]:
        """``MPI_OPERATOR_EVENTS=on`` where Events cannot be posted (no API server, or no token file)."""
        if self.events == EventsMode.ON and self.events_access() is None:
            return [
                "MPI_OPERATOR_EVENTS=on needs an API server (MPI_OPERATOR_EVENTS_API_SERVER, or "
                "KUBERNETES_SERVICE_HOST and _PORT in a Pod) and a readable MPI_OPERATOR_EVENTS_TOKEN_FILE"
            ]
        return []
