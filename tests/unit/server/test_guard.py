"""The body guard's admission decisions, case by case: what a request is charged, when, and when its deadline
has passed. The guard is called as uvicorn calls it (an ASGI scope, receive, send), with an endpoint that
only counts its calls; ``test_hostile_clients.py`` checks the same through a real ``mpijob serve``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.server.budget import ByteBudget
from app.server.connections import ARRIVED
from app.server.guard import CHARGE_STEP_BYTES, LATE, BodyGuard, Limits

WAIT = 1.0


class Recorder:
    """What the guard did: the endpoint's calls, the budget's levels, the answer's status and body."""

    def __init__(self) -> None:
        self.calls = 0
        self.levels: list[int] = []
        self.sent: list[dict[str, Any]] = []

    async def endpoint(self, body: bytes) -> tuple[int, bytes]:
        self.calls += 1
        return 200, b'{"ok":true}'

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])


def guard_for(recorder: Recorder, budget: int = 1 << 20) -> BodyGuard:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("only /sync is asked here")

    limits = Limits(max_body_bytes=budget, admission_wait_seconds=WAIT, read_timeout_seconds=5.0)
    byte_budget = ByteBudget(budget, recorder.levels.append)
    return BodyGuard(app, limits, {"/sync": recorder.endpoint}, budget=byte_budget)


def scope(headers: list[tuple[bytes, bytes]], arrived_ago: float | None) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "http", "method": "POST", "path": "/sync", "headers": headers}
    if arrived_ago is not None:
        found[ARRIVED] = asyncio.get_running_loop().time() - arrived_ago
    return found


def chunks(*parts: bytes, pause: float = 0.0) -> Callable[[], Awaitable[dict[str, Any]]]:
    """``receive`` for a body sent in ``parts``, ``pause`` seconds apart."""
    queue = list(parts)

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(pause)
        part = queue.pop(0)
        return {"type": "http.request", "body": part, "more_body": bool(queue)}

    return receive


def run(coroutine: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, 10))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arrived_ago", "status", "calls"),
    [
        pytest.param(None, 200, 1, id="no arrival stamp: counted from now"),
        pytest.param(WAIT / 2, 200, 1, id="within the deadline: answered"),
        pytest.param(WAIT * 2, 503, 0, id="past the deadline: 503 at once, no work done"),
    ],
)
def test_the_deadline_counts_from_the_headers(arrived_ago: float | None, status: int, calls: int) -> None:
    recorder = Recorder()

    async def case() -> None:
        headers = [(b"content-length", b"2")]
        await guard_for(recorder)(scope(headers, arrived_ago), chunks(b"{}"), recorder.send)

    run(case())
    assert (recorder.status, recorder.calls) == (status, calls)
    if status == 503:
        assert LATE.encode() in recorder.sent[1]["body"]
        assert (b"connection", b"close") in recorder.sent[0]["headers"]
    assert recorder.levels[-1] == 0  # whatever happened, the budget is whole again


def test_reading_the_body_does_not_count_towards_the_deadline() -> None:
    recorder = Recorder()

    async def case() -> None:
        headers = [(b"content-length", b"4")]
        slow = chunks(b"{", b'"', b'"', b"}", pause=WAIT / 3)  # ~1.3 s of reading, after 0.5 s of waiting
        await guard_for(recorder)(scope(headers, WAIT / 2), slow, recorder.send)

    run(case())
    assert (recorder.status, recorder.calls) == (200, 1)


def test_a_declared_body_is_charged_at_once_a_chunked_one_as_it_arrives() -> None:
    declared, chunked = Recorder(), Recorder()

    async def case() -> None:
        await guard_for(declared)(
            scope([(b"content-length", b"1000")], 0), chunks(b"x" * 1000), declared.send
        )
        parts = [b"x" * 10] * 3
        await guard_for(chunked, budget=4 << 20)(scope([], 0), chunks(*parts), chunked.send)

    run(case())
    assert declared.levels == [1000, 0]
    # Not the 4 MiB body cap: 10 bytes and a step, once; the rest of the body fits in what was charged.
    assert chunked.levels == [10 + CHARGE_STEP_BYTES, 0]


def test_a_request_that_finds_no_room_waits_until_its_deadline_then_503() -> None:
    recorder, holder = Recorder(), Recorder()

    async def case() -> None:
        guard = guard_for(recorder, budget=1000)
        stuck = asyncio.Event()

        async def never() -> dict[str, Any]:
            await stuck.wait()
            return {"type": "http.disconnect"}

        held = asyncio.create_task(guard(scope([(b"content-length", b"1000")], 0), never, holder.send))
        await asyncio.sleep(0.05)  # the holder has the whole budget, its body never comes
        started = asyncio.get_running_loop().time()
        await guard(scope([(b"content-length", b"10")], 0), chunks(b"x" * 10), recorder.send)
        assert WAIT * 0.9 <= asyncio.get_running_loop().time() - started < WAIT * 2
        stuck.set()
        await held

    run(case())
    assert (recorder.status, recorder.calls) == (503, 0)
