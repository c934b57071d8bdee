"""The one memory budget of a hook process: request bytes held at once, whoever holds them.

Two holders share it: ``guard.BodyGuard`` charges each hook body (and waits for room, under a deadline), and
``connections.GuardedProtocol`` charges the requests a client pipelined behind the one being answered (it
cannot wait: a request that finds no room is not taken, and the connection closes after what it took). So a
pipelining client competes for the same bytes as a body, and the total stays under one setting
(``MPI_OPERATOR_MEMORY_BUDGET_BYTES``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field


class Rejected(Exception):
    """The request is refused before the app sees it; the message is fixed text, never input."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


BUSY = "the hook is busy with other large requests; retry"


@dataclass
class _Waiter:
    amount: int
    granted: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class ByteBudget:
    """A counting semaphore over bytes. Waiters are let in, in arrival order, as soon as each fits; a newcomer
    waits behind anyone already waiting. Taking and giving back never await: the event loop is
    single-threaded, and the protocol's callbacks cannot await."""

    def __init__(self, total: int, on_change: Callable[[int], None] = lambda in_use: None) -> None:
        self.total = total
        self.in_use = 0
        self._on_change = on_change
        self._waiters: list[_Waiter] = []

    def try_take(self, amount: int) -> bool:
        """Take ``amount`` now if it fits and nobody waits before it; never waits."""
        if self._waiters or self.in_use + amount > self.total:
            return False
        self._add(amount)
        return True

    def charge(self, amount: int) -> bool:
        """Count bytes that are already held (received before they could be refused), past the total if need
        be: whether the budget is still within its total. Waiters wait until it is again."""
        self._add(amount)
        return self.in_use <= self.total

    async def acquire(self, amount: int, wait_seconds: float) -> None:
        """Take ``amount`` (at most the total), waiting up to ``wait_seconds`` for room (``Rejected`` 503
        past it)."""
        if self.try_take(amount):
            return
        waiter = _Waiter(amount)
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.granted), wait_seconds)
        except BaseException as err:
            timed_out = isinstance(err, TimeoutError)
            if waiter.granted.done():  # let in just as the wait ended
                if timed_out:
                    return
                self.release(waiter.amount)
                raise
            self._waiters.remove(waiter)
            self._admit_waiters()  # a large waiter gone may let smaller ones in
            if timed_out:
                raise Rejected(503, BUSY, "busy") from None
            raise

    def release(self, amount: int) -> None:
        self._add(-amount)
        self._admit_waiters()

    def _admit_waiters(self) -> None:
        for waiter in list(self._waiters):
            if self.in_use + waiter.amount <= self.total:
                self._waiters.remove(waiter)
                self._add(waiter.amount)
                waiter.granted.set_result(None)

    def _add(self, amount: int) -> None:
        self.in_use += amount
        self._on_change(self.in_use)
