"""The FastAPI shell's failure path, in-process: a bug in the core is a bare 503, never a 500 or a trace."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.kube.keys import SSHKeyPair
from app.server.main import create_app
from app.settings import Settings
from tests.support import paths

FIRST_SYNC = paths.WIRE / "sync-request-01-first-sync-no-children.json"


def broken_keys(job_uid: str) -> SSHKeyPair:
    raise RuntimeError(f"simulated bug while making a key for {job_uid}")


def test_an_unexpected_error_is_a_503_without_details() -> None:
    client = TestClient(create_app(Settings(), keys=broken_keys), raise_server_exceptions=False)
    response = client.post("/sync", content=FIRST_SYNC.read_bytes())
    assert response.status_code == 503
    assert response.json() == {"error": "internal error in the sync hook; see the hook's logs"}
    assert "simulated bug" not in response.text and "Traceback" not in response.text
    metrics = client.get("/metrics").text
    assert 'mpi_operator_hook_requests_total{hook="sync",outcome="error"} 1.0' in metrics


def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    client = TestClient(create_app(Settings()))
    response = client.post("/sync", content=b"{}", headers={"content-length": str(600 * 1024 * 1024)})
    assert response.status_code == 413


def test_customize_failing_unexpectedly_is_a_503_without_details(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(body: bytes) -> dict[str, object]:
        raise RuntimeError("simulated bug in customize")

    monkeypatch.setattr("app.server.main.customize", broken)
    client = TestClient(create_app(Settings()), raise_server_exceptions=False)
    response = client.post("/customize", content=FIRST_SYNC.read_bytes())
    assert response.status_code == 503
    assert response.json() == {"error": "internal error in the customize hook; see the hook's logs"}
    assert "simulated bug" not in response.text and "Traceback" not in response.text
    metrics = client.get("/metrics").text
    assert 'mpi_operator_hook_requests_total{hook="customize",outcome="error"} 1.0' in metrics
