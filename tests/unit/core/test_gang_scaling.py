"""Ours: workers added by scaling up wait for the Volcano or scheduler-plugins PodGroup that counts them.

Metacontroller creates a response's Pods before its PodGroups: returned together, a new worker would reach
the scheduler before the larger minMember, and a gang waiting for room could start without it. So the sync
that changes the gang size returns the PodGroup's new minMember and no new worker; the next one (the
PodGroup's update triggers it) creates the worker. Upstream updates the PodGroup before it creates workers,
in one pass; the hook keeps that order across two. Proven with the real schedulers in
tests/node/test_node_gangs.py. The Workload API's PodGroup is immutable and kept while its Pods run, so a
new worker joins the one there is (tests/node/test_node_gang.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.settings import Settings
from tests.support.builders import mpijob, observe, sync_request
from tests.support.golden_cases import run

# The hook's setting and the PodGroup child its overlay declares, per backend.
BACKENDS = {"volcano": "volcano", "scheduler-plugins-scheduler": "plugins"}


def synced(workers: int, backend: str, seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The children the hook returns for a job of ``workers`` when ``seen`` exists."""
    request = sync_request(mpijob().workers(workers).build(), seen, podgroup=BACKENDS[backend])
    return list(run(request, Settings(gang_scheduling=backend))["children"])


def gang(children: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """(the PodGroup's minMember, the worker Pods)."""
    (group,) = [c for c in children if c["kind"] == "PodGroup"]
    return group["spec"]["minMember"], sorted(c["metadata"]["name"] for c in children if c["kind"] == "Pod")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_added_by_scaling_up_waits_for_the_podgroup_that_counts_it(backend: str) -> None:
    first = [observe(c) for c in synced(2, backend, [])]
    assert gang(first) == (3, ["pi-worker-0", "pi-worker-1"])
    scaled = synced(3, backend, first)
    assert gang(scaled) == (4, ["pi-worker-0", "pi-worker-1"])  # the PodGroup first, no new worker
    applied = [c for c in first if c["kind"] != "PodGroup"]
    applied += [observe(c) for c in scaled if c["kind"] == "PodGroup"]
    assert gang(synced(3, backend, applied)) == (4, ["pi-worker-0", "pi-worker-1", "pi-worker-2"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_scaling_down_deletes_at_once(backend: str) -> None:
    """Nothing to wait for: the surplus worker goes in the sync that lowers minMember."""
    first = [observe(c) for c in synced(3, backend, [])]
    assert gang(synced(2, backend, first)) == (3, ["pi-worker-0", "pi-worker-1"])


def test_under_the_workload_api_a_new_worker_joins_the_podgroup_there_is() -> None:
    """Its PodGroup is immutable and kept while its Pods run: waiting for its replacement would never end."""
    request = sync_request(mpijob().workers(2).build(), podgroup="kubernetes")
    settings = Settings(gang_scheduling="kubernetes")
    first = [observe(c) for c in run(request, settings)["children"]]
    scaled = run(sync_request(mpijob().workers(3).build(), first, podgroup="kubernetes"), settings)
    pods = sorted(c["metadata"]["name"] for c in scaled["children"] if c["kind"] == "Pod")
    assert pods == ["pi-worker-0", "pi-worker-1", "pi-worker-2"]
