"""Hostile input, case by case (issue 7): each answers 200 with an ``Invalid`` condition naming the field
when the MPIJob is at fault, or 4xx with a short message that echoes nothing; never a 5xx.

The bodies are the recorded wire requests with one thing broken, sent to the ASGI app in process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from app.core.observed import classify
from app.kube.depth import MPIJOB_MAX_DEPTH, deeper_than, prune
from app.kube.keys import SeededKeys
from app.kube.quantity import canonical_quantity
from app.kube.request import decode_request
from app.server.main import create_app
from app.settings import Settings
from tests.support.golden_cases import SEED as TEST_SEED
from tests.support.paths import WIRE

RUNNING = json.loads((WIRE / "sync-request-02-running-all-children-exist.json").read_text())
FINISHED = json.loads((WIRE / "sync-request-03-launcher-succeeded-workers-terminating.json").read_text())
TEMPLATE = "spec.mpiReplicaSpecs[Worker].template"

Mutation = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(Settings(), SeededKeys(TEST_SEED)), raise_server_exceptions=False)


def _worker(request: dict[str, Any]) -> dict[str, Any]:
    worker: dict[str, Any] = request["parent"]["spec"]["mpiReplicaSpecs"]["Worker"]
    return worker


def _container(request: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _worker(request)["template"]["spec"]["containers"][0]
    return container


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {}
    for _ in range(depth):
        node = {"a": node}
    return node


def _splice(request: dict[str, Any], marker: int, text: str) -> bytes:
    """JSON with ``marker`` replaced by ``text``: integers json.dumps could write but never should."""
    return json.dumps(request).replace(str(marker), text).encode()


INVALID: list[tuple[str, Mutation, str]] = [
    (
        "ttl beyond int64",
        lambda r: r["parent"]["spec"]["runPolicy"].update(ttlSecondsAfterFinished=10**30),
        "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: <an integer beyond 64 bits>",
    ),
    (
        "slots beyond int32",
        lambda r: r["parent"]["spec"].update(slotsPerWorker=2**31),
        "spec.slotsPerWorker: Invalid value: 2147483648: must be no more than 2147483647",
    ),
    (
        "replicas 2**63",
        lambda r: _worker(r).update(replicas=2**63),
        "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: <an integer beyond 64 bits>: must be no more",
    ),
    (
        "replicas 10**9",
        lambda r: _worker(r).update(replicas=10**9),
        "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 1000000000",
    ),
    (
        "spec a string",
        lambda r: _worker(r)["template"].update(spec="x"),
        f"{TEMPLATE}.spec: Forbidden: must be an object",
    ),
    (
        "containers a number",
        lambda r: _worker(r)["template"]["spec"].update(containers=5),
        f"{TEMPLATE}.spec.containers: Forbidden: must be a list of objects",
    ),
    (
        "a container a number",
        lambda r: _worker(r)["template"]["spec"].update(containers=[5]),
        f"{TEMPLATE}.spec.containers: Forbidden: must be a list of objects",
    ),
    (
        "template metadata a string",
        lambda r: _worker(r)["template"].update(metadata="x"),
        f"{TEMPLATE}.metadata: Forbidden: must be an object",
    ),
    (
        "labels a list",
        lambda r: _worker(r)["template"].update(metadata={"labels": [1]}),
        f"{TEMPLATE}.metadata.labels: Forbidden: must be a map of strings to strings",
    ),
    (
        "env a number",
        lambda r: _container(r).update(env=5),
        f"{TEMPLATE}.spec.containers[0].env: Forbidden: must be a list of objects",
    ),
    (
        "command a string",
        lambda r: _container(r).update(command="sshd"),
        f"{TEMPLATE}.spec.containers[0].command: Forbidden: must be a list of strings",
    ),
    (
        "volumeMounts a number",
        lambda r: _container(r).update(volumeMounts=5),
        f"{TEMPLATE}.spec.containers[0].volumeMounts: Forbidden: must be a list of objects",
    ),
    (
        "volumes a number",
        lambda r: _worker(r)["template"]["spec"].update(volumes=5),
        f"{TEMPLATE}.spec.volumes: Forbidden: must be a list of objects",
    ),
    (
        "dnsConfig a string",
        lambda r: _worker(r)["template"]["spec"].update(dnsConfig="x"),
        f"{TEMPLATE}.spec.dnsConfig: Forbidden: must be an object",
    ),
    (
        "searches a string",
        lambda r: _worker(r)["template"]["spec"].update(dnsConfig={"searches": "x"}),
        f"{TEMPLATE}.spec.dnsConfig.searches: Forbidden: must be a list of strings",
    ),
    (
        "template integer beyond int64",
        lambda r: _worker(r)["template"]["spec"].update(terminationGracePeriodSeconds=2**64),
        f"{TEMPLATE}: Forbidden: every integer must fit in 64 bits",
    ),
    (
        "template integer in uint64 range",
        lambda r: _worker(r)["template"]["spec"].update(activeDeadlineSeconds=2**63),
        f"{TEMPLATE}: Forbidden: every integer must fit in 64 bits",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
@pytest.mark.parametrize("base", [RUNNING, FINISHED], ids=["running", "finished"])
def test_bad_mpijob_is_an_invalid_condition(
    client: TestClient, base: dict[str, Any], mutate: Mutation, message: str
) -> None:
    request = copy.deepcopy(base)
    mutate(request)
    response = client.post("/sync", content=json.dumps(request))
    assert response.status_code == 200, response.text
    invalid = [c for c in response.json()["status"]["conditions"] if c["type"] == "Invalid"]
    assert invalid and message in invalid[0]["message"]
    # Every observed child is kept, as last applied: a bad edit never deletes a running job.
    observed = {
        (kind.split(".")[0], name.split("/")[-1]) for kind, objs in base["children"].items() for name in objs
    }
    kept = {(c["kind"], c["metadata"]["name"]) for c in response.json()["children"]}
    assert kept == observed


@pytest.mark.parametrize("depth", [250, 1000, 9000])
@pytest.mark.parametrize("base", [RUNNING, FINISHED], ids=["running", "finished"])
def test_template_metadata_nested_beyond_the_parser_is_an_invalid_condition(
    client: TestClient, base: dict[str, Any], depth: int
) -> None:
    """The CRD keeps unknown fields under a template's metadata, at any depth the apiserver accepts."""
    request = copy.deepcopy(base)
    _worker(request)["template"].setdefault("metadata", {})["x"] = "DEEP"
    body = json.dumps(request).replace('"DEEP"', "[" * depth + "]" * depth, 1)
    response = client.post("/sync", content=body)
    assert response.status_code == 200, response.text
    invalid = [c for c in response.json()["status"]["conditions"] if c["type"] == "Invalid"]
    assert invalid[0]["message"].startswith(f"Found validation errors: {TEMPLATE}.metadata.x[]")
    assert "must not nest deeper than 64 levels" in invalid[0]["message"]
    assert len(response.content) < len(body)


def _depth(value: Any) -> int:
    """How deep containers nest in ``value``, the outermost at 1 (the reference ``deeper_than`` must agree
    with)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@pytest.mark.parametrize("base", [RUNNING, FINISHED], ids=["running", "finished"])
@pytest.mark.parametrize(("levels", "refused"), [(MPIJOB_MAX_DEPTH, False), (MPIJOB_MAX_DEPTH + 1, True)])
def test_the_parent_nests_at_most_max_depth_levels(
    client: TestClient, base: dict[str, Any], levels: int, refused: bool
) -> None:
    """The one limit is the message's: the parent (its outermost object at 1) may nest MPIJOB_MAX_DEPTH
    levels, and one more is an Invalid condition; far inside what the parsers would take (pydantic's ~200)."""
    request = copy.deepcopy(base)
    # The parent, spec, mpiReplicaSpecs, Worker, template and metadata hold x: its lists nest the rest.
    below = levels - 6
    _worker(request)["template"].setdefault("metadata", {})["x"] = json.loads("[" * below + "]" * below)
    assert _depth(request["parent"]) == levels
    response = client.post("/sync", content=json.dumps(request))
    assert response.status_code == 200, response.text
    invalid = [c for c in response.json()["status"]["conditions"] if c["type"] == "Invalid"]
    if not refused:
        assert invalid == []
        unchanged = client.post("/sync", content=json.dumps(base)).json()["children"]
        names = [(c["kind"], c["metadata"]["name"]) for c in response.json()["children"]]
        assert names == [(c["kind"], c["metadata"]["name"]) for c in unchanged]
        return
    path = f"{TEMPLATE}.metadata.x" + "[]" * (below - 1)
    path = path[:128]  # FieldError paths are cut at 128
    assert invalid[0]["message"] == (
        f"Found validation errors: {path}: Forbidden: must not nest deeper than {MPIJOB_MAX_DEPTH} levels"
    )


JSON = st.recursive(
    st.none() | st.integers() | st.text(alphabet='[]{}"\\ax\u00e9', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text('[]{}"\\b', max_size=4), inner, max_size=3)
    ),
    max_leaves=40,
)


@given(value=JSON, limit=st.integers(1, 12), indent=st.sampled_from([None, 1]))
def test_deeper_than_is_exact_whatever_the_strings_hold(value: Any, limit: int, indent: int | None) -> None:
    """Brackets, quotes and backslashes inside strings and keys are text, not structure."""
    raw = json.dumps(value, indent=indent, ensure_ascii=False).encode()
    assert deeper_than(raw, limit) == (_depth(value) > limit)
    assert deeper_than(raw, limit) == (prune(raw, limit)[1] is not None)


@pytest.mark.parametrize(
    "cpu", ["1e1000000", "1e-1000000", "9" * 5000 + "Ei", "123456789012345678901234567890.123456789012m"]
)
def test_extreme_quantities_are_emitted_as_written_or_canonical(client: TestClient, cpu: str) -> None:
    request = copy.deepcopy(RUNNING)
    _container(request)["resources"] = {"limits": {"cpu": cpu}}
    response = client.post("/sync", content=json.dumps(request))
    assert response.status_code == 200
    pods = [c for c in response.json()["children"] if c["kind"] == "Pod"]
    emitted = pods[0]["spec"]["containers"][0]["resources"]["limits"]["cpu"]
    assert emitted == cpu or len(emitted) < 40


@pytest.mark.parametrize(
    ("value", "want"),
    [("1e1000000", "1e1000000"), ("1e65", "1e65"), ("1e64", "10e63"), ("1.5Gi", "1536Mi"), ("1e-10", "1e-9")],
)
def test_quantity_bounds(value: str, want: str) -> None:
    assert canonical_quantity(value) == want


@pytest.mark.parametrize("suffix", ["\u00b2", "\u0661", "1" * 5000, "01", "1" * 11, "+1", " 1"])
def test_pods_that_only_look_like_workers_are_not_workers(suffix: str) -> None:
    request = copy.deepcopy(FINISHED)
    name = f"pi-worker-{suffix}"
    request["children"]["Pod.v1"] = {f"default/{name}": {"metadata": {"name": name, "namespace": "default"}}}
    assert classify("pi", decode_request(json.dumps(request).encode())).workers == {}


@pytest.mark.parametrize("base", [RUNNING, FINISHED], ids=["running", "finished"])
@pytest.mark.parametrize("suffix", ["\u00b2", "1" * 5000])
def test_odd_worker_names_answer_200(client: TestClient, base: dict[str, Any], suffix: str) -> None:
    request = copy.deepcopy(base)
    name = f"pi-worker-{suffix}"
    request["children"]["Pod.v1"][f"default/{name}"] = {"metadata": {"name": name, "namespace": "default"}}
    assert client.post("/sync", content=json.dumps(request)).status_code == 200


BAD_REQUESTS: list[tuple[str, str, bytes]] = [
    (
        "generation beyond int64",
        "/sync",
        _splice(
            {
                **RUNNING,
                "parent": {
                    **RUNNING["parent"],
                    "metadata": {**RUNNING["parent"]["metadata"], "generation": 4242424242},
                },
            },
            4242424242,
            str(2**64),
        ),
    ),
    (
        "generation 5,000 digits",
        "/sync",
        _splice(
            {
                **RUNNING,
                "parent": {
                    **RUNNING["parent"],
                    "metadata": {**RUNNING["parent"]["metadata"], "generation": 4242424242},
                },
            },
            4242424242,
            "9" * 5000,
        ),
    ),
    (
        "status counts beyond int64",
        "/sync",
        json.dumps(
            {
                **RUNNING,
                "parent": {**RUNNING["parent"], "status": {"replicaStatuses": {"Worker": {"active": 2**70}}}},
            }
        ).encode(),
    ),
    ("request nested 5,000 deep", "/sync", b'{"parent":' + b"[" * 5000 + b"]" * 5000 + b"}"),
    ("customize nested 5,000 deep", "/customize", b'{"parent":' + b"[" * 5000 + b"]" * 5000 + b"}"),
    (
        "customize name a number",
        "/customize",
        b'{"parent":{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":5}}}',
    ),
    ("not UTF-8", "/sync", b'{"parent":"\xff"}'),
    ("customize not UTF-8", "/customize", b"\xff\xfe"),
]


@pytest.mark.parametrize(("path", "body"), [c[1:] for c in BAD_REQUESTS], ids=[c[0] for c in BAD_REQUESTS])
def test_malformed_requests_are_short_400s(client: TestClient, path: str, body: bytes) -> None:
    response = client.post(path, content=body)
    assert response.status_code == 400
    assert len(response.content) < 200 and b"999" not in response.content and b"[[" not in response.content


def test_customize_ignores_numbers_it_does_not_read(client: TestClient) -> None:
    body = (
        b'{"parent":{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"a",'
        b'"generation":' + b"9" * 5000 + b"}}}"
    )
    response = client.post("/customize", content=body)
    assert response.status_code == 200 and response.json()["relatedResources"]


@pytest.mark.parametrize(
    ("raw", "limit", "want", "where"),
    [
        (b'{"a": [[1]], "b": 2}', 2, b'{"a": [null], "b": 2}', "a[]"),
        (b'{"a": [[1]], "b": 2}', 3, b'{"a": [[1]], "b": 2}', None),
        # Brackets and escaped quotes inside strings are text, not structure.
        (b'{"s": "[[[\\"{{", "t": {"u": {}}}', 2, b'{"s": "[[[\\"{{", "t": {"u": null}}', "t.u"),
        (b'{"a": {"b": [{"c": [1]}]}}', 3, b'{"a": {"b": [null]}}', "a.b[]"),
    ],
)
def test_prune_cuts_what_is_too_deep_and_says_where(raw: bytes, limit: int, want: bytes, where: str) -> None:
    assert prune(raw, limit) == (want, where)
    json.loads(prune(raw, limit)[0])


_DEEP = {
    "metadata": {"annotations": {}},
    "x": json.loads("[" * (MPIJOB_MAX_DEPTH + 5) + "]" * (MPIJOB_MAX_DEPTH + 5)),
}
NOT_AN_MPIJOB = "parent must be a MPIJob of apiVersion kubeflow.org/v2beta1"
# (case, parent, the 400's message): the parent's reader checks what it is, whichever way it is read.
NOT_MPIJOBS: list[tuple[str, object, str]] = [
    ("a Pod", {**RUNNING["parent"], "kind": "Pod"}, NOT_AN_MPIJOB),
    ("v1 MPIJob", {**RUNNING["parent"], "apiVersion": "kubeflow.org/v1"}, NOT_AN_MPIJOB),
    ("no apiVersion", {k: v for k, v in RUNNING["parent"].items() if k != "apiVersion"}, NOT_AN_MPIJOB),
    ("a Pod whose spec is no object", {**RUNNING["parent"], "kind": "Pod", "spec": 5}, NOT_AN_MPIJOB),
    ("a Pod nested too deep", {**RUNNING["parent"], "kind": "Pod", "spec": _DEEP}, NOT_AN_MPIJOB),
    (
        "a kind that is a number",
        {**RUNNING["parent"], "kind": 5},
        "not a Metacontroller hook request: Expected `str`, got `int` - at `$.kind`",
    ),
    (
        "a parent that is a list",
        [],
        "not a Metacontroller hook request: Expected `object`, got `array`",
    ),
]


@pytest.mark.parametrize(("parent", "message"), [c[1:] for c in NOT_MPIJOBS], ids=[c[0] for c in NOT_MPIJOBS])
def test_a_parent_that_is_no_mpijob_is_a_bad_request(
    client: TestClient, parent: object, message: str
) -> None:
    body = json.dumps({**RUNNING, "parent": parent}).encode()
    for _ in range(2):  # the second time as the first: nothing about it was remembered
        response = client.post("/sync", content=body)
        assert (response.status_code, response.json()) == (400, {"error": message})
