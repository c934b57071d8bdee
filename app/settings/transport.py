"""How the hook's server takes requests: connections, headers, bodies, memory and deadlines, on the main port
and the metrics port. ``app.server.connection_policy`` reads its defaults here."""

from __future__ import annotations

from pydantic import Field

from app.settings.base import SettingsGroup


class TransportSettings(SettingsGroup):
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
    metrics_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="A second port serving only /metrics (0: none; /metrics is always on the main port).",
    )
