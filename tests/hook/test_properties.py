"""Property-based tests (hypothesis): whatever arrives, the hook answers, deterministically and validly.

- Random MPIJobs (valid and invalid) with random observed children: decode + sync never raises, answers
  within a second, every emitted child passes Kubernetes' schema, the same input gives the same bytes,
  and an Invalid job keeps every observed child.
- Random jobs driven through the fake Metacontroller with random pod events: applying each response then
  syncing again converges (a sync that writes nothing comes within a few syncs).
- Structural mutations of the recorded wire requests (wrong types, huge or negative numbers, deep
  nesting, odd Unicode, removed keys): the answer is a 200-shaped result or a short ``RequestError``
  (a 400), never another exception (a 5xx).
Example counts and deadlines are bounded so the module runs in well under a minute on 2 cores.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.api.limits import MAX_WORKERS
from app.core.config import SyncConfig
from app.core.customize import customize
from app.core.sync import Verdict, judge, sync
from app.kube.keys import SeededKeys
from app.kube.request import RequestError, decode_request
from app.server.memo import ParentMemo, remember
from tests.support.builders import (
    launcher_pod,
    mpijob,
    observe,
    sync_request,
    with_job_status,
    with_pod_status,
)
from tests.support.kube_schema import schema_errors
from tests.support.metacontroller import FakeMetacontroller
from tests.support.paths import WIRE

WIRE_REQUESTS = [json.loads(p.read_text()) for p in sorted(WIRE.glob("sync-request-*.json"))]
NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
KEYS = SeededKeys(b"property tests seed, not a secret")
QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.from_regex(r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
odd_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "\u00b2", "\u0661", "\x1b[31m", "a\nb", "\ud7ff", "\u202e", "x" * 300]),
)
huge_ints = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**31, 2**63, -(2**63) - 1, 10**30, MAX_WORKERS + 1, 0, -1]),
)


@st.composite
def mpijobs(draw: st.DrawFn) -> dict[str, Any]:
    """MPIJobs as the CRD could hold them, plus invalid values our validation must report."""
    builder = mpijob(draw(names), draw(st.sampled_from(["default", "ml", "n" * 63])))
    builder.workers(draw(st.one_of(st.integers(1, 40), st.integers(1, 40), st.sampled_from([0, -3, None]))))
    builder.slots(draw(st.integers(0, 16)))
    builder.impl(draw(st.sampled_from(["OpenMPI", "OpenMPI", "Intel", "MPICH", "Bogus"])))
    if draw(st.booleans()):
        builder.launcher_as_worker()
    if draw(st.booleans()):
        builder.wait_for_workers()
    builder.run_policy(
        cleanPodPolicy=draw(st.sampled_from(["All", "Running", "None", "All", "Running", "Sometimes"])),
        suspend=draw(st.booleans()),
        **draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "ttlSecondsAfterFinished": st.integers(-1, 10**6),
                    "backoffLimit": st.integers(-1, 10),
                    "activeDeadlineSeconds": st.integers(-1, 10**6),
                },
            )
        ),
    )
    for replica in ("Launcher", "Worker"):
        policy = draw(st.sampled_from([None, None, None, "Never", "OnFailure", "Always", "ExitCode"]))
        if policy is not None:
            builder.set(f"spec.mpiReplicaSpecs.{replica}.restartPolicy", policy)
    return builder.build()


@st.composite
def observed(draw: st.DrawFn, job: dict[str, Any]) -> list[dict[str, Any]]:
    """Children as a first sync would have created them, in random states, plus strays."""
    first = sync(
        decode_request(orjson.dumps(sync_request(job))), now=NOW, keys=KEYS, config=SyncConfig()
    ).children
    children = []
    for child in first:
        if not draw(st.booleans()):
            continue
        seen = observe(child)
        if child["kind"] == "Pod":
            phase = draw(st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]))
            seen = with_pod_status(seen, phase, ready=draw(st.booleans()))
        elif child["kind"] == "Job":
            condition = draw(st.sampled_from([None, "Complete", "Failed"]))
            if condition is not None:
                seen = with_job_status(seen, conditions=[{"type": condition, "status": "True"}])
        children.append(seen)
    name = job["metadata"]["name"]
    suffixes = st.sampled_from(["99", "\u00b2", "\u0661", "1" * 5000, "01"])
    for suffix in draw(st.lists(suffixes, min_size=1, max_size=3)):
        stray = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-worker-{suffix}"}}
        children.append(observe(stray))
    return children


# Shared by every example, as the shell shares one: a second answer comes from a remembered verdict.
MEMO: ParentMemo[Verdict] = ParentMemo()


def answer(body: bytes, memo: ParentMemo[Verdict] | None = MEMO) -> bytes | None:
    """The shell's path without HTTP: None for a 400, the response bytes for a 200; anything else raises."""
    try:
        judged = judge if memo is None else remember(memo)
        result = sync(decode_request(body), now=NOW, keys=KEYS, config=SyncConfig(), judge=judged)
    except RequestError as err:
        assert len(str(err)) < 300
        return None
    return orjson.dumps(result.response())


@QUICK
@given(data=st.data())
def test_random_jobs_and_children_answer_validly_and_deterministically(data: st.DataObject) -> None:
    job = data.draw(mpijobs())
    children = data.draw(observed(job)) if data.draw(st.integers(0, 3)) else []
    related = [launcher_pod(job["metadata"]["name"], 0, "Running", created="2026-05-04T09:00:10Z")]
    related = related if data.draw(st.booleans()) else []
    body = orjson.dumps(sync_request(job, children, related))
    started = time.perf_counter()
    first = answer(body)
    assert time.perf_counter() - started < 1.0
    assert first is not None and answer(body) == first == answer(body, memo=None)
    response = orjson.loads(first)
    assert set(response) == {"status", "children", "resyncAfterSeconds"}
    for child in response["children"]:
        assert schema_errors(child) == [], child["metadata"]["name"]
    if any(c["type"] == "Invalid" and c["status"] == "True" for c in response["status"]["conditions"]):
        kept = {(c["kind"], c["metadata"]["name"]) for c in response["children"]}
        assert kept == {(c["kind"], c["metadata"]["name"]) for c in children}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    job=mpijobs(), events=st.lists(st.sampled_from(["run", "ready", "fail", "succeed", "edit"]), max_size=4)
)
def test_applying_the_response_and_syncing_again_converges(job: dict[str, Any], events: list[str]) -> None:
    cluster = FakeMetacontroller()
    cluster.apply_mpijob(job)
    cluster.sync_until_steady()
    for event in events:
        if event in ("run", "ready"):
            cluster.workers_running(ready=event == "ready")
        elif event in ("fail", "succeed") and cluster.get("Job", f"{cluster.name}-launcher") is not None:
            cluster.finish_launcher("Failed" if event == "fail" else "Complete")
        elif event == "edit":
            cluster.edit_spec("slotsPerWorker", 2)
        cluster.sync_until_steady()


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _nested(depth: int) -> Any:
    node: Any = 1
    for i in range(depth):
        node = [node] if i % 2 else {"a": node}
    return node


replacements = st.one_of(
    huge_ints,
    st.sampled_from(["pi-worker-\u00b2", "pi-worker-\u0661", "pi-worker-" + "1" * 5000, "pi-launcher"]),
    odd_text,
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.just([]),
    st.just({}),
    st.lists(st.integers(), max_size=3),
    st.integers(1, 300).map(_nested),
)


def _encode(request: Any) -> bytes:
    """orjson refuses integers beyond 64 bits; the stdlib writes them (as a raw request could carry)."""
    try:
        return orjson.dumps(request)
    except orjson.JSONEncodeError:
        return json.dumps(request).encode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_wire_requests_never_fail_unexpectedly(data: st.DataObject) -> None:
    request = copy.deepcopy(data.draw(st.sampled_from(WIRE_REQUESTS)))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(request)[1:]))
        parent = request
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(replacements)
    body = _encode(request)
    started = time.perf_counter()
    response = answer(body)
    assert time.perf_counter() - started < 1.0
    if response is not None:
        assert set(orjson.loads(response)) == {"status", "children", "resyncAfterSeconds"}
    with contextlib.suppress(RequestError):
        customize(body, SyncConfig())


@pytest.mark.parametrize("depth", [10, 100, 1000, 10_000])
def test_deep_nesting_anywhere_is_a_short_answer(depth: int) -> None:
    for request in WIRE_REQUESTS:
        for where in (("related",), ("parent", "spec", "x"), ("children", "Pod.v1", "x")):
            mutated = copy.deepcopy(request)
            node = mutated
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = None
            body = _encode(mutated).replace(b"null", b"[" * depth + b"]" * depth, 1)
            answer(body)
