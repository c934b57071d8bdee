"""How long one sync of a big MPIJob takes, next to ``json.loads`` of the same request.

Builds a steady-state request for N workers (default 4,096) whose observed Pods look like real ones
(managedFields, last-applied annotation, status: ~7 KB each), then times, best of R runs:
``json.loads`` alone, and the hook's whole path (decode → sync → orjson encode).

    .venv/bin/python bench/sync_bench.py [--workers 4096] [--repeat 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.keys import SeededKeys
from app.core.request import decode_request
from app.core.sync import sync
from app.settings import Settings
from tests.builders import mpijob, observe, sync_request, with_job_status, with_pod_status

NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
KEYS = SeededKeys(b"benchmark seed, not a secret, 32+ bytes")


def realistic(pod: dict) -> dict:
    """Add what the apiserver and kubelet add to a running Pod (managedFields, status details)."""
    pod = with_pod_status(observe(pod), "Running", ready=True)
    pod["metadata"]["managedFields"] = [
        {
            "manager": "metacontroller",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-05-04T09:00:01Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {f"f:label-{i}": {} for i in range(6)}},
                "f:spec": {f"f:field-{i}": {} for i in range(30)},
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-05-04T09:00:05Z",
            "subresource": "status",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {f"f:field-{i}": {} for i in range(30)}},
        },
    ]
    pod["spec"].update(
        nodeName="node-0042",
        serviceAccountName="default",
        schedulerName="default-scheduler",
        tolerations=[
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
    )
    pod["status"].update(
        hostIP="172.18.0.3",
        podIP="10.244.1.7",
        qosClass="Guaranteed",
        startTime="2026-05-04T09:00:01Z",
        containerStatuses=[
            {
                "name": "worker",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "image": "docker.io/mpioperator/mpi-pi:openmpi",
                "imageID": "docker.io/mpioperator/mpi-pi@sha256:" + "a" * 64,
                "containerID": "containerd://" + "f" * 64,
                "state": {"running": {"startedAt": "2026-05-04T09:00:05Z"}},
            }
        ],
    )
    return pod


def build_request(workers: int) -> bytes:
    job = mpijob().workers(workers).build()
    first = sync(decode_request(orjson.dumps(sync_request(job))), now=NOW, keys=KEYS, settings=Settings())
    template = next(c for c in first.children if c["kind"] == "Pod")
    pod = realistic(template)
    children = [c for c in first.children if c["kind"] != "Pod"]
    observed = [
        with_job_status(observe(c), active=1, ready=1) if c["kind"] == "Job" else observe(c) for c in children
    ]
    for i in range(workers):
        clone = copy.deepcopy(pod)
        name = f"pi-worker-{i}"
        clone["metadata"]["name"] = name
        clone["metadata"]["uid"] = f"uid-{i}"
        clone["spec"]["hostname"] = name
        observed.append(clone)
    job["status"] = first.status
    return orjson.dumps(sync_request(job, observed))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    body = build_request(args.workers)
    settings = Settings()

    def whole_sync() -> bytes:
        result = sync(decode_request(body), now=NOW, keys=KEYS, settings=settings)
        return orjson.dumps(result.response())

    out = whole_sync()
    json_loads = best(lambda: json.loads(body), args.repeat)
    hook = best(whole_sync, args.repeat)
    decode = best(lambda: decode_request(body), args.repeat)
    tracemalloc.start()
    whole_sync()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"workers                {args.workers}")
    print(
        f"request size           {len(body) / 1e6:.1f} MB "
        f"({len(body) / max(args.workers, 1) / 1e3:.1f} KB/worker)"
    )
    print(f"response size          {len(out) / 1e6:.1f} MB")
    print(f"json.loads(request)    {json_loads * 1e3:.0f} ms")
    print(f"decode_request         {decode * 1e3:.0f} ms")
    print(f"whole sync (dec+enc)   {hook * 1e3:.0f} ms  ({hook / json_loads:.2f}x json.loads)")
    print(f"peak traced memory     {peak / 1e6:.0f} MB (one whole sync)")


if __name__ == "__main__":
    main()
