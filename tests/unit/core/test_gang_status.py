"""The ``GangSchedulingUnavailable`` notice: when it appears, where it goes, when it goes away."""

from __future__ import annotations

from typing import Any

import pytest

from app.settings import Settings
from tests.support.builders import mpijob, sync_request
from tests.support.golden_cases import run

VOLCANO = Settings(gang_scheduling="volcano")
NOTICE = {
    "type": "GangSchedulingUnavailable",
    "status": "True",
    "reason": "PodGroupChildNotDeclared",
    "message": "an older notice",
    "lastUpdateTime": "2026-05-04T09:00:00Z",
    "lastTransitionTime": "2026-05-04T09:00:00Z",
}
SUCCEEDED = {
    "type": "Succeeded",
    "status": "True",
    "reason": "MPIJobSucceeded",
    "message": "MPIJob default/pi successfully completed.",
    "lastUpdateTime": "2026-05-04T09:00:20Z",
    "lastTransitionTime": "2026-05-04T09:00:20Z",
}
FINISHED = {
    "conditions": [NOTICE, SUCCEEDED],
    "completionTime": "2026-05-04T09:00:20Z",
    "startTime": "2026-05-04T09:00:00Z",
    "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}},
    "observedGeneration": 1,
}


def types(response: dict[str, Any]) -> list[str]:
    return [c["type"] for c in response["status"]["conditions"]]


@pytest.mark.parametrize(("podgroup", "settings"), [(None, Settings()), ("volcano", VOLCANO)])
def test_no_notice_when_gang_scheduling_is_off_or_declared(podgroup: str | None, settings: Settings) -> None:
    assert types(run(sync_request(mpijob().build(), podgroup=podgroup), settings)) == ["Created"]


def test_notice_goes_first_so_the_state_column_shows_the_jobs_state() -> None:
    assert types(run(sync_request(mpijob().build()), VOLCANO)) == ["GangSchedulingUnavailable", "Created"]


def test_finished_job_keeps_its_notice_while_undeclared() -> None:
    response = run(sync_request(mpijob().status(FINISHED).build()), VOLCANO)
    assert response["status"]["conditions"] == [NOTICE, SUCCEEDED]


def test_finished_job_loses_its_notice_once_the_overlay_is_applied() -> None:
    response = run(sync_request(mpijob().status(FINISHED).build(), podgroup="volcano"), VOLCANO)
    assert types(response) == ["Succeeded"]


def test_finished_job_gets_no_new_notice() -> None:
    status = {**FINISHED, "conditions": [SUCCEEDED]}
    assert types(run(sync_request(mpijob().status(status).build()), VOLCANO)) == ["Succeeded"]
