"""Hook settings from ``MPI_OPERATOR_*`` environment variables, mirroring the Go operator's flags.

Validated once at start-up: a bad value stops the process with a message naming the variable.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.api.child_names import cluster_domain_setting
from app.api.hostfile_order_annotations import parse_labels
from app.core.config import SyncConfig
from app.kube.gang import gang_scheduler, gang_setting
from app.kube.in_cluster import SERVICE_ACCOUNT_DIR, EventsAccess, in_cluster_server
from app.kube.keys import MIN_SEED_BYTES, KeySource, SeededKeys, random_keys
from app.kube.label_selector import parse_selector

# The settings an answer depends on (the SSH key seed changes only key material, which replay ignores).
ANSWER_SETTINGS = (
    "cluster_domain",
    "gang_scheduling",
    "metacontroller_apply_strategy",
    "hostfile_order_labels",
    "hostfile_order_node_selector",
)
EVENTS_MODES = {"auto": "auto", "on": "on", "true": "on", "off": "off", "false": "off"}
CALLER_AUTH_MODES = ("token", "off")
# Where deploy/ mounts the Secret whose token Metacontroller sends (deploy/base/deployment.yaml).
CALLER_TOKEN_FILE = Path("/etc/mpi-operator-hook/caller/token")
# Well-known labels cloud providers set on every node; finer ones (block, rack) are provider-specific.
DEFAULT_ORDER_LABELS = "topology.kubernetes.io/region,topology.kubernetes.io/zone"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MPI_OPERATOR_", frozen=True, extra="ignore")

    cluster_domain: str = Field(
        default="", description="Like --cluster-domain: suffix of the host names in the hostfile."
    )
    gang_scheduling: str = Field(
        default="",
        description=(
            "Like --gang-scheduling: 'volcano', another scheduler name, or empty; ours: 'kubernetes'."
        ),
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
        default=8.0,
        gt=0,
        le=3600,
        description="How long a hook request may wait, from its headers, for room in the memory budget and"
        " its turn (reading its body not counted): 503 beyond. Below Metacontroller's hook timeout (10 s).",
    )
    read_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        le=3600,
        description="Time to receive a whole request body (408 beyond), and for a client to take up an answer"
        " it stopped reading (dropped beyond).",
    )
    max_connections: int = Field(
        default=2048,
        ge=8,
        le=65536,
        description="Open connections per process; a new one beyond closes the longest idle one.",
    )
    max_header_bytes: int = Field(
        default=32 * 1024,
        ge=4096,
        le=1024 * 1024,
        description="Request line and headers, counted as they arrive: 431 and closed beyond.",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Time for a request's line and headers to arrive, from the connection (or the first byte"
        " after an answer): closed beyond. On the metrics port, the time for the whole exchange.",
    )
    job_info_ttl_seconds: float = Field(
        default=7200.0, gt=0, description="mpi_operator_job_info drops a job not synced for this long."
    )
    job_info_max_series: int = Field(
        default=5000,
        ge=1,
        description="mpi_operator_job_info keeps at most this many jobs, dropping the least recently synced.",
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
    events: str = Field(
        default="auto",
        description="Post Kubernetes Events about MPIJobs: 'auto' (in a cluster, or with an API server "
        "set), 'on' (a start-up error when impossible) or 'off'.",
    )
    events_api_server: str = Field(
        default="", description="API server URL for Events (default: the in-cluster KUBERNETES_SERVICE_*)."
    )
    events_token_file: Path = Field(
        default=SERVICE_ACCOUNT_DIR / "token",
        description="Bearer token file for Events, re-read every minute (bound tokens rotate).",
    )
    events_ca_file: Path = Field(
        default=SERVICE_ACCOUNT_DIR / "ca.crt",
        description="CA bundle that signs the API server's certificate (absent: the system's CAs).",
    )
    events_queue_size: int = Field(
        default=1000, ge=1, le=1_000_000, description="Events waiting to be posted; more are dropped."
    )
    caller_auth: str = Field(
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
    record_dir: Path | None = Field(
        default=None,
        description="A writable directory: each /sync and /customize request and its answer are written "
        "there, redacted, for `mpijob replay` (unset: nothing is recorded).",
    )
    hostfile_order_labels: str = Field(
        default=DEFAULT_ORDER_LABELS, description="Ours: node labels, coarsest first, ordering a hostfile."
    )
    hostfile_order_node_selector: str = Field(
        default="", description="Ours: a label selector: the Nodes an ordered job's sync is sent."
    )
    record_max_requests: int = Field(
        default=1000, ge=1, le=1_000_000, description="Recorded requests kept; the oldest go first."
    )
    record_max_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=64 * 1024,
        description="Bytes the recorded requests may take on disk; the oldest go first.",
    )

    @field_validator("cluster_domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return cluster_domain_setting(value)

    @field_validator("gang_scheduling")
    @classmethod
    def _scheduler(cls, value: str) -> str:
        return gang_setting(value)

    @field_validator("hostfile_order_labels")
    @classmethod
    def _order_labels(cls, value: str) -> str:
        return ",".join(parse_labels(value))

    @field_validator("hostfile_order_node_selector")
    @classmethod
    def _node_selector(cls, value: str) -> str:
        parse_selector(value)
        return value.strip()

    @field_validator("ssh_key_seed_file", "record_dir", mode="before")
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

    @field_validator("record_dir")
    @classmethod
    def _record_dir(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        if not value.is_dir():
            raise ValueError(f"{value} must be an existing directory")
        if not os.access(value, os.W_OK | os.X_OK):
            raise ValueError(f"{value} must be writable by the hook")
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

    @field_validator("events")
    @classmethod
    def _events(cls, value: str) -> str:
        mode = EVENTS_MODES.get(value.strip().lower())
        if mode is None:
            raise ValueError("must be 'auto', 'on' or 'off'")
        return mode

    @field_validator("caller_auth")
    @classmethod
    def _caller_auth(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in CALLER_AUTH_MODES:
            raise ValueError("must be 'token' or 'off'")
        return value

    @field_validator("events_api_server")
    @classmethod
    def _api_server(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not re.match(r"^https?://[^/?#\s]+(/[^?#\s]*)?$", value):
            raise ValueError("must be an http(s) URL such as 'https://10.96.0.1:443'")
        return value

    @model_validator(mode="after")
    def _events_possible(self) -> Settings:
        if self.events == "on" and self.events_access() is None:
            raise ValueError(
                "MPI_OPERATOR_EVENTS=on needs an API server (MPI_OPERATOR_EVENTS_API_SERVER, or "
                "KUBERNETES_SERVICE_HOST and _PORT in a Pod) and a readable MPI_OPERATOR_EVENTS_TOKEN_FILE"
            )
        return self

    def events_access(self, environ: Mapping[str, str] | None = None) -> EventsAccess | None:
        """Where to post Events, or None when they are off. ``auto`` turns them on with an explicit API
        server, or in a Pod whose service-account token and CA are mounted; ``on`` whenever the token file
        exists; ``off`` never."""
        if self.events == "off":
            return None
        server = self.events_api_server or in_cluster_server(os.environ if environ is None else environ)
        if not server or not self.events_token_file.is_file():
            return None
        ca_file = self.events_ca_file if self.events_ca_file.is_file() else None
        if self.events == "auto" and not self.events_api_server and ca_file is None:
            return None
        return EventsAccess(server, self.events_token_file, ca_file)

    def answer_settings(self) -> dict[str, str]:
        """The settings that change the hook's answers, by variable name, where they differ from the
        defaults: what a recorded request needs to be answered the same again (``mpijob replay``)."""
        defaults = answer_setting_defaults()
        values = {env_name(name): str(getattr(self, name)) for name in ANSWER_SETTINGS}
        return {name: value for name, value in values.items() if value != defaults[name]}

    @property
    def annotation_budget(self) -> bool:
        """dynamic-apply copies each child into a 256 KiB annotation, which bounds its size."""
        return self.metacontroller_apply_strategy == "dynamic-apply"

    @functools.cached_property
    def sync_config(self) -> SyncConfig:
        return SyncConfig(
            self.cluster_domain,
            gang_scheduler(self.gang_scheduling),
            self.annotation_budget,
            parse_labels(self.hostfile_order_labels),
        )

    @functools.cached_property
    def node_selector(self) -> dict[str, Any] | None:
        """``MPI_OPERATOR_HOSTFILE_ORDER_NODE_SELECTOR`` as a labelSelector, or None when unset."""
        return (
            parse_selector(self.hostfile_order_node_selector) if self.hostfile_order_node_selector else None
        )

    def key_source(self) -> KeySource:
        if self.ssh_key_seed_file is None:
            return random_keys
        # A job without a UID gets a random key; the hook's log says so (keys.py, README).
        warn = logging.getLogger("mpi_operator_hook.keys").warning
        return SeededKeys(self.ssh_key_seed_file.read_bytes(), on_fallback=warn)


def env_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    return f"MPI_OPERATOR_{field.upper()}"


def answer_setting_defaults() -> dict[str, str]:
    """The default of each setting an answer depends on, by variable name."""
    return {env_name(name): str(Settings.model_fields[name].default) for name in ANSWER_SETTINGS}


class SettingsError(RuntimeError):
    """Start-up configuration is invalid; the message names each bad variable."""


def load_settings() -> Settings:
    from pydantic import ValidationError

    try:
        settings = Settings()
    except ValidationError as err:
        problems = "; ".join(
            f"MPI_OPERATOR_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" if e["loc"] else e["msg"]
            for e in err.errors()
        )
        raise SettingsError(f"invalid hook settings: {problems}") from None
    return settings
