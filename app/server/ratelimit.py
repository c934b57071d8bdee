"""Token buckets that bound how many Events the hook posts, per namespace and in all.

Each sync posts at most a few Events and each transition only once, but a loop (ours or a controller's) or
a flood of authenticated syncs must still not turn into unbounded writes to the API server: an Event over
either budget is dropped and counted, never queued. A namespace's bucket is forgotten when ``max_keys``
others are newer; a flood across more namespaces than that is still bounded by the total bucket.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class TokenBucket:
    """``burst`` tokens at most, refilled at ``per_second``; one token per Event."""

    burst: float
    per_second: float
    tokens: float
    stamp: float

    def has_token(self, now: float) -> bool:
        """Refill up to ``now`` and say whether a token is there, taking none."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        return self.tokens >= 1


@dataclass(frozen=True)
class Budget:
    burst: int
    per_second: float

    def bucket(self, now: float) -> TokenBucket:
        return TokenBucket(self.burst, self.per_second, float(self.burst), now)


class EventBudget:
    """Admit an Event only if its namespace's bucket and the total bucket both have a token."""

    def __init__(
        self,
        namespace: Budget,
        total: Budget,
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._namespace = namespace
        self._clock = clock
        self._total = total.bucket(clock())
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._max_keys = max_keys

    def admit(self, namespace: str) -> bool:
        now = self._clock()
        bucket = self._buckets.get(namespace)
        if bucket is None:
            bucket = self._buckets[namespace] = self._namespace.bucket(now)
            if len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(namespace)
        # Both checked before either is spent: a namespace over its budget must not use up everyone's, and
        # an Event the total refuses must not cost its namespace a token.
        if not (bucket.has_token(now) and self._total.has_token(now)):
            return False
        bucket.tokens -= 1
        self._total.tokens -= 1
        return True
