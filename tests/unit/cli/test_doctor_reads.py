"""What ``mpijob doctor`` asks the API server for (app/cluster/reads.py, gather.py), against an API server
played by httpx's MockTransport from recorded objects: GET only, the Secret as metadata only (and its data
dropped should a server send it anyway), a refusal named by its permission, PodGroup APIs that are not
served or not readable skipped unless the job's Pods use a PodGroup. The real node reads a real one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.cli.doctor.gather import gather
from app.cli.doctor.snapshot import Snapshot
from app.cluster.connection import Connection
from app.cluster.reads import CannotRead, Reader
from tests.support import paths
from tests.support.doctor_api import VERSION

FIXTURES = paths.FIXTURES / "doctor"
NS = "doctor"
SECRET_DATA = "c2VjcmV0LWtleS1tYXRlcmlhbA=="


def _recorded() -> Snapshot:
    return Snapshot.from_json(json.loads((FIXTURES / "running.json").read_text()))


class Server:
    """The recorded objects at their API paths; every request is kept."""

    def __init__(self, snap: Snapshot, refuse: tuple[str, ...] = (), secret_data: bool = False) -> None:
        self.requests: list[httpx.Request] = []
        self.refuse = refuse
        name = snap.name
        secret = snap.secret
        if secret_data:
            secret = {**(secret or {}), "data": {"ssh-privatekey": SECRET_DATA}}
        core, batch = f"/api/v1/namespaces/{NS}", f"/apis/batch/v1/namespaces/{NS}"
        self.objects: dict[str, Any] = {
            "/version": VERSION,
            f"/apis/kubeflow.org/v2beta1/namespaces/{NS}/mpijobs/{name}": snap.job,
            f"{batch}/jobs/{name}-launcher": snap.launcher,
            f"{core}/pods": {"items": snap.pods, "metadata": {}},
            f"{core}/services/{name}": snap.service,
            f"{core}/secrets/{name}-ssh": secret,
            f"{core}/configmaps/{name}-config": snap.config,
            f"{core}/events": {"items": snap.events, "metadata": {}},
        }
        self.logs = {k.split("/")[0] + "/" + k.split("/")[1]: v for k, v in snap.logs.items()}

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if any(part in path for part in self.refuse):
            return httpx.Response(403, json={"kind": "Status", "message": f"forbidden: {path}"})
        if path.endswith("/log"):
            pod = path.split("/")[-2]
            text = self.logs.get(f"{pod}/{request.url.params['container']}")
            if not text:
                return httpx.Response(400, json={"message": "container is waiting to start"})
            return httpx.Response(200, text=text)
        body = self.objects.get(path)
        if body is None:
            return httpx.Response(404, json={"message": "not found"})
        return httpx.Response(200, json=body)


def _reader(server: Server) -> Reader:
    connection = Connection("https://api.test", "ctx", NS, False, {"Authorization": "Bearer t"})
    return Reader(connection, transport=httpx.MockTransport(server.handle))


def _gather(server: Server) -> Snapshot:
    return gather(_reader(server), NS, "pi", "2026-12-04T10:00:00Z")


def test_the_doctor_only_gets_and_reads_the_secret_as_metadata_only() -> None:
    recorded = _recorded()
    server = Server(recorded)
    snap = _gather(server)
    assert {r.method for r in server.requests} == {"GET"}
    secret_reads = [r for r in server.requests if "/secrets/" in r.url.path]
    assert [r.headers["Accept"].split(",")[0] for r in secret_reads] == [
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    ]
    assert all(r.headers["Authorization"] == "Bearer t" for r in server.requests)
    assert (snap.job, snap.launcher, snap.service, snap.config) == (
        recorded.job, recorded.launcher, recorded.service, recorded.config,
    )  # fmt: skip
    assert [p["metadata"]["name"] for p in snap.pods] == [p["metadata"]["name"] for p in recorded.pods]
    assert snap.logs == recorded.logs and snap.logs
    assert snap.podgroups == []  # neither PodGroup API is served here


def test_secret_data_sent_anyway_is_dropped_before_anything_sees_it() -> None:
    snap = _gather(Server(_recorded(), secret_data=True))
    assert snap.secret is not None and set(snap.secret) == {"kind", "metadata"}
    assert SECRET_DATA not in json.dumps(snap.to_json())


@pytest.mark.parametrize(
    ("refused", "permission"),
    [
        ("/pods/", "get pods/log in namespace doctor"),
        ("/secrets/", "get secrets in namespace doctor"),
        ("/events", "list events in namespace doctor"),
        ("/mpijobs/", "get mpijobs.kubeflow.org in namespace doctor"),
    ],
)
def test_a_refusal_names_the_permission(refused: str, permission: str) -> None:
    with pytest.raises(CannotRead) as raised:
        _gather(Server(_recorded(), refuse=(refused,)))
    assert raised.value.permission == permission
    assert str(raised.value).startswith(f"permission missing: {permission} (403 Forbidden: forbidden:")


def test_a_podgroup_api_not_readable_is_skipped_unless_the_pods_use_a_podgroup() -> None:
    recorded = _recorded()
    assert _gather(Server(recorded, refuse=("/podgroups/",))).podgroups == []
    pod = recorded.pods[0]
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pi"}
    with pytest.raises(CannotRead, match=r"get podgroups\.scheduling\.volcano\.sh"):
        _gather(Server(recorded, refuse=("/podgroups/",)))


def test_an_unreachable_server_and_refused_credentials_are_named() -> None:
    def fail(status: int) -> Callable[[httpx.Request], httpx.Response]:
        def handle(request: httpx.Request) -> httpx.Response:
            if status == 0:
                raise httpx.ConnectError("connection refused", request=request)
            return httpx.Response(status, json={"message": "Unauthorized"})

        return handle

    connection = Connection("https://api.test", "ctx", NS, False)
    unreachable = re.escape("cannot reach the API server at https://api.test: connection refused")
    with pytest.raises(CannotRead, match=unreachable):
        gather(Reader(connection, transport=httpx.MockTransport(fail(0))), NS, "pi", "")
    with pytest.raises(CannotRead, match="did not accept your credentials"):
        gather(Reader(connection, transport=httpx.MockTransport(fail(401))), NS, "pi", "")


def test_a_missing_job_and_a_missing_api_are_told_apart() -> None:
    server = Server(_recorded())
    server.objects = {"/version": VERSION, "/apis/kubeflow.org/v2beta1": {"kind": "APIResourceList"}}
    assert _gather(server).served is True
    server.objects = {"/version": VERSION}
    assert _gather(server).served is False
