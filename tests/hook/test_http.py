"""The hook as Metacontroller meets it: a real uvicorn process on loopback, spoken to by the real ``curl``.

One server per session (seeded SSH keys, output captured to a file). Each wire fixture is a request body in
Metacontroller's exact shape (tests/fixtures/wire). What is pinned here is the HTTP contract
(``docs/architecture.md``, "The Metacontroller contract"): 200 with exactly ``status``, ``children`` and
``resyncAfterSeconds``
for every well-formed request, an ``Invalid`` condition (and every observed child kept) for a bad MPIJob,
400 with a short body that never echoes input for a malformed request, and no key material in the logs.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.processes import free_port
from tests.support.builders import walk
from tests.support.paths import ROOT, WIRE
from tests.support.served import hook_env

FIRST_SYNC = "sync-request-01-first-sync-no-children.json"
RUNNING = "sync-request-02-running-all-children-exist.json"
FINISHED = "sync-request-03-launcher-succeeded-workers-terminating.json"
FIXTURES = (FIRST_SYNC, RUNNING, FINISHED)
# The API versions the CompositeController declares, by kind (anything else deletes children).
DECLARED_API_VERSIONS = {
    "Pod": {"v1"},
    "Service": {"v1"},
    "Secret": {"v1"},
    "ConfigMap": {"v1"},
    "Job": {"batch/v1"},
    "PodGroup": {"scheduling.volcano.sh/v1beta1", "scheduling.x-k8s.io/v1alpha1"},
}
CONTROLLER_UID = "controller-uid"
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
# Generous: a loaded CI machine (image builds and a kubelet next door) can take many seconds to import
# FastAPI; a slow start is not what these tests measure.
STARTUP_SECONDS = 60
CURL_SECONDS = 15

# On a developer machine without curl these tests are skipped; in CI (.ci/run installs curl) they must run.
pytestmark = pytest.mark.skipif(
    shutil.which("curl") is None and not os.environ.get("CI"), reason="the curl binary is required"
)


@dataclass
class Hook:
    url: str
    workdir: Path
    log: Path
    process: subprocess.Popen[bytes]
    # Every response body this session, so the log check can look for every key the hook handed out.
    bodies: list[bytes] = field(default_factory=list)


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"hook exited with {process.returncode} during start-up:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    pytest.fail(f"hook not healthy after {STARTUP_SECONDS}s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hook]:
    workdir = tmp_path_factory.mktemp("hook")
    seed = workdir / "ssh-key-seed"
    seed.write_bytes(secrets.token_bytes(48))
    log = workdir / "server.log"
    env = hook_env({"MPI_OPERATOR_SSH_KEY_SEED_FILE": str(seed), "MPI_OPERATOR_LOG_LEVEL": "DEBUG"})
    port = free_port()
    uvicorn = [sys.executable, "-m", "uvicorn", "app.server.main:app"]
    command = [*uvicorn, "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, log)
        yield Hook(url=url, workdir=workdir, log=log, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def curl(hook: Hook, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    """One request with the real curl binary: POST ``body`` as JSON, or GET when ``body`` is None."""
    token = uuid.uuid4().hex
    out = hook.workdir / f"response-{token}"
    command = ["curl", "-sS", "--max-time", str(CURL_SECONDS), "-o", str(out), "-w", "%{http_code}"]
    if body is not None:
        request = hook.workdir / f"request-{token}"
        request.write_bytes(body)
        command += ["-H", "Content-Type: application/json", "--data-binary", f"@{request}"]
    command.append(hook.url + path)
    done = subprocess.run(command, capture_output=True, timeout=CURL_SECONDS + 5, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    answer = out.read_bytes()
    hook.bodies.append(answer)
    assert b"Traceback" not in answer
    return int(done.stdout), answer


def sync(hook: Hook, request: dict[str, Any] | bytes) -> dict[str, Any]:
    body = request if isinstance(request, bytes) else json.dumps(request).encode()
    code, answer = curl(hook, "/sync", body)
    assert code == 200, answer[:500]
    return json.loads(answer)


def load(name: str) -> dict[str, Any]:
    return json.loads((WIRE / name).read_text())


def v2_keys(request: dict[str, Any]) -> dict[str, Any]:
    """The same request as a ``version: v2`` hook receives it: inner keys ``namespace/name``."""
    changed = copy.deepcopy(request)
    for section in ("children", "related"):
        for group, objects in changed.get(section, {}).items():
            changed[section][group] = {
                "/".join(filter(None, (o["metadata"].get("namespace"), o["metadata"]["name"]))): o
                for o in objects.values()
            }
    return changed


def observed_identities(request: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(apiVersion, kind, name) of each child in a request (outer key ``Kind.version``, ``Kind.group/v``)."""
    identities = set()
    for group, objects in request["children"].items():
        kind, _, api_version = group.partition(".")
        identities |= {(api_version, kind, o["metadata"]["name"]) for o in objects.values()}
    return identities


def by_identity(children: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    indexed = {(c["apiVersion"], c["kind"], c["metadata"]["name"]): c for c in children}
    assert len(indexed) == len(children), "two desired children share apiVersion, kind and name"
    return indexed


def controller_uid_labels(value: Any) -> list[tuple[str, str]]:
    """Every ``controller-uid`` label, also inside pod templates: (path, value)."""
    return [
        (path, labels[CONTROLLER_UID])
        for path, labels in walk(value)
        if path.endswith(".labels") and isinstance(labels, dict) and CONTROLLER_UID in labels
    ]


def scrub_new_timestamps(value: Any, request_text: str) -> Any:
    """Timestamps the hook made up from its clock (absent from the request) become ``<now>``."""
    if isinstance(value, dict):
        return {k: scrub_new_timestamps(v, request_text) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_new_timestamps(v, request_text) for v in value]
    if isinstance(value, str) and TIMESTAMP.match(value) and f'"{value}"' not in request_text:
        return "<now>"
    return value


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def private_keys(bodies: list[bytes]) -> set[str]:
    """Every ``ssh-privatekey`` value in these response bodies, base64 as sent and decoded PEM lines."""
    found: set[str] = set()
    for body in bodies:
        try:
            answer = json.loads(body)
        except ValueError:
            continue
        if not isinstance(answer, dict):
            continue
        for child in answer.get("children") or []:
            value = (child.get("data") or {}).get("ssh-privatekey") if child.get("kind") == "Secret" else None
            if not value:
                continue
            found.add(value)
            pem = base64.b64decode(value).decode()
            found |= {line for line in pem.splitlines() if len(line) >= 16 and not line.startswith("-----")}
    return found


# --- well-formed requests ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_wire_fixture_answers_the_response_shape(hook: Hook, name: str) -> None:
    request = load(name)
    response = sync(hook, request)
    assert set(response) == {"status", "children", "resyncAfterSeconds"}
    assert isinstance(response["status"], dict) and response["status"]
    assert isinstance(response["resyncAfterSeconds"], int | float) and response["resyncAfterSeconds"] >= 0
    children = response["children"]
    assert isinstance(children, list) and children
    namespace = request["parent"]["metadata"]["namespace"]
    for child in children:
        assert isinstance(child, dict), "a null child crashes Metacontroller"
        assert child["apiVersion"] in DECLARED_API_VERSIONS[child["kind"]]
        assert isinstance(child["metadata"]["name"], str) and child["metadata"]["name"]
        assert child["metadata"].get("namespace", namespace) == namespace
        assert "ownerReferences" not in child["metadata"]
        assert "generateName" not in child["metadata"]
    assert controller_uid_labels(children) == []
    by_identity(children)  # no two children collapse into one


def test_first_sync_creates_every_child_and_a_created_condition(hook: Hook) -> None:
    response = sync(hook, load(FIRST_SYNC))
    kinds = [(c["kind"], c["metadata"]["name"]) for c in response["children"]]
    assert sorted(kinds) == sorted(
        [
            ("Service", "pi"),
            ("ConfigMap", "pi-config"),
            ("Secret", "pi-ssh"),
            ("Pod", "pi-worker-0"),
            ("Pod", "pi-worker-1"),
            ("Job", "pi-launcher"),
        ]
    )
    created = condition(response["status"], "Created")
    assert created is not None and created["status"] == "True"
    assert condition(response["status"], "Invalid") is None


def test_running_job_keeps_every_child_and_the_observed_ssh_key(hook: Hook) -> None:
    request = load(RUNNING)
    response = sync(hook, request)
    assert observed_identities(request) == set(by_identity(response["children"]))
    secret = next(c for c in response["children"] if c["kind"] == "Secret")
    assert secret["data"] == request["children"]["Secret.v1"]["pi-ssh"]["data"]
    # Nothing about the job changed, so the status is the stored one (no clock in it).
    assert response["status"]["startTime"] == request["parent"]["status"]["startTime"]
    assert response["status"]["conditions"] == request["parent"]["status"]["conditions"]


@pytest.mark.parametrize("name", FIXTURES)
def test_hook_v2_keys_give_the_same_response(hook: Hook, name: str) -> None:
    request = load(name)
    changed = v2_keys(request)
    if any(request["children"].values()):
        assert changed["children"] != request["children"], "the fixture should have keys to rewrite"
    text = json.dumps(request)
    v1 = scrub_new_timestamps(sync(hook, request), text)
    v2 = scrub_new_timestamps(sync(hook, changed), text)
    assert v2["status"] == v1["status"]
    assert v2["resyncAfterSeconds"] == v1["resyncAfterSeconds"]
    # Seeded keys (first sync) or the observed Secret (later): the SSH key is identical too.
    assert by_identity(v2["children"]) == by_identity(v1["children"])


# --- an invalid MPIJob: 200, Invalid condition, nothing deleted -------------------------------------


def _invalid_running_job(replicas: Any) -> dict[str, Any]:
    request = load(RUNNING)
    request["parent"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = replicas
    return request


@pytest.mark.parametrize("style", ["v1", "v2"])
@pytest.mark.parametrize(
    ("replicas", "path"),
    [
        (0, "spec.mpiReplicaSpecs[Worker].replicas"),  # fails validation
        ("two", 'spec.mpiReplicaSpecs[Worker].replicas: Invalid value: "two"'),  # does not even parse
    ],
)
def test_invalid_job_gets_an_invalid_condition_and_keeps_every_child(
    hook: Hook, style: str, replicas: Any, path: str
) -> None:
    request = _invalid_running_job(replicas)
    if style == "v2":
        request = v2_keys(request)
    response = sync(hook, request)
    assert set(response) == {"status", "children", "resyncAfterSeconds"}
    invalid = condition(response["status"], "Invalid")
    assert invalid is not None and invalid["status"] == "True"
    assert path in invalid["message"]
    # The stored status is carried forward, not wiped.
    previous = request["parent"]["status"]
    assert response["status"]["startTime"] == previous["startTime"]
    for kept in previous["conditions"]:
        assert condition(response["status"], kept["type"]) == kept
    # Every observed child comes back, so Metacontroller deletes nothing; the SSH key is not rotated.
    children = by_identity(response["children"])
    assert set(children) == observed_identities(request)
    secret = children[("v1", "Secret", "pi-ssh")]
    assert secret["data"] == next(iter(request["children"]["Secret.v1"].values()))["data"]
    for child in response["children"]:
        assert "ownerReferences" not in child["metadata"]
    # Re-emitted last-applied objects may carry controller-uid; it must then be this parent's own UID,
    # since a different value aborts the whole sync (docs/architecture.md).
    uid = request["parent"]["metadata"]["uid"]
    assert {value for _, value in controller_uid_labels(response["children"])} <= {uid}


def test_invalid_condition_is_dropped_once_the_job_is_fixed(hook: Hook) -> None:
    broken = sync(hook, _invalid_running_job(0))
    fixed = load(RUNNING)
    fixed["parent"]["status"] = broken["status"]
    response = sync(hook, fixed)
    assert condition(response["status"], "Invalid") is None
    assert observed_identities(fixed) == set(by_identity(response["children"]))


# --- malformed requests: 400, short, never echoing input ---------------------------------------------

MARKER = "FAKE-SECRET-" + uuid.uuid4().hex


def _with(change: dict[str, Any]) -> bytes:
    request = load(FIRST_SYNC)
    request.update(change)
    return json.dumps(request).encode()


def _pod_parent() -> bytes:
    request = load(FIRST_SYNC)
    request["parent"] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": MARKER, "namespace": "default", "labels": {MARKER: MARKER}},
        "spec": {"containers": [{"name": "x", "image": MARKER}]},
    }
    return json.dumps(request).encode()


MALFORMED = {
    "not-json": f"{{not json at all {MARKER}".encode(),
    "json-array": json.dumps([MARKER, {"parent": MARKER}]).encode(),
    "empty-object": b"{}",
    "object-without-parent": json.dumps({MARKER: MARKER, "children": {}}).encode(),
    "parent-is-a-pod": _pod_parent(),
    "parent-is-a-string": _with({"parent": MARKER}),
    "children-is-a-list": _with({"children": [MARKER]}),
    "children-kind-is-a-list": _with({"children": {"Pod.v1": [MARKER]}}),
    "child-is-a-string": _with({"children": {"Pod.v1": {MARKER: MARKER}}}),
    "secret-data-not-strings": _with(
        {"children": {"Secret.v1": {"pi-ssh": {"metadata": {"name": "pi-ssh"}, "data": {MARKER: 1}}}}}
    ),
    "finalizing-not-bool": _with({"finalizing": MARKER}),
    "empty-body": b"",
}


def _assert_short_error(code: int, answer: bytes) -> None:
    assert code == 400, answer[:500]
    assert MARKER.encode() not in answer
    error = json.loads(answer)
    assert set(error) == {"error"}
    assert isinstance(error["error"], str) and 0 < len(error["error"]) <= 300


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_sync_request_is_a_400_that_does_not_echo_input(hook: Hook, body: bytes) -> None:
    _assert_short_error(*curl(hook, "/sync", body))


@pytest.mark.parametrize(
    "body",
    [MALFORMED["not-json"], MALFORMED["json-array"], MALFORMED["empty-body"], _with({"parent": MARKER})],
    ids=["not-json", "json-array", "empty-body", "parent-is-a-string"],
)
def test_malformed_customize_request_is_a_400_that_does_not_echo_input(hook: Hook, body: bytes) -> None:
    _assert_short_error(*curl(hook, "/customize", body))


def test_parent_with_malformed_metadata_is_a_400_that_does_not_echo_input(hook: Hook) -> None:
    request = load(RUNNING)
    request["parent"]["metadata"]["labels"] = {MARKER: 1}
    _assert_short_error(*curl(hook, "/sync", json.dumps(request).encode()))


# --- the other endpoints ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_200(hook: Hook, path: str) -> None:
    code, answer = curl(hook, path)
    assert code == 200
    assert isinstance(json.loads(answer), dict)


def test_metrics_count_a_created_job(hook: Hook) -> None:
    sync(hook, load(FIRST_SYNC))
    code, answer = curl(hook, "/metrics")
    assert code == 200
    text = answer.decode()
    assert "mpi_operator_jobs_created_total" in text
    value = re.search(r"^mpi_operator_jobs_created_total (\S+)$", text, re.MULTILINE)
    assert value is not None and float(value.group(1)) >= 1
    assert 'mpi_operator_hook_requests_total{hook="sync",outcome="ok"}' in text


def test_customize_selects_the_launcher_pods(hook: Hook) -> None:
    code, answer = curl(hook, "/customize", (WIRE / FIRST_SYNC).read_bytes())
    assert code == 200
    response = json.loads(answer)
    assert set(response) == {"relatedResources"}
    # The recorded controller declares both PodGroup kinds, so PriorityClasses are asked for too.
    related, priority_classes = response["relatedResources"]
    assert priority_classes == {"apiVersion": "scheduling.k8s.io/v1", "resource": "priorityclasses"}
    assert related["apiVersion"] == "v1"
    assert related["resource"] == "pods"
    assert related["labelSelector"] == {
        "matchLabels": {
            "training.kubeflow.org/job-name": "pi",
            "training.kubeflow.org/job-role": "launcher",
        }
    }
    assert related.get("namespace", "default") == "default"


# --- key material stays out of the logs ----------------------------------------------------------------


def test_private_keys_never_reach_the_server_log(hook: Hook) -> None:
    first = sync(hook, load(FIRST_SYNC))
    seeded = next(c for c in first["children"] if c["kind"] == "Secret")["data"]["ssh-privatekey"]
    assert base64.b64decode(seeded).startswith(b"-----BEGIN EC PRIVATE KEY-----")
    # A malformed request carrying the key, and an invalid job re-emitting the observed Secret.
    curl(hook, "/sync", _with({"children": {"Secret.v1": {"pi-ssh": {"data": {"ssh-privatekey": 1}}}}}))
    curl(hook, "/sync", json.dumps({"parent": seeded}).encode())
    sync(hook, _invalid_running_job(0))
    keys = private_keys(hook.bodies)
    assert seeded in keys and len(keys) > 1
    curl(hook, "/readyz")  # its access-log line, once written, shows the log has caught up
    deadline = time.monotonic() + 5
    while b"GET /readyz" not in hook.log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = hook.log.read_text(errors="replace")
    assert "POST /sync" in log, "server output was not captured"
    assert "Traceback" not in log
    leaked = sorted(key[:16] + "..." for key in keys if key in log)
    assert leaked == [], f"private key material in the server log: {leaked}"
