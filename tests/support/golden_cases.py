"""The golden scenarios: each builds one recorded-style Metacontroller request (and its settings).

``tests/golden/<case>/request.json`` is written from these builders with ``--update-golden`` and then
read back from disk, so the files are what is tested (and what the curl smoke test posts); a case that repeats
another is stored as a patch onto it, read through tests/support/golden_store.py. Beside it, ``case.json``
says the settings the answer is made with, in the format of ``examples/requests/``'s case files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from app.core.sync import SyncResult, Verdict, judge, sync
from app.kube.keys import SeededKeys
from app.kube.request import decode_request
from app.server.memo import ParentMemo, remember
from app.server.record import CASE
from app.settings import Settings, env_name
from tests.support.builders import (
    MPIJobBuilder,
    launcher_pod,
    mpijob,
    observe,
    priority_class,
    sync_request,
    with_job_status,
    with_pod_status,
)
from tests.support.paths import GOLDEN, WIRE

NOW = datetime(2026, 5, 4, 9, 0, 30, tzinfo=UTC)
SEED = b"mpi-operator-hook test seed, not a secret"

CREATED_STATUS = {
    "conditions": [
        {
            "type": "Created",
            "status": "True",
            "reason": "MPIJobCreated",
            "message": "MPIJob default/pi is created.",
            "lastUpdateTime": "2026-05-04T09:00:01Z",
            "lastTransitionTime": "2026-05-04T09:00:01Z",
        }
    ],
    "replicaStatuses": {"Worker": {}},
    "startTime": "2026-05-04T09:00:01Z",
    "observedGeneration": 1,
}
RUNNING_STATUS = {
    **CREATED_STATUS,
    "conditions": [
        *CREATED_STATUS["conditions"],
        {
            "type": "Running",
            "status": "True",
            "reason": "MPIJobRunning",
            "message": "MPIJob default/pi is running.",
            "lastUpdateTime": "2026-05-04T09:00:10Z",
            "lastTransitionTime": "2026-05-04T09:00:10Z",
        },
    ],
    "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 2}},
}


# The launcher Job's Pod, as the customize hook delivers it in ``related``.
LAUNCHER_RUNNING = [launcher_pod("pi", 0, "Running", created="2026-05-04T09:00:02Z")]


@dataclass(frozen=True)
class Case:
    build: Callable[[], dict[str, Any]]
    settings: dict[str, str] = field(default_factory=dict)
    doc: str = ""


def first_sync_children(
    job: dict[str, Any], podgroup: str | None = None, **settings: str
) -> list[dict[str, Any]]:
    """The children the hook creates on a first sync, as Metacontroller would list them afterwards."""
    request = sync_request(job, podgroup=podgroup, priority_classes=PRIORITY_CLASSES)
    return [observe(c) for c in run(request, Settings(**settings))["children"]]


def running(children: list[dict[str, Any]], ready: bool = True) -> list[dict[str, Any]]:
    out = []
    for child in children:
        if child["kind"] == "Pod":
            child = with_pod_status(child, "Running", ready=ready)
        elif child["kind"] == "Job":
            child = with_job_status(child, active=1, ready=1, startTime="2026-05-04T09:00:01Z")
        out.append(child)
    return out


def _invalid_edit() -> dict[str, Any]:
    job = mpijob().status(RUNNING_STATUS)
    children = running(first_sync_children(job.build()))
    edited = job.generation(2).workers(0).impl("OpenMP").build()
    return sync_request(edited, children, LAUNCHER_RUNNING)


def _wait_for_workers(ready: bool) -> dict[str, Any]:
    job = mpijob().wait_for_workers().status(CREATED_STATUS)
    children = [c for c in first_sync_children(job.build()) if c["kind"] != "Job"]
    return sync_request(job.build(), running(children, ready=ready))


def _launcher_backoff() -> dict[str, Any]:
    job = mpijob().run_policy(backoffLimit=1).status(RUNNING_STATUS)
    children = []
    for child in running(first_sync_children(job.build())):
        if child["kind"] == "Job":
            child = with_job_status(
                child,
                failed=2,
                startTime="2026-05-04T09:00:01Z",
                conditions=[
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": "Job has reached the specified backoff limit",
                        "lastTransitionTime": "2026-05-04T09:00:25Z",
                    }
                ],
            )
        children.append(child)
    related = [
        launcher_pod("pi", 1, "Failed", created="2026-05-04T09:00:02Z", reason="Error1", message="first"),
        launcher_pod("pi", 2, "Failed", created="2026-05-04T09:00:12Z", reason="Error2", message="second"),
    ]
    return sync_request(job.build(), children, related)


def launcher_completed(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The children with the launcher Job Complete at t=29 s, as the Job controller marks it."""
    return [
        with_job_status(
            child,
            succeeded=1,
            startTime="2026-05-04T09:00:01Z",
            completionTime="2026-05-04T09:00:29Z",
            conditions=[{"type": "Complete", "status": "True", "lastTransitionTime": "2026-05-04T09:00:29Z"}],
        )
        if child["kind"] == "Job"
        else child
        for child in children
    ]


def _launcher_succeeded() -> dict[str, Any]:
    job = mpijob().status(RUNNING_STATUS)
    return sync_request(job.build(), launcher_completed(running(first_sync_children(job.build()))))


def _worker_evicted() -> dict[str, Any]:
    job = mpijob().status(RUNNING_STATUS)
    children = running(first_sync_children(job.build()))
    children = [
        with_pod_status(c, "Failed", reason="Evicted") if c["metadata"]["name"] == "pi-worker-1" else c
        for c in children
    ]
    return sync_request(job.build(), children, LAUNCHER_RUNNING)


def _resumed() -> dict[str, Any]:
    suspended = run(sync_request(mpijob().suspend().build()))
    children = [observe(c) for c in suspended["children"]]
    return sync_request(mpijob().suspend(False).generation(2).status(suspended["status"]).build(), children)


def _scale_down() -> dict[str, Any]:
    job = mpijob().workers(3).status(RUNNING_STATUS)
    children = running(first_sync_children(job.build()))
    return sync_request(job.generation(2).workers(2).build(), children, LAUNCHER_RUNNING)


# --- gang scheduling: settings as the overlays set them, the overlay's PodGroup child declared -------------

VOLCANO = {"gang_scheduling": "volcano"}
PLUGINS = {"gang_scheduling": "scheduler-plugins-scheduler"}
KUBERNETES = {"gang_scheduling": "kubernetes"}
PRIORITY_CLASSES = [priority_class("high", 100_010), priority_class("low", 10_010)]
GANG_KIND = {"volcano": VOLCANO, "plugins": PLUGINS, "kubernetes": KUBERNETES}
GANG_RUNNING_STATUS = {
    **RUNNING_STATUS,
    "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 4}},
}


def gang_job() -> MPIJobBuilder:
    """4 workers; the launcher has the higher PriorityClass; the worker template names its own scheduler."""
    worker = "spec.mpiReplicaSpecs.Worker.template.spec"
    return (
        mpijob()
        .workers(4)
        .set("spec.mpiReplicaSpecs.Launcher.template.spec.priorityClassName", "high")
        .set(f"{worker}.priorityClassName", "low")
        .set(f"{worker}.schedulerName", "my-scheduler")
    )


def _gang(job: MPIJobBuilder) -> dict[str, Any]:
    built = job.build()
    worker = built["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["containers"] = [
        {
            "name": "worker",
            "image": "mpioperator/mpi-pi:openmpi",
            "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}},
        }
    ]
    return built


def _gang_running(kind: str, job: MPIJobBuilder) -> list[dict[str, Any]]:
    return running(first_sync_children(_gang(job), kind, **GANG_KIND[kind]))


def _gang_request(
    kind: str, job: MPIJobBuilder, children: list[dict[str, Any]], related: Any = ()
) -> dict[str, Any]:
    return sync_request(_gang(job), children, list(related), podgroup=kind, priority_classes=PRIORITY_CLASSES)


def _gang_wait_for_workers(ready: bool) -> dict[str, Any]:
    job = gang_job().wait_for_workers().status(CREATED_STATUS)
    children = [c for c in first_sync_children(_gang(job), "volcano", **VOLCANO) if c["kind"] != "Job"]
    return _gang_request("volcano", job, running(children, ready=ready))


def _gang_suspended() -> dict[str, Any]:
    job = gang_job().status(GANG_RUNNING_STATUS)
    children = _gang_running("volcano", job)
    return _gang_request("volcano", job.suspend().generation(2), children, LAUNCHER_RUNNING)


def _gang_finished(kind: str, clean_pod_policy: str) -> dict[str, Any]:
    """The sync after the one that stored Succeeded (with its completionTime)."""
    job = gang_job().run_policy(cleanPodPolicy=clean_pod_policy).status(GANG_RUNNING_STATUS)
    children = launcher_completed(_gang_running(kind, job))
    finishing = run(_gang_request(kind, job, children), Settings(**GANG_KIND[kind]))
    return _gang_request(kind, job.status(finishing["status"]), children)


def _gang_not_declared() -> dict[str, Any]:
    return sync_request(_gang(gang_job()))


def _hook_v1_keys() -> dict[str, Any]:
    job = mpijob().status(RUNNING_STATUS)
    return sync_request(job.build(), running(first_sync_children(job.build())), version="v1", customize=False)


def _managed_by_kueue() -> dict[str, Any]:
    job = mpijob().run_policy(managedBy="kueue.x-k8s.io/multikueue").status(RUNNING_STATUS)
    return sync_request(job.build(), running(first_sync_children(mpijob().build())), LAUNCHER_RUNNING)


CASES: dict[str, Case] = {
    "openmpi-first-sync": Case(lambda: sync_request(mpijob().build()), doc="fresh OpenMPI job, 2 workers"),
    "intel-first-sync": Case(lambda: sync_request(mpijob().impl("Intel").slots(4).build())),
    "mpich-first-sync": Case(lambda: sync_request(mpijob().impl("MPICH").build())),
    "launcher-as-worker": Case(lambda: sync_request(mpijob().launcher_as_worker().slots(2).build())),
    "cluster-domain": Case(
        lambda: sync_request(mpijob().impl("Intel").build()), settings={"cluster_domain": "cluster.local"}
    ),
    "root-ssh-path-defaults": Case(
        lambda: sync_request(
            mpijob()
            .set("spec.sshAuthMountPath", "/root/.ssh")
            .set("spec.runPolicy", {})
            .set("spec.mpiReplicaSpecs.Launcher.replicas", None)
            .build()
        ),
        doc="Go-side defaults: cleanPodPolicy None, launcher replicas 1",
    ),
    "running-steady": Case(
        lambda: sync_request(
            mpijob().status(RUNNING_STATUS).build(),
            running(first_sync_children(mpijob().build())),
            LAUNCHER_RUNNING,
        ),
        doc="all children exist and run: nothing changes",
    ),
    "wait-for-workers-pending": Case(lambda: _wait_for_workers(ready=False)),
    "wait-for-workers-ready": Case(lambda: _wait_for_workers(ready=True)),
    "suspended-at-creation": Case(lambda: sync_request(mpijob().suspend().build())),
    "invalid-new-job": Case(
        lambda: sync_request(
            mpijob()
            .workers(0)
            .impl("OpenMP")
            .slots(-1)
            .set("spec.mpiReplicaSpecs.Launcher.replicas", 2)
            .run_policy(cleanPodPolicy="Sometimes")
            .build()
        )
    ),
    "invalid-edit-running-job": Case(_invalid_edit, doc="children are kept exactly as last applied"),
    "managed-by-multikueue": Case(_managed_by_kueue),
    "launcher-backoff-limit": Case(_launcher_backoff),
    "scale-down": Case(_scale_down),
    "launcher-succeeded": Case(_launcher_succeeded),
    "worker-evicted": Case(_worker_evicted),
    "resumed": Case(
        _resumed, doc="Suspended=False/MPIJobResumed, startTime set, workers and launcher created"
    ),
    "hook-v1-keys-no-customize": Case(_hook_v1_keys),
    "volcano-first-sync": Case(
        lambda: _gang_request(
            "volcano",
            gang_job()
            .set("metadata.annotations", {"scheduling.volcano.sh/queue-name": "research"})
            .run_policy(schedulingPolicy={"minAvailable": 3}),
            [],
        ),
        settings=VOLCANO,
        doc="minMember 3: the high-priority launcher and 2 workers count; queue from the annotation",
    ),
    "scheduler-plugins-first-sync": Case(
        lambda: _gang_request(
            "plugins",
            gang_job().run_policy(schedulingPolicy={"scheduleTimeoutSeconds": 120, "queue": "ignored"}),
            [],
        ),
        settings=PLUGINS,
        doc="minMember workers+1, minResources from requests and (gpu) limits, pod-group label",
    ),
    "scheduler-plugins-running-steady": Case(
        lambda: _gang_request(
            "plugins",
            gang_job().status(GANG_RUNNING_STATUS),
            _gang_running("plugins", gang_job()),
            LAUNCHER_RUNNING,
        ),
        settings=PLUGINS,
        doc="every child exists: the same PodGroup again",
    ),
    "kubernetes-first-sync": Case(
        lambda: _gang_request(
            "kubernetes",
            gang_job()
            .set(
                "metadata.annotations", {"mpi-operator-hook/gang-topology-key": "topology.kubernetes.io/zone"}
            )
            .run_policy(schedulingPolicy={"minAvailable": 3, "priorityClass": "high"}),
            [],
        ),
        settings=KUBERNETES,
        doc="Workload and PodGroup minCount 3, topology from the annotation, no priorityClassName (behind the"
        " WorkloadAwarePreemption gate); Pods keep their schedulerName and priorityClassName",
    ),
    "kubernetes-running-steady": Case(
        lambda: _gang_request(
            "kubernetes",
            gang_job().status(GANG_RUNNING_STATUS),
            _gang_running("kubernetes", gang_job()),
            LAUNCHER_RUNNING,
        ),
        settings=KUBERNETES,
        doc="every child exists: the same Workload and PodGroup again",
    ),
    "volcano-wait-for-workers-pending": Case(
        lambda: _gang_wait_for_workers(ready=False),
        settings=VOLCANO,
        doc="no launcher yet: minMember counts the 4 workers only (upstream #608 deadlocks here)",
    ),
    "volcano-wait-for-workers-ready": Case(
        lambda: _gang_wait_for_workers(ready=True),
        settings=VOLCANO,
        doc="the launcher is created and the PodGroup now counts it",
    ),
    "volcano-suspended": Case(
        _gang_suspended, settings=VOLCANO, doc="PodGroup, workers and launcher dropped"
    ),
    "scheduler-plugins-finished-clean-running": Case(
        lambda: _gang_finished("plugins", "Running"),
        settings=PLUGINS,
        doc="cleanPodPolicy Running drops the PodGroup",
    ),
    "volcano-finished-clean-none": Case(
        lambda: _gang_finished("volcano", "None"),
        settings=VOLCANO,
        doc="cleanPodPolicy None keeps the PodGroup",
    ),
    "volcano-podgroup-not-declared": Case(
        _gang_not_declared,
        settings=VOLCANO,
        doc="no PodGroup child declared: no PodGroup, Pods not decorated, GangSchedulingUnavailable says why",
    ),
}


def sync_at_now(body: bytes, settings: Settings, memo: ParentMemo[Verdict] | None = None) -> SyncResult:
    """The hook's sync of ``body`` at NOW with the test seed and ``settings``."""
    return sync(
        decode_request(body),
        now=NOW,
        keys=SeededKeys(SEED),
        config=settings.sync_config,
        judge=judge if memo is None else remember(memo),
    )


def run(request: dict[str, Any] | bytes, settings: Settings | None = None) -> dict[str, Any]:
    body = request if isinstance(request, bytes) else orjson.dumps(request)
    result = sync_at_now(body, settings or Settings())
    return orjson.loads(orjson.dumps(result.response()))


def all_cases() -> list[tuple[str, Path, dict[str, str]]]:
    """(name, request file, settings) for every golden case: builder cases and the wire fixtures."""
    cases = [(name, request_path(name), case.settings) for name, case in CASES.items()]
    cases += [(f"wire-{p.stem}", p, {}) for p in sorted(WIRE.glob("*.json"))]
    # The recorded controller declares both PodGroup kinds (hook v1: no PriorityClasses delivered).
    cases += [(f"wire-{p.stem}-volcano", p, VOLCANO) for p in sorted(WIRE.glob("*01-first-sync*.json"))]
    return cases


def request_path(name: str) -> Path:
    """Where a case's request is read (whole or patched: ``golden_store.load``)."""
    return GOLDEN / name / "request.json"


def response_path(name: str) -> Path:
    return GOLDEN / name / "response.json"


def case_path(name: str) -> Path:
    return GOLDEN / name / CASE


def case_meta(name: str, request_file: Path, settings: dict[str, str]) -> dict[str, Any]:
    """``case.json`` of a golden case: the settings its answer is made with, by environment variable (none:
    the defaults), and what it shows (a wire case: where its request is)."""
    if name in CASES:
        shows = CASES[name].doc
    else:
        wire = request_file.relative_to(GOLDEN.parent.parent)
        shows = f"the answer to {wire}, a request in Metacontroller's exact shape"
    meta: dict[str, Any] = {"settings": {env_name(key): value for key, value in settings.items()}}
    return {**meta, "shows": shows} if shows else meta


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"
