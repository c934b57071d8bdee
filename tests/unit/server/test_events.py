"""The Event recorder against a real HTTP server on loopback that answers as the API server's events endpoint.

``ApiServer`` is a raw ASGI app served by uvicorn in the test's event loop: 201 for a name it has not seen,
409 AlreadyExists for one it has, scripted answers first, an optional delay. The recorder posts over real
sockets; ``httpx.MockTransport`` is used only to provoke connection errors deterministically.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn

from app.cluster.tokens import TokenFile
from app.core.intents import Event, Milestone
from app.core.sync import Outcome, SyncResult
from app.kube.in_cluster import EventsAccess
from app.kube.keys import SeededKeys
from app.server.events import (
    COMPONENT,
    MAX_NAME_CHARS,
    Bounds,
    EventRecorder,
    Pending,
    Posting,
    event_body,
    event_name,
)
from app.server.main import create_app, sync_endpoint
from app.server.metrics import Metrics
from app.server.ratelimit import Budget, EventBudget
from app.settings import Settings
from tests.support.golden_cases import SEED as TEST_SEED
from tests.support.paths import ROOT

FIRST_SYNC = ROOT / "tests" / "fixtures" / "wire" / "sync-request-01-first-sync-no-children.json"
NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
TOKEN = "token-value-never-printed-0123456789"
EVENTS_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass
class ApiServer:
    """What the events endpoint of an API server does with a POST, on a real loopback socket."""

    stored: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, Authorization header)
    script: list[int] = field(default_factory=list)  # statuses to answer first, one per request
    delay: float = 0.0
    port: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        self.requests.append((scope["path"], headers.get(b"authorization", b"").decode()))
        if self.delay:
            await asyncio.sleep(self.delay)
        status = self._answer(scope, body)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    def _answer(self, scope: dict[str, Any], body: bytes) -> int:
        if self.script:
            return self.script.pop(0)
        match = EVENTS_PATH.match(scope["path"])
        if scope["method"] != "POST" or match is None:
            return 404
        event = orjson.loads(body)
        key = (match[1], event["metadata"]["name"])
        if key in self.stored:
            return 409
        self.stored[key] = event
        return 201

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@asynccontextmanager
async def serving(api: ApiServer) -> AsyncIterator[ApiServer]:
    server = uvicorn.Server(
        uvicorn.Config(api, host="127.0.0.1", port=0, lifespan="off", log_level="warning", access_log=False)
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    api.port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield api
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def hook_served(app: Any) -> AsyncIterator[str]:
    """Our app served by uvicorn as in production (lifespan on: the recorder starts and, when the server
    stops, drains its queue); its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await task


def run(coroutine: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(coroutine())


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def result(*events: Event, name: str = "pi", uid: str = "uid-1") -> SyncResult:
    return SyncResult({}, [], Outcome.SYNCED, "team-a", name, uid=uid, events=events)


CREATED = Event("Normal", "MPIJobCreated", "MPIJob team-a/pi is created.", Milestone.CREATED, "Created/True")
SUCCEEDED = Event("Normal", "MPIJobSucceeded", "MPIJob team-a/pi successfully completed.", None, "Succeeded")


def counts(metrics: Metrics) -> dict[str, float]:
    return {r: metrics.events.labels(r)._value.get() for r in ("posted", "duplicate", "failed", "dropped")}


# Retries back off in hundredths of a second here, not halves.
FAST = Posting(backoff_seconds=0.01)


def recorder(
    url: str, token_file: Path, metrics: Metrics, *, posting: Posting = FAST, **options: Any
) -> EventRecorder:
    access = EventsAccess(url, token_file, None)
    return EventRecorder(access, metrics.event, instance="hook-0", posting=posting, **options)


# ------------------------------------------------------------------------------------------ posting


def test_posts_each_event_once_as_upstreams_recorder(token_file: Path) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            events = recorder(api.url, token_file, metrics)
            await events.start()
            events.record(result(CREATED, SUCCEEDED), NOW)
            await events.drain()
            await events.stop()
            assert [path for path, _ in api.requests] == ["/api/v1/namespaces/team-a/events"] * 2
            assert {auth for _, auth in api.requests} == {f"Bearer {TOKEN}"}
            posted = list(api.stored.values())
            assert [e["reason"] for e in posted] == ["MPIJobCreated", "MPIJobSucceeded"]
            first = posted[0]
            assert first["involvedObject"] == {
                "apiVersion": "kubeflow.org/v2beta1",
                "kind": "MPIJob",
                "namespace": "team-a",
                "name": "pi",
                "uid": "uid-1",
            }
            assert first["metadata"] == {
                "name": event_name("team-a", "pi", "uid-1", "Created/True"),
                "namespace": "team-a",
            }
            assert first["type"] == "Normal" and first["message"] == "MPIJob team-a/pi is created."
            assert first["firstTimestamp"] == first["lastTimestamp"] == "2026-05-04T09:00:30Z"
            assert first["count"] == 1
            assert first["source"] == {"component": COMPONENT} == {"component": "mpi-job-controller"}
            assert (first["reportingComponent"], first["reportingInstance"]) == (COMPONENT, "hook-0")
            assert "eventTime" not in first

    run(scenario)
    assert counts(metrics) == {"posted": 2, "duplicate": 0, "failed": 0, "dropped": 0}


def test_a_repeated_transition_is_a_duplicate_whoever_posts_it(token_file: Path) -> None:
    """The same sync twice, and the same transition from a second replica: one Event, 409s counted as
    duplicates and not retried."""
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            replicas = [recorder(api.url, token_file, metrics), recorder(api.url, token_file, metrics)]
            for events in replicas:
                await events.start()
            replicas[0].record(result(CREATED), NOW)
            replicas[0].record(result(CREATED), NOW)
            replicas[1].record(result(CREATED), datetime(2026, 5, 4, 9, 0, 31, tzinfo=UTC))
            for events in replicas:
                await events.drain()
                await events.stop()
            assert len(api.requests) == 3
            assert len(api.stored) == 1

    run(scenario)
    assert counts(metrics) == {"posted": 1, "duplicate": 2, "failed": 0, "dropped": 0}


def test_event_names_are_deterministic_dns_subdomains() -> None:
    name = event_name("ns", "pi", "uid-1", "Created/True")
    assert name == event_name("ns", "pi", "uid-1", "Created/True")
    assert re.fullmatch(r"pi\.[0-9a-f]{16}", name)
    assert name != event_name("ns", "pi", "uid-2", "Created/True")  # a new job of the same name
    assert name != event_name("ns", "pi", "uid-1", "Succeeded/True")
    # Without a uid the namespace tells jobs apart.
    assert event_name("a", "pi", "", "k") != event_name("b", "pi", "", "k")
    longest = event_name("ns", "x" * 250 + ".y-", "uid", "k")
    assert len(longest) <= MAX_NAME_CHARS and _DNS1123_SUBDOMAIN.match(longest)
    cut_at_a_dot = event_name("ns", "a" * 235 + ".b", "uid", "k")
    assert len(cut_at_a_dot) <= MAX_NAME_CHARS and _DNS1123_SUBDOMAIN.match(cut_at_a_dot)


def test_long_messages_are_cut_as_upstream_does(token_file: Path) -> None:
    metrics = Metrics()
    long = Event("Warning", "MPIJobFailed", "x" * 5000, None, "Failed/True")

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            events = recorder(api.url, token_file, metrics)
            await events.start()
            events.record(result(long), NOW)
            await events.stop()
            (posted,) = api.stored.values()
            assert len(posted["message"]) == 1024 and posted["message"].endswith("...")

    run(scenario)


def test_an_events_message_is_cut_by_bytes_as_a_conditions_is() -> None:
    """1,000 two-byte characters: under 1,024 characters, but 2,000 bytes."""
    wide = Event("Warning", "MPIJobFailed", "é" * 1000, None, "Failed/True")
    message = event_body(Pending("ns", "pi", "uid", wide, NOW), "instance")["message"]
    assert message == "é" * 510 + "..."


# ------------------------------------------------------------------------------------------ failures


def test_5xx_is_retried_then_posted(token_file: Path) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer(script=[503, 500])) as api:
            events = recorder(api.url, token_file, metrics)
            await events.start()
            events.record(result(CREATED), NOW)
            await events.stop()
            assert len(api.requests) == 3 and len(api.stored) == 1

    run(scenario)
    assert counts(metrics)["posted"] == 1 and counts(metrics)["failed"] == 0


def test_5xx_forever_fails_after_the_retries_and_logs_no_message(
    token_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    secret_message = Event("Warning", "MPIJobFailed", "message-with-secret-material", None, "Failed/True")

    async def scenario() -> None:
        async with serving(ApiServer(script=[503] * 10)) as api:
            events = recorder(api.url, token_file, metrics, posting=replace(FAST, retries=3))
            await events.start()
            events.record(result(secret_message), NOW)
            await events.stop()
            assert len(api.requests) == 4

    with caplog.at_level(logging.WARNING, logger="mpi_operator_hook.events"):
        run(scenario)
    assert counts(metrics)["failed"] == 1
    text = caplog.text
    assert "event not posted" in text and "MPIJobFailed" in text and "HTTP 503" in text
    assert "message-with-secret-material" not in text and TOKEN not in text


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_4xx_is_not_retried(token_file: Path, status: int) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer(script=[status])) as api:
            events = recorder(api.url, token_file, metrics)
            await events.start()
            events.record(result(CREATED), NOW)
            await events.stop()
            assert len(api.requests) == 1

    run(scenario)
    assert counts(metrics)["failed"] == 1


def test_connection_errors_are_retried(token_file: Path) -> None:
    """Edge case, provoked with a mock transport: two refused connections, then the API server answers."""
    metrics = Metrics()
    attempts: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        attempts.append(1)
        if len(attempts) <= 2:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(201, json={})

    async def scenario() -> None:
        events = recorder(
            "https://apiserver.invalid", token_file, metrics, transport=httpx.MockTransport(answer)
        )
        await events.start()
        events.record(result(CREATED), NOW)
        await events.stop()

    run(scenario)
    assert len(attempts) == 3
    assert counts(metrics)["posted"] == 1


def test_an_unreachable_api_server_fails_after_the_retries(token_file: Path) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            closed = api.url  # the port is closed once the server stops
        events = recorder(closed, token_file, metrics, posting=replace(FAST, retries=2))
        await events.start()
        events.record(result(CREATED), NOW)
        await events.stop()

    run(scenario)
    assert counts(metrics)["failed"] == 1


def test_a_missing_token_file_fails_the_event(tmp_path: Path) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            events = recorder(api.url, tmp_path / "absent", metrics)
            await events.start()
            events.record(result(CREATED), NOW)
            await events.stop()
            assert api.requests == []

    run(scenario)
    assert counts(metrics)["failed"] == 1


# ------------------------------------------------------------------------------------------ never blocking


def test_a_full_queue_drops_without_blocking(token_file: Path) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer(delay=0.5)) as api:
            events = recorder(api.url, token_file, metrics, bounds=Bounds(queue_size=2))
            await events.start()
            many = [Event("Normal", f"R{i}", "m", None, f"k{i}") for i in range(50)]
            started = time.perf_counter()
            for event in many:
                events.record(result(event), NOW)
            assert time.perf_counter() - started < 0.05
            await events.stop(drain_seconds=5)

    run(scenario)
    done = counts(metrics)
    assert done["dropped"] >= 47 and done["posted"] + done["dropped"] == 50


def test_sync_answers_do_not_wait_for_a_slow_api_server(token_file: Path) -> None:
    """The real sync endpoint with Events on and an API server that takes 0.5 s per POST: every answer is as
    fast as without Events, and the Events are posted afterwards."""
    body = FIRST_SYNC.read_bytes()
    syncs = 8
    metrics_seen: list[Metrics] = []

    async def timed(server: str | None, slow: ApiServer | None) -> list[float]:
        settings = Settings(
            events="on" if server else "off",
            events_api_server=server or "",
            events_token_file=token_file,
        )
        app = create_app(settings, SeededKeys(TEST_SEED))
        hook = app.hook
        metrics_seen.append(hook.metrics)
        if hook.events is not None:
            await hook.events.start()
        seconds = []
        for _ in range(syncs):
            started = time.perf_counter()
            status, _ = await sync_endpoint(hook, body)
            seconds.append(time.perf_counter() - started)
            assert status == 200
        if hook.events is not None:
            assert (
                slow is not None and len(slow.stored) == 0
            )  # nothing posted yet: still waiting on the server
            await hook.events.stop(drain_seconds=10)
        return seconds

    async def scenario() -> None:
        without = await timed(None, None)
        async with serving(ApiServer(delay=0.5)) as slow:
            with_events = await timed(slow.url, slow)
            assert len(slow.stored) == 1  # repeated first syncs of one job: one MPIJobCreated
        assert max(with_events) < max(0.05, 5 * max(without)), (with_events, without)

    run(scenario)
    with_events_metrics = metrics_seen[1]
    assert counts(with_events_metrics) == {"posted": 1, "duplicate": syncs - 1, "failed": 0, "dropped": 0}


# ------------------------------------------------------------------------------------------ the token


def test_the_token_file_is_looked_at_once_a_second_and_read_again_when_it_changed(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("first\n")
    now = [0.0]
    token = TokenFile(path, clock=lambda: now[0])
    assert token.get() == "first"
    path.write_text("second")
    now[0] = 0.9
    assert token.get() == "first", "not looked at again within a second"
    now[0] = 1.0
    assert token.get() == "second"
    path.chmod(0)  # unchanged stamp: not read again (root could read it anyway; the stamp decides)
    now[0] = 5.0
    assert token.get() == "second"
    path.unlink()  # a file gone keeps the last token
    now[0] = 10.0
    assert token.get() == "second"
    path.write_text("")  # a file changed into something unusable keeps the last token too
    now[0] = 15.0
    assert token.get() == "second"


def test_a_rotated_token_is_used_by_the_next_post(token_file: Path) -> None:
    metrics = Metrics()

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            events = recorder(api.url, token_file, metrics, posting=replace(FAST, token_check_seconds=0))
            await events.start()
            events.record(result(CREATED), NOW)
            await events.drain()
            token_file.write_text("rotated-token")
            events.record(result(SUCCEEDED), NOW)
            await events.stop()
            assert [auth for _, auth in api.requests] == [f"Bearer {TOKEN}", "Bearer rotated-token"]

    run(scenario)


# ------------------------------------------------------------------------------------------ the app


def test_the_app_lifespan_starts_and_stops_the_recorder(token_file: Path) -> None:
    """Served by uvicorn as in production: the first sync's Event reaches the API server."""
    body = FIRST_SYNC.read_bytes()

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            settings = Settings(events="on", events_api_server=api.url, events_token_file=token_file)
            app = create_app(settings, SeededKeys(TEST_SEED))
            async with hook_served(app) as url, httpx.AsyncClient() as client:
                answer = await client.post(f"{url}/sync", content=body)
                assert answer.status_code == 200
                metrics = (await client.get(f"{url}/metrics")).text
            assert [e["reason"] for e in api.stored.values()] == ["MPIJobCreated"]
            assert 'mpi_operator_hook_events_total{result="dropped"} 0.0' in metrics

    run(scenario)


# ------------------------------------------------------------------------------------------ bounded


def rate_limited(metrics: Metrics) -> float:
    return metrics.events.labels("rate_limited")._value.get()


def test_a_namespace_over_its_budget_loses_its_events_not_the_others(token_file: Path) -> None:
    metrics = Metrics()
    clock = [0.0]
    budget = EventBudget(Budget(3, 1.0), Budget(100, 100.0), clock=lambda: clock[0])

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            events = recorder(api.url, token_file, metrics, bounds=Bounds(budget=budget))
            await events.start()
            for i in range(10):
                events.record(result(CREATED, name=f"flood-{i}", uid=f"uid-{i}"), NOW)
            events.record(SyncResult({}, [], Outcome.SYNCED, "team-b", "pi", uid="b", events=(CREATED,)), NOW)
            clock[0] += 2.0  # two seconds refill two of team-a's
            for i in range(10, 13):
                events.record(result(CREATED, name=f"flood-{i}", uid=f"uid-{i}"), NOW)
            await events.drain()
            await events.stop()
            by_namespace = [namespace for namespace, _ in api.stored]
            assert by_namespace.count("team-a") == 3 + 2 and by_namespace.count("team-b") == 1

    run(scenario)
    assert rate_limited(metrics) == 7 + 1
    assert counts(metrics)["posted"] == 6


def test_the_total_budget_bounds_many_namespaces() -> None:
    clock = [0.0]
    budget = EventBudget(Budget(5, 1.0), Budget(20, 10.0), max_keys=8, clock=lambda: clock[0])
    admitted = sum(budget.admit(f"ns-{i}") for i in range(100) for _ in range(3))
    assert admitted == 20
    clock[0] += 1.0
    assert sum(budget.admit(f"other-{i}") for i in range(100)) == 10


def test_an_event_the_total_budget_refuses_costs_its_namespace_nothing() -> None:
    clock = [0.0]
    budget = EventBudget(Budget(2, 0.0), Budget(1, 1.0), clock=lambda: clock[0])
    assert budget.admit("team-a")
    assert [budget.admit("team-a") for _ in range(5)] == [False] * 5  # the total is empty
    clock[0] += 1.0  # the total refills one; team-a never does
    assert budget.admit("team-a"), "team-a still has the token the refused Events did not use"
    clock[0] += 1.0
    assert not budget.admit("team-a")


def test_forged_syncs_post_no_event_and_a_flood_of_real_ones_is_cut_at_the_budget(
    token_file: Path, tmp_path: Path
) -> None:
    """The week's finding, replayed: syncs for made-up MPIJobs in kube-system. Without the caller token they
    get 401 and post nothing; with it, a namespace posts only its budget."""
    caller = tmp_path / "caller-token"
    caller.write_text("caller-token-never-printed\n")
    request = orjson.loads(FIRST_SYNC.read_bytes())

    def forged(i: int) -> bytes:
        meta = request["parent"]["metadata"]
        parent = {**request["parent"], "metadata": {**meta, "name": f"forged-{i}", "namespace": "kube-system",
                                                    "uid": f"00000000-0000-4000-8000-{i:012d}"}}  # fmt: skip
        return orjson.dumps({**request, "parent": parent})

    async def scenario() -> None:
        async with serving(ApiServer()) as api:
            settings = Settings(
                events="on", events_api_server=api.url, events_token_file=token_file, caller_auth="token",
                caller_token_file=caller, events_namespace_burst=5,
            )  # fmt: skip
            app = create_app(settings, SeededKeys(TEST_SEED))
            async with hook_served(app) as url, httpx.AsyncClient() as client:
                for i in range(20):
                    assert (await client.post(f"{url}/sync", content=forged(i))).status_code == 401
                auth = {"Authorization": "Bearer caller-token-never-printed"}
                for i in range(20, 40):
                    answer = await client.post(f"{url}/sync", content=forged(i), headers=auth)
                    assert answer.status_code == 200
            assert len(api.stored) == 5
            assert (
                app.hook.metrics.registry.get_sample_value(
                    "mpi_operator_hook_events_total", {"result": "rate_limited"}
                )
                == 15
            )

    run(scenario)
