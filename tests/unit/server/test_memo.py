"""The parent memo changes how fast a sync is, never what it answers."""

from __future__ import annotations

from typing import Any

import orjson

from app.core.sync import Verdict
from app.server.memo import ParentMemo
from app.settings import Settings
from tests.support import golden_store
from tests.support.builders import mpijob, sync_request
from tests.support.golden_cases import all_cases, sync_at_now


def _answer(body: bytes, settings: Settings, memo: ParentMemo[Verdict] | None) -> dict[str, Any]:
    result = sync_at_now(body, settings, memo)
    return {"response": orjson.loads(orjson.dumps(result.response())), "events": result.events}


def test_every_golden_case_answers_the_same_through_one_memo_twice() -> None:
    """The second pass reads verdicts the first pass stored: a sync that mutated a shared verdict (its
    status, templates or metadata) would change a later answer here."""
    cases = [
        (name, golden_store.read_bytes(path), Settings(**settings)) for name, path, settings in all_cases()
    ]
    expected = {name: _answer(body, settings, None) for name, body, settings in cases}
    memo: ParentMemo[Verdict] = ParentMemo()
    for _ in range(2):
        for name, body, settings in cases:
            assert _answer(body, settings, memo) == expected[name], name
    assert memo.hits >= len(cases) // 2  # some cases share a parent, so the first pass hits too


def _body(job: dict[str, Any]) -> bytes:
    return orjson.dumps(sync_request(job, []))


def test_a_changed_parent_is_judged_again() -> None:
    memo: ParentMemo[Verdict] = ParentMemo()
    valid, invalid = mpijob().build(), mpijob().workers(0).build()
    assert (
        _answer(_body(invalid), Settings(), memo)["response"]["status"]["conditions"][-1]["type"] == "Invalid"
    )
    assert _answer(_body(valid), Settings(), memo) == _answer(_body(valid), Settings(), None)
    assert (memo.hits, memo.misses) == (0, 2)


def test_settings_are_part_of_the_key() -> None:
    memo: ParentMemo[Verdict] = ParentMemo()
    body = _body(mpijob().build())
    for domain in ("", "cluster.local", ""):
        settings = Settings(cluster_domain=domain)
        assert _answer(body, settings, memo) == _answer(body, settings, None)
    assert (memo.hits, memo.misses) == (1, 2)


def test_the_memo_is_bounded_by_entries_and_parent_size() -> None:
    memo: ParentMemo[int] = ParentMemo(max_entries=3, max_parent_bytes=8)
    calls: list[bytes] = []

    def remember(parent: bytes) -> int:
        return memo.get_or_compute("s", parent, lambda: calls.append(parent) or len(calls))

    for parent in (b"a", b"b", b"c", b"a", b"d", b"b"):
        remember(parent)
    # LRU: "a" was used again before "d" came, so "b" was the one forgotten.
    assert calls == [b"a", b"b", b"c", b"d", b"b"]
    assert len(memo) == 3
    remember(b"x" * 9)
    remember(b"x" * 9)
    assert calls[-2:] == [b"x" * 9, b"x" * 9] and len(memo) == 3  # too big: never remembered


def test_the_memo_is_bounded_by_the_bytes_it_remembers() -> None:
    memo: ParentMemo[int] = ParentMemo(max_entries=100, max_parent_bytes=8, max_total_bytes=10)
    for parent in (b"1234", b"5678", b"abcd", b"5678"):
        memo.get_or_compute("s", parent, lambda: 0)
    assert len(memo) == 2  # 12 bytes would be over 10: the least recently used went
    assert memo.get_or_compute("s", b"5678", lambda: 1) == 0  # kept (used last)
    assert memo.get_or_compute("s", b"1234", lambda: 1) == 1  # forgotten, judged again
