"""Size bounds: the largest job, the ConfigMap and template budgets, computed before anything is built.

``config_bytes`` is arithmetic; here it is held to the ConfigMap the hook really builds (JSON-encoded as
Metacontroller would store it in its last-applied annotation), across names, domains and implementations.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest

from app.api import limits
from app.api.defaults import Job, with_defaults
from app.api.hostfile_order_annotations import MAX_HEADER_BYTES, MAX_LABELS, MAX_TABLE_BYTES, ORDER_ANNOTATION
from app.api.types import MPIJob
from app.api.validation import validate
from app.children.configmap import build_configmap, upstream_hosts
from app.children.hostfile_order_lines import HostfileOrder, Placement
from app.core.config import SyncConfig
from app.core.sync import sync
from app.kube import names
from app.kube.request import RequestError, decode_request
from app.settings import Settings
from tests.support.builders import mpijob, sync_request
from tests.support.golden_cases import NOW
from tests.support.metacontroller import FakeMetacontroller
from tests.support.paths import WIRE


def _job(name: str = "pi", namespace: str = "default", **spec: Any) -> Job:
    builder = mpijob(name, namespace)
    for key, value in spec.items():
        builder.set(f"spec.{key}", value)
    return with_defaults(MPIJob.model_validate(builder.build()))


def _data_json(job: Job, domain: str) -> int:
    """Bytes of both data values inside the ConfigMap's JSON, every worker running."""
    running = [names.worker_name(job.name, i) for i in range(job.worker_replicas)]
    data = build_configmap(job, running, domain)["data"]
    return sum(len(orjson.dumps(v)) - 2 for v in data.values())  # minus the quotes


@pytest.mark.parametrize("replicas", [1, 9, 10, 11, 99, 100, 101, 1000, 1234])
@pytest.mark.parametrize(
    ("name", "namespace", "domain", "impl", "launcher_is_worker", "slots"),
    [
        ("pi", "default", "", "OpenMPI", False, 1),
        ("a", "b", "cluster.local", "Intel", True, 8),
        ("x" * 40, "n" * 63, "c" * 200, "MPICH", False, 2147483647),
        ("pi", "default", "example.org", "OpenMPI", True, 16),
    ],
)
def test_config_bytes_is_the_built_configmap(
    replicas: int, name: str, namespace: str, domain: str, impl: str, launcher_is_worker: bool, slots: int
) -> None:
    job = _job(
        name,
        namespace,
        mpiImplementation=impl,
        runLauncherAsWorker=launcher_is_worker,
        slotsPerWorker=slots,
        mpiReplicaSpecs=_workers(replicas),
    )
    assert limits.config_bytes(job, domain) == _data_json(job, domain)


def _workers(n: int) -> dict[str, Any]:
    specs = mpijob().spec["mpiReplicaSpecs"]
    return {**specs, "Worker": {**specs["Worker"], "replicas": n}}


def _largest_fitting(name: str, namespace: str, domain: str, annotation_budget: bool) -> int:
    low, high = 1, limits.MAX_WORKERS
    while low < high:
        mid = (low + high + 1) // 2
        job = _job(name, namespace, mpiReplicaSpecs=_workers(mid))
        if validate(job, cluster_domain=domain, annotation_budget=annotation_budget):
            high = mid - 1
        else:
            low = mid
    return low


def test_largest_jobs_for_typical_names() -> None:
    """The figures docs/operations.md "Limits" quotes, for `pi` in `default`."""
    assert _largest_fitting("pi", "default", "", annotation_budget=True) == 3497
    assert _largest_fitting("pi", "default", "cluster.local", annotation_budget=True) == 2546
    assert _largest_fitting("pi", "default", "cluster.local", annotation_budget=False) == 10178
    assert _largest_fitting("pi", "default", "", annotation_budget=False) == 13879


def test_configmap_too_large_is_a_clear_validation_error() -> None:
    job = _job(mpiReplicaSpecs=_workers(4096))
    errors = validate(job, cluster_domain="cluster.local")
    assert [(e.field, e.kind) for e in errors] == [("spec.mpiReplicaSpecs[Worker].replicas", "Invalid")]
    assert "4096 workers take" in str(errors[0]) and "256 KiB" in str(errors[0])
    assert validate(job, cluster_domain="", annotation_budget=False) == []


def test_worker_count_above_the_maximum_is_invalid() -> None:
    job = _job(mpiReplicaSpecs=_workers(limits.MAX_WORKERS + 1))
    errors = validate(job, annotation_budget=False)
    assert [str(e) for e in errors] == [
        f"spec.mpiReplicaSpecs[Worker].replicas: Invalid value: {limits.MAX_WORKERS + 1}: "
        + limits.MAX_WORKERS_MESSAGE
    ]


def test_template_too_large_for_the_annotation_is_invalid() -> None:
    specs = mpijob().spec["mpiReplicaSpecs"]
    worker = specs["Worker"]
    big = {**worker["template"], "metadata": {"annotations": {"a": "x" * limits.TEMPLATE_BUDGET}}}
    job = _job(mpiReplicaSpecs={**specs, "Worker": {**worker, "template": big}})
    errors = validate(job)
    assert [(e.field, e.kind) for e in errors] == [("spec.mpiReplicaSpecs[Worker].template", "TooLong")]
    assert validate(job, annotation_budget=False) == []


@pytest.mark.parametrize("replicas", [10**9, 2**63, 10**30], ids=["1e9", "2**63", "1e30"])
def test_absurd_worker_counts_answer_at_once(replicas: int) -> None:
    """The issue's hang: 10**9 workers made /sync spin forever. Now it is an Invalid condition."""
    parent = mpijob().workers(replicas).build()
    body = orjson.dumps(sync_request(parent)) if replicas < 2**63 else _raw_request(parent, str(replicas))
    result = sync(decode_request(body), now=NOW, keys=lambda uid: pytest.fail("no key"), config=SyncConfig())
    invalid = [c for c in result.status["conditions"] if c["type"] == "Invalid"]
    assert invalid and "spec.mpiReplicaSpecs[Worker].replicas: Invalid value:" in invalid[0]["message"]
    assert result.children == []
    assert len(orjson.dumps(result.response())) < 4096


def test_a_number_no_apiserver_could_store_is_a_short_bad_request() -> None:
    """5,000 digits do not even parse as JSON numbers for pydantic: a 400 that echoes nothing."""
    body = _raw_request(mpijob().build(), "9" * 5000)
    with pytest.raises(RequestError) as caught:
        sync(decode_request(body), now=NOW, keys=lambda uid: pytest.fail("no key"), config=SyncConfig())
    assert len(str(caught.value)) < 100 and "999" not in str(caught.value)


def _raw_request(parent: dict[str, Any], replicas: str) -> bytes:
    """orjson cannot write integers beyond 64 bits; splice one into the JSON text."""
    parent["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 424242
    return orjson.dumps(sync_request(parent)).decode().replace("424242", replicas).encode()


def test_a_job_too_large_for_its_configmap_creates_nothing_and_says_why() -> None:
    """Through the fake Metacontroller: the Invalid condition instead of a ConfigMap the apiserver refuses."""
    cluster = FakeMetacontroller(settings=Settings(cluster_domain="cluster.local"))
    cluster.apply_mpijob(mpijob().workers(3000).build())
    cluster.sync_until_steady()
    assert cluster.conditions()["Invalid"][0] == "True"
    invalid = next(c for c in cluster.status["conditions"] if c["type"] == "Invalid")
    assert "3000 workers take" in invalid["message"] and "256 KiB" in invalid["message"]
    assert cluster.names("ConfigMap") == [] and cluster.names("Pod") == []
    cluster.edit_spec("mpiReplicaSpecs.Worker.replicas", 2000)  # the user's fix
    cluster.sync_until_steady()
    assert "Invalid" not in cluster.conditions()
    assert cluster.names("ConfigMap") == ["pi-config"] and len(cluster.names("Pod")) == 2000


def test_a_large_request_is_decoded_in_place_never_copied() -> None:
    """The guard hands the endpoint a view of the one buffer it read the body into; decoding must not copy
    it (a 4,096-worker request is ~30 MB: a copy held it twice, a third more of the hook's peak memory)."""
    wire = orjson.loads((WIRE / "sync-request-02-running-all-children-exist.json").read_bytes())
    pods = wire["children"]["Pod.v1"]
    pod = next(iter(pods.values()))
    pods.clear()
    for i in range(300):
        pods[f"pi-worker-{i}"] = {**pod, "metadata": {**pod["metadata"], "name": f"pi-worker-{i}"}}
    body = bytearray(orjson.dumps(wire))
    assert len(body) > 2_000_000
    tracemalloc.start()
    try:
        request = decode_request(memoryview(body))  # type: ignore[arg-type]  # the guard passes a view
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(request.children.pods or {}) == 300
    assert peak < len(body) / 2, f"decoding took {peak:,} bytes for a {len(body):,}-byte body"


@pytest.mark.parametrize("replicas", [1, 11, 1000])
@pytest.mark.parametrize(("impl", "launcher_is_worker", "slots"), [("OpenMPI", True, 4), ("MPICH", False, 2)])
def test_config_bytes_bounds_an_ordered_hostfile_at_its_largest(
    replicas: int, impl: str, launcher_is_worker: bool, slots: int
) -> None:
    """An ordered hostfile (Open MPI: a line per slot, the launcher by its short name), its first line and its
    table at their largest: the longest label keys and values, node and launcher Pod names."""
    builder = mpijob("pi", "default").set("metadata.annotations", {ORDER_ANNOTATION: "topology"})
    for key, value in {
        "mpiImplementation": impl,
        "runLauncherAsWorker": launcher_is_worker,
        "slotsPerWorker": slots,
        "mpiReplicaSpecs": _workers(replicas),
    }.items():
        builder.set(f"spec.{key}", value)
    job = with_defaults(MPIJob.model_validate(builder.build()))
    labels = tuple(f"{'d' * 253}/{'k' * 62}{i}" for i in range(MAX_LABELS))
    hosts = upstream_hosts(job)
    placements = tuple(Placement(h, "n" * 253, ("v" * 63,) * len(labels)) for h in hosts)
    order = HostfileOrder(labels, placements, "p" * 253 if launcher_is_worker else "")
    running = [names.worker_name(job.name, i) for i in range(job.worker_replicas)]
    data = build_configmap(job, running, "cluster.local", order)["data"]
    built = sum(len(orjson.dumps(v)) - 2 for v in data.values())
    body = len(orjson.dumps(data["hostfile"].split("\n", 1)[1])) - 2
    reserve = MAX_HEADER_BYTES + MAX_TABLE_BYTES + MAX_TABLE_BYTES // 16
    assert built <= limits.config_bytes(job, "cluster.local")
    discover = len(orjson.dumps(data["discover_hosts.sh"])) - 2
    assert limits.config_bytes(job, "cluster.local") - reserve == body + discover
