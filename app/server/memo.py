"""What a parent MPIJob alone decides, remembered by its bytes: the same parent, the same verdict.

Metacontroller syncs a job again whenever one of its children changes and on every resync, with the
parent unchanged (byte for byte) between its own status writes. Parsing, defaulting, validating and
linting that parent is most of a small job's sync, so a ``ParentMemo`` keeps the verdict of the last few
hundred parents. It wraps the core's pure ``judge`` (``remember``) and is a cache of that function, not
state: a hook replica without it (or with other entries) answers exactly the same. Verdicts are immutable
and shared between syncs; the tests run every golden case through one memo twice and compare with a sync
without it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from app.core.config import SyncConfig
from app.core.sync import Judge, Verdict, judge

V = TypeVar("V")

# A few hundred active jobs per hook replica. A verdict takes about 7x its parent's bytes (a typical
# 4 KB parent: ~28 KB), so the parents remembered are capped at 4 MiB in all (~30 MB of verdicts);
# a parent beyond 32 KiB (huge pod templates) is simply not remembered.
MAX_ENTRIES = 512
MAX_TOTAL_BYTES = 4 << 20
MAX_PARENT_BYTES = 32 << 10


class ParentMemo(Generic[V]):
    """A bounded, thread-safe LRU map from (settings, parent bytes) to a verdict."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_parent_bytes: int = MAX_PARENT_BYTES,
        max_total_bytes: int = MAX_TOTAL_BYTES,
    ) -> None:
        self._entries: OrderedDict[tuple[Hashable, bytes], V] = OrderedDict()
        self._max_entries = max_entries
        self._max_parent_bytes = max_parent_bytes
        self._max_total_bytes = max_total_bytes
        self._total_bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_compute(self, settings: Hashable, parent: bytes, compute: Callable[[], V]) -> V:
        """The remembered verdict for ``parent`` under ``settings``, else ``compute()`` (then remembered)."""
        if len(parent) > self._max_parent_bytes:
            return compute()
        key = (settings, parent)
        with self._lock:
            verdict = self._entries.get(key)
            if verdict is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return verdict
            self.misses += 1
        verdict = compute()  # outside the lock: two threads may compute the same verdict, both correct
        with self._lock:
            if key not in self._entries:
                self._total_bytes += len(parent)
            self._entries[key] = verdict
            while len(self._entries) > self._max_entries or self._total_bytes > self._max_total_bytes:
                (_, forgotten), _ = self._entries.popitem(last=False)
                self._total_bytes -= len(forgotten)
        return verdict


def remember(memo: ParentMemo[Verdict], pure: Judge = judge) -> Judge:
    """``pure`` (``core.sync.judge``), remembered in ``memo`` by settings and parent bytes."""

    def remembered(parent: bytes, config: SyncConfig) -> Verdict:
        return memo.get_or_compute(config, parent, lambda: pure(parent, config))

    return remembered
