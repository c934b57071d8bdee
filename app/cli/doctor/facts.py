"""A snapshot read the way the hook reads it: the defaulted job, its lint findings, the current attempt's
Pods, and the hook's own classification of its children (``app.core.observed``: the launcher Job's state
among them) and of its failures (``app.core.policies.failure``), so the doctor never derives again what the
hook decides."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import msgspec
import orjson
from pydantic import ValidationError

from app.api.defaults import Job, with_defaults
from app.api.lint import Finding, lint
from app.api.types import MPIJob, ReplicaType
from app.cli.doctor.snapshot import Snapshot
from app.core.observed import Observed, classify, newest_failed_pod
from app.core.policies import failure as failures
from app.kube import names
from app.kube.controller import Controller, ControllerSpec, HookRef, Hooks
from app.kube.gang import (
    PODGROUP_API_VERSIONS,
    SCHEDULER_PLUGINS_API_VERSION,
    VOLCANO_API_VERSION,
    WORKLOAD_API_V1ALPHA2,
    WORKLOAD_API_V1BETA1,
)
from app.kube.request import (
    Children,
    ObservedLauncherJob,
    ObservedPod,
    ObservedPodGroup,
    ObservedWorkloadPodGroup,
    Related,
    SyncRequest,
)

_CUSTOMIZED = Controller(ControllerSpec(hooks=Hooks(customize=HookRef("v1"))))
_SECONDS = re.compile(r"\.\d+")


def parse_time(text: Any) -> datetime | None:
    """An RFC 3339 time as the API server writes it, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(_SECONDS.sub("", text).replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class Container:
    """A container's status, init or regular, with its spec's restartPolicy (``Always``: a native
    sidecar)."""

    pod: str
    name: str
    status: dict[str, Any]
    init: bool = False
    sidecar: bool = False

    @property
    def waiting(self) -> dict[str, Any]:
        return dict((self.status.get("state") or {}).get("waiting") or {})

    @property
    def running(self) -> bool:
        return "running" in (self.status.get("state") or {})

    @property
    def terminated(self) -> dict[str, Any]:
        return dict((self.status.get("state") or {}).get("terminated") or {})


class Facts:
    """Everything the checks read, computed once from one snapshot."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.raw: dict[str, Any] = snap.job or {}
        # A snapshot says when it was read; a hand-edited one without a time measures ages from the epoch.
        self.now = parse_time(snap.now) or datetime.fromtimestamp(0, UTC)

    @property
    def name(self) -> str:
        return self.snap.name

    @cached_property
    def model(self) -> MPIJob | None:
        try:
            return MPIJob.model_validate(self.raw)
        except ValidationError:
            return None

    @cached_property
    def job(self) -> Job | None:
        """The job as the hook runs it: defaulted."""
        return with_defaults(self.model) if self.model is not None else None

    @cached_property
    def findings(self) -> dict[str, Finding]:
        """The first lint finding of each rule (``mpijob lint``'s rules, ignore annotation honoured)."""
        found: dict[str, Finding] = {}
        for finding in lint(self.model, self.raw) if self.model is not None else []:
            found.setdefault(finding.rule, finding)
        return found

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.raw.get("status") or {})

    @cached_property
    def conditions(self) -> dict[str, dict[str, Any]]:
        """Condition type -> the condition, for those that are True."""
        return {
            c.get("type", ""): c for c in self.status.get("conditions") or [] if c.get("status") == "True"
        }

    @property
    def stage(self) -> str:
        """What ``kubectl get mpijob`` shows as STATE: the last condition's type."""
        listed = self.status.get("conditions") or []
        return str(listed[-1].get("type")) if listed else ""

    @property
    def attempt(self) -> int:
        value = self.status.get("restartAttempt")
        return value if isinstance(value, int) else 0

    @cached_property
    def pods(self) -> list[dict[str, Any]]:
        """The current attempt's Pods (older attempts' are being deleted)."""
        return [p for p in self.snap.pods if failures.attempt_of(_labels(p)) == self.attempt]

    @property
    def workers(self) -> list[dict[str, Any]]:
        return [p for p in self.pods if _labels(p).get(names.JOB_ROLE_LABEL) == names.WORKER]

    @property
    def launcher_pods(self) -> list[dict[str, Any]]:
        """Newest first."""
        pods = [p for p in self.pods if _labels(p).get(names.JOB_ROLE_LABEL) == names.LAUNCHER]
        return sorted(pods, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""), reverse=True)

    @cached_property
    def observed(self) -> Observed:
        """The hook's own classification of these children (the customize hook's launcher Pods included, and
        what each PodGroup's scheduler says: ``Observed.gang_wait``)."""

        def keyed(objs: list[dict[str, Any]], kind: type[Any]) -> dict[str, Any]:
            return {o["metadata"]["name"]: msgspec.json.decode(orjson.dumps(o), type=kind) for o in objs}

        launcher = [self.snap.launcher] if self.snap.launcher else []
        podgroups = self.snap.podgroups
        groups = {v: [g for g in podgroups if g.get("apiVersion") == v] for v in PODGROUP_API_VERSIONS}
        request = SyncRequest(
            parent=msgspec.Raw(b"{}"),
            controller=_CUSTOMIZED,
            children=Children(
                pods=keyed(self.snap.pods, ObservedPod),
                launcher_jobs=keyed(launcher, ObservedLauncherJob),
                volcano_podgroups=keyed(groups[VOLCANO_API_VERSION], ObservedPodGroup),
                scheduler_plugins_podgroups=keyed(groups[SCHEDULER_PLUGINS_API_VERSION], ObservedPodGroup),
                workload_podgroups_v1beta1=keyed(groups[WORKLOAD_API_V1BETA1], ObservedWorkloadPodGroup),
                workload_podgroups_v1alpha2=keyed(groups[WORKLOAD_API_V1ALPHA2], ObservedWorkloadPodGroup),
            ),
            related=Related(pods=keyed(self.snap.pods, ObservedPod)),
        )
        return failures.current_attempt(classify(self.name, request), self.attempt)[0]

    def first_failure(self) -> failures.PodFailure | None:
        """The failure the hook's failure policy acts on, by the hook's own rule (a failed worker first, else
        a launcher Job that has failed: one whose Pod it still retries has not)."""
        wanted = self.job.worker_replicas if self.job is not None else len(self.observed.workers)
        return failures.first_failure(self.observed, wanted)

    def newest_launcher_failure(self) -> failures.PodFailure | None:
        """How the launcher Pod that failed last failed (the one the launcher Job retries)."""
        newest = newest_failed_pod(self.observed.launcher_pods or [])
        return failures.pod_failure(ReplicaType.LAUNCHER, newest) if newest is not None else None

    def containers(self, pod: dict[str, Any]) -> list[Container]:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        always = {
            c.get("name") for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
        }
        name = pod["metadata"]["name"]
        found = [
            Container(name, s.get("name", ""), s, True, s.get("name") in always)
            for s in status.get("initContainerStatuses") or []
        ]
        return found + [Container(name, s.get("name", ""), s) for s in status.get("containerStatuses") or []]

    def age(self, obj: dict[str, Any]) -> float:
        """Seconds since the object was created."""
        created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        return (self.now - created).total_seconds() if created else 0.0

    def events(self, name: str, *, warning: bool = True, uid: str = "") -> list[dict[str, Any]]:
        """The Events about the object ``name`` (that very object when ``uid`` is given, not an earlier
        one of the same name), oldest first."""
        return [
            e
            for e in self.snap.events
            if (about := e.get("involvedObject") or {}).get("name") == name
            and (not uid or about.get("uid") == uid)
            and (not warning or e.get("type") == "Warning")
        ]

    @cached_property
    def log_lines(self) -> list[tuple[str, str]]:
        """(where, line) for every line of the logs read: wait-for-workers first, then mpirun's, then a
        worker's."""
        launcher = self.launcher_pods[0]["metadata"]["name"] if self.launcher_pods else None

        def order(where: str) -> tuple[bool, bool]:
            return (
                where.split("/")[0] != launcher,
                not where.endswith(f"/{names.WAIT_FOR_WORKERS_CONTAINER}"),
            )

        ordered = sorted(self.snap.logs.items(), key=lambda kv: order(kv[0]))
        return [(where, line) for where, text in ordered for line in text.splitlines() if line.strip()]

    @property
    def launcher_log_lines(self) -> list[tuple[str, str]]:
        """The launcher Pod's lines only (its main container and wait-for-workers)."""
        launcher = self.launcher_pods[0]["metadata"]["name"] if self.launcher_pods else None
        return [(where, line) for where, line in self.log_lines if where.split("/")[0] == launcher]


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def pod_name(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["name"])


def role(pod: dict[str, Any]) -> str:
    return _labels(pod).get(names.JOB_ROLE_LABEL, "pod")


def condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)
