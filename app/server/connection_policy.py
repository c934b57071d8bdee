"""How many connections a hook process keeps, and which one makes room: the policy that
``connections.GuardedProtocol`` asks as connections open, go idle, get busy and close
(``tests/unit/server/test_connections.py`` has its cases).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.server import logs
from app.server.budget import ByteBudget
from app.settings.transport import TransportSettings

log = logging.getLogger("mpi_operator_hook")


class OpenConnection(Protocol):
    """What the policy needs of a connection (``connections.GuardedProtocol``): to be told to make room."""

    def evict(self) -> None: ...


# A connection is evicted only once it has been idle this long: a burst of new callers gets its turn.
MIN_IDLE_SECONDS = 1.0
# One log line per this many seconds for connections closed by a limit, with how many since the last line.
REFUSED_LOG_SECONDS = 60.0
# Why a connection was closed by a limit: the label values of mpi_operator_hook_connections_closed_total.
CLOSE_REASONS = (
    "header_timeout", "header_too_large", "read_timeout", "write_timeout", "evicted", "too_many_connections",
    "pipeline_full", "http_version", "no_host", "upgrade", "malformed",
)  # fmt: skip


def _default(name: str) -> Any:
    return TransportSettings.model_fields[name].default


@dataclass(frozen=True)
class ConnectionLimits:
    """One server process's transport limits, with the settings' defaults (``app/settings/transport.py``)."""

    max_connections: int = _default("max_connections")
    max_header_bytes: int = _default("max_header_bytes")
    header_timeout_seconds: float = _default("header_timeout_seconds")
    read_timeout_seconds: float = _default("read_timeout_seconds")
    # The protocol's body deadline stands behind the body guard's (same length, started a little later):
    # this much later, so that on the hooks the guard answers and counts first.
    body_deadline_grace_seconds: float = 1.0

    @classmethod
    def of(cls, settings: TransportSettings) -> ConnectionLimits:
        return cls(
            max_connections=settings.max_connections,
            max_header_bytes=settings.max_header_bytes,
            header_timeout_seconds=settings.header_timeout_seconds,
            read_timeout_seconds=settings.read_timeout_seconds,
        )


@dataclass
class ConnectionPolicy:
    """The limits of one server process and the connections it has open, oldest idle first. ``budget``:
    the memory budget waiting pipelined requests are charged to (None: not charged, only counted)."""

    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    on_refuse: Callable[[str], None] = lambda reason: None
    on_open: Callable[[int], None] = lambda count: None
    clock: Callable[[], float] = time.monotonic
    budget: ByteBudget | None = None
    _open: int = 0
    # Connections with no request in progress, in the order they became so (the first is evicted first).
    _idle: dict[OpenConnection, float] = field(default_factory=dict)
    _log: logs.Throttle = field(default_factory=lambda: logs.Throttle(REFUSED_LOG_SECONDS))

    def admit(self, protocol: OpenConnection) -> bool:
        """Room for a new connection: by evicting the longest idle one when full; False when none has been
        idle for ``MIN_IDLE_SECONDS`` (a burst of new callers is not evicted before it could speak)."""
        if self._open >= self.limits.max_connections:
            victim = self._evictable()
            if victim is None:
                return False
            victim.evict()
        self._open += 1
        self.on_open(self._open)
        self.idle(protocol)
        return True

    def _evictable(self) -> OpenConnection | None:
        for protocol, since in self._idle.items():
            return protocol if self.clock() - since >= MIN_IDLE_SECONDS else None
        return None

    def idle(self, protocol: OpenConnection) -> None:
        self._idle.pop(protocol, None)
        self._idle[protocol] = self.clock()

    def busy(self, protocol: OpenConnection) -> None:
        self._idle.pop(protocol, None)

    def closed(self, protocol: OpenConnection) -> None:
        self._idle.pop(protocol, None)
        self._open -= 1
        self.on_open(self._open)

    def take_bytes(self, amount: int) -> bool:
        """Charge a waiting request's bytes, if the budget has room now."""
        return self.budget is None or self.budget.try_take(amount)

    def charge_bytes(self, amount: int) -> bool:
        """Charge bytes already received, room or not: whether the budget still has room."""
        return self.budget is None or self.budget.charge(amount)

    def give_bytes(self, amount: int) -> None:
        if self.budget is not None and amount:
            self.budget.release(amount)

    def refused(self, reason: str) -> None:
        """Count a connection closed by a limit; log at most one line a minute, however many there are."""
        self.on_refuse(reason)
        held = self._log.admit()
        if held is not None:
            logs.event(log, logging.WARNING, "connection closed by a limit", reason=reason, since_last=held)

    @property
    def open_connections(self) -> int:
        return self._open


def find_policy(app: Any) -> ConnectionPolicy | None:
    """The policy of the app uvicorn serves, under whatever middleware uvicorn wrapped it in."""
    for _ in range(8):
        policy = getattr(app, "connection_policy", None)
        if isinstance(policy, ConnectionPolicy):
            return policy
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


def default_policy(config: Any) -> ConnectionPolicy:
    """For an app without a policy: the defaults, one per server (its config), so that its connections are
    counted together."""
    policy: ConnectionPolicy | None = getattr(config, "mpi_operator_hook_connections", None)
    if policy is None:
        policy = ConnectionPolicy()
        config.mpi_operator_hook_connections = policy
    return policy
