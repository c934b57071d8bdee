"""What the doctor read about one MPIJob, kept as plain JSON.

``gather.gather`` does every read; the checks then judge the ``Snapshot`` alone, so they run the same on a
live cluster and on a file saved with ``mpijob doctor --save`` (what the tests' fixtures are). A snapshot
holds the Secret's metadata only, never its data, and no ``managedFields``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from app.cli.doctor import shapes
from app.kube import names


@dataclass
class Snapshot:
    namespace: str
    name: str
    # When it was read (RFC 3339, UTC): ages ("Pending for 40s") are measured from it.
    now: str
    job: dict[str, Any] | None = None
    # Whether the API server serves MPIJobs (kubeflow.org/v2beta1) at all.
    served: bool = True
    launcher: dict[str, Any] | None = None
    # Every Pod labelled with the job's name: the workers and the launcher Job's Pods, of every attempt.
    pods: list[dict[str, Any]] = field(default_factory=list)
    service: dict[str, Any] | None = None
    secret: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    podgroups: list[dict[str, Any]] = field(default_factory=list)
    # Kueue's Workloads of the job (read when it names a Kueue queue).
    workloads: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    # Read only when the job shows a Workload API gone wrong (``workload_api.matters``); None: not read.
    # Each Workload API version the API server serves -> the children's resources its discovery lists.
    workload_apis: dict[str, list[str]] | None = None
    # The CompositeController's spec.childResources (apiVersion, resource), or why it was not read.
    controller_children: list[dict[str, str]] | None = None
    controller_unreadable: str = ""
    # "<pod>/<container>" -> the last lines of its log: the launcher's, its wait-for-workers', and the first
    # worker whose container ended.
    logs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str = "the snapshot") -> Snapshot:
        """What ``to_json`` wrote, or ``Hostile`` naming ``where`` and the field that is not of its shape."""
        shapes.snapshot(data, where)
        known = {key: data[key] for key in cls.__dataclass_fields__ if data.get(key) is not None}
        return cls(**known)


def newest_launcher_pod(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    launchers = [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(names.JOB_ROLE_LABEL) == names.LAUNCHER
    ]
    return max(launchers, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""), default=None)
