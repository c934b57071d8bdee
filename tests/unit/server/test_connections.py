"""The connection policy's decisions, case by case: who is admitted, who is evicted to make room, what is
counted. ``test_hostile_clients.py`` drives the same policy through a real ``mpijob serve``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.server.connection_policy import (
    MIN_IDLE_SECONDS,
    ConnectionLimits,
    ConnectionPolicy,
    default_policy,
    find_policy,
)


@dataclass(eq=False)
class FakeConnection:
    """Stands in for a ``GuardedProtocol``: the policy only calls ``evict`` on it."""

    name: str
    policy: ConnectionPolicy
    evicted: list[str] = field(default_factory=list)

    def evict(self) -> None:
        self.evicted.append(self.name)
        self.policy.closed(self)  # type: ignore[arg-type]  # as GuardedProtocol._stop does


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def policy_of(max_connections: int, clock: Clock, refused: list[str]) -> ConnectionPolicy:
    return ConnectionPolicy(
        ConnectionLimits(max_connections=max_connections), on_refuse=refused.append, clock=clock
    )


def open_connections(policy: ConnectionPolicy, names: str) -> dict[str, FakeConnection]:
    connections = {}
    for name in names:
        connection = FakeConnection(name, policy)
        assert policy.admit(connection)  # type: ignore[arg-type]
        connections[name] = connection
    return connections


# (opened: who opens, in order; busy: who has a request in progress; idle for: seconds since; then one more)
CASES = [
    pytest.param("ab", "", 0.0, True, "", id="room: admitted, nobody evicted"),
    pytest.param("abc", "", MIN_IDLE_SECONDS, True, "a", id="full: the longest idle makes room"),
    pytest.param("abc", "a", MIN_IDLE_SECONDS, True, "b", id="full: a busy one is never evicted"),
    pytest.param("abc", "", MIN_IDLE_SECONDS / 2, False, "", id="full of new callers: the newcomer waits"),
    pytest.param("abc", "abc", 60.0, False, "", id="full and all busy: the newcomer is refused"),
]


@pytest.mark.parametrize(("opened", "busy", "idle_for", "admitted", "evicted"), CASES)
def test_who_is_admitted_and_who_makes_room(
    opened: str, busy: str, idle_for: float, admitted: bool, evicted: str
) -> None:
    clock, refused = Clock(), list[str]()
    policy = policy_of(3, clock, refused)
    connections = open_connections(policy, opened)
    for name in busy:
        policy.busy(connections[name])  # type: ignore[arg-type]
    clock.now += idle_for
    assert policy.admit(FakeConnection("new", policy)) is admitted  # type: ignore[arg-type]
    assert "".join(name for c in connections.values() for name in c.evicted) == evicted
    assert policy.open_connections == len(opened) - len(evicted) + admitted


def test_a_connection_idle_again_after_its_request_goes_to_the_back() -> None:
    clock, refused = Clock(), list[str]()
    policy = policy_of(2, clock, refused)
    connections = open_connections(policy, "ab")
    policy.busy(connections["a"])  # type: ignore[arg-type]
    clock.now += 5
    policy.idle(connections["a"])  # type: ignore[arg-type]  # answered: idle since now
    clock.now += MIN_IDLE_SECONDS
    assert policy.admit(FakeConnection("c", policy))  # type: ignore[arg-type]
    assert connections["b"].evicted == ["b"] and connections["a"].evicted == []


def test_closing_frees_the_slot_and_reports_the_count() -> None:
    counts: list[int] = []
    policy = ConnectionPolicy(ConnectionLimits(max_connections=1), on_open=counts.append)
    connections = open_connections(policy, "a")
    policy.closed(connections["a"])  # type: ignore[arg-type]
    assert policy.admit(FakeConnection("b", policy))  # type: ignore[arg-type]
    assert counts == [1, 0, 1]


def test_refusals_are_counted_each_and_logged_at_most_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    clock, refused = Clock(), list[str]()
    policy = policy_of(1, clock, refused)
    for _ in range(500):
        policy.refused("header_timeout")
    assert refused == ["header_timeout"] * 500
    assert len([r for r in caplog.records if "closed by a limit" in r.getMessage()]) <= 1


class Wrapper:
    def __init__(self, app: object) -> None:
        self.app = app


class Carrier:
    def __init__(self, policy: ConnectionPolicy) -> None:
        self.connection_policy = policy


def test_the_policy_is_found_under_uvicorns_middleware_and_shared_when_absent() -> None:
    policy = ConnectionPolicy()
    assert find_policy(Wrapper(Wrapper(Carrier(policy)))) is policy
    assert find_policy(Wrapper(object())) is None
    config, other = Wrapper(None), Wrapper(None)
    assert default_policy(config) is default_policy(
        config
    )  # one per server: its connections counted together
    assert default_policy(config) is not default_policy(other)
