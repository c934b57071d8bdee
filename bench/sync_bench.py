"""How long one sync of a big MPIJob takes, next to ``json.loads`` of the same request.

Builds a steady-state request for N workers (default 4,096) from a recorded Metacontroller request whose
worker Pod (managedFields, last-applied annotation, status: ~7.5 KB) is cloned N times, then times, best
of R runs:
``json.loads`` alone, and the hook's whole path (decode → sync → orjson encode). ``--nodes M``: the same job
also with its hostfile ordered by topology (``mpi-operator-hook/hostfile-order``), its workers bound across M
Nodes sent as related objects (~12 KB each: labels and a status of 50 images), timed side by side.

    .venv/bin/python bench/sync_bench.py [--workers 4096] [--repeat 5] [--nodes 1000]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import SyncConfig
from app.core.sync import sync
from app.kube.keys import SeededKeys
from app.kube.request import decode_request
from app.settings import Settings

NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
KEYS = SeededKeys(b"benchmark seed, not a secret, 32+ bytes")


WIRE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "wire"


def build_request(workers: int) -> bytes:
    """Fixture 02 (a real steady-state request) with its recorded worker Pod cloned ``workers`` times."""
    request = json.loads((WIRE / "sync-request-02-running-all-children-exist.json").read_text())
    request["parent"]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = workers
    pods = request["children"]["Pod.v1"]
    template = next(iter(pods.values()))
    pods.clear()
    for i in range(workers):
        pod = copy.deepcopy(template)
        name = f"pi-worker-{i}"
        pod["metadata"]["name"] = name
        pod["metadata"]["uid"] = f"uid-{i}"
        pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] = str(i)
        pod["spec"]["hostname"] = name
        pods[name] = pod
    return orjson.dumps(request)


ZONE, RACK = "topology.kubernetes.io/zone", "example.com/rack"


def node(index: int) -> dict[str, object]:
    """A Node as a kubelet reports it, its status the bulk: 50 images."""
    labels = {f"example.com/label-{k}": "value" for k in range(8)}
    labels.update({ZONE: f"z{index % 4}", RACK: f"r{index % 32}", "kubernetes.io/hostname": f"node-{index}"})
    images = [
        {"names": [f"registry.example/team/image-{k}@sha256:{'0' * 64}"], "sizeBytes": 10**9}
        for k in range(50)
    ]
    return {"metadata": {"name": f"node-{index}", "labels": labels}, "status": {"images": images}}


def ordered_request(workers: int, nodes: int) -> bytes:
    """``build_request``'s job ordered by zone and rack, its workers bound round-robin to ``nodes`` Nodes."""
    request = orjson.loads(build_request(workers))
    annotations = request["parent"]["metadata"].setdefault("annotations", {})
    annotations["mpi-operator-hook/hostfile-order"] = "topology"
    annotations["mpi-operator-hook/hostfile-order-labels"] = f"{ZONE},{RACK}"
    for i, pod in enumerate(request["children"]["Pod.v1"].values()):
        pod["spec"]["nodeName"] = f"node-{i % nodes}"
    request["related"]["Node.v1"] = {f"node-{i}": node(i) for i in range(nodes)}
    return orjson.dumps(request)


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs: the least disturbed by a shared machine."""
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
    parser.add_argument("--nodes", type=int, default=0, help="also time the job ordered over this many Nodes")
    args = parser.parse_args()
    body = build_request(args.workers)
    settings = Settings()

    def whole_sync(request: bytes = body) -> bytes:
        # Server-side apply: under dynamic-apply a 4,096-worker ConfigMap is over its annotation budget.
        config = SyncConfig(settings.cluster_domain, annotation_budget=False)
        result = sync(decode_request(request), now=NOW, keys=KEYS, config=config)
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
    if args.nodes:
        ordered = ordered_request(args.workers, args.nodes)
        whole_sync(ordered)
        ordered_sync = best(lambda: whole_sync(ordered), args.repeat)
        print(f"ordered, {args.nodes} Nodes    request {len(ordered) / 1e6:.1f} MB")
        ratio = ordered_sync / hook
        print(f"ordered whole sync     {ordered_sync * 1e3:.0f} ms  ({ratio:.2f}x the same job unordered)")


if __name__ == "__main__":
    main()
