"""The rules about GPUs: per worker against slots, at pod level, on a launcher that runs no ranks, and held
by workers after the job finished."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from app.api import field_path
from app.api.defaults import Job
from app.api.lint import reading
from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity, plural
from app.api.types import ReplicaType

_GPU_RESOURCE = re.compile(r"(^|/)gpu$|^gpu\.intel\.com/|^habana\.ai/gaudi$")


@dataclass(frozen=True, slots=True)
class _GPUs:
    """The GPUs a replica's pod template asks for: in total, and how many of them at pod level."""

    total: int
    at_pod_level: int
    pod_level_path: str  # where the pod-level ones are written, e.g. spec.mpiReplicaSpecs[Worker]...limits

    def __bool__(self) -> bool:
        return self.total > 0

    @property
    def counted(self) -> str:
        """``4 GPUs``, saying when pod-level ones are among them."""
        text = plural(self.total, "GPU")
        if self.at_pod_level:
            text += f" (counting the {self.at_pod_level} at pod level)"
        return text


def _gpu_amount(resources: Any) -> tuple[int, str]:
    """GPUs in a ``resources`` object (limits, else requests), and which of the two held them."""
    if not isinstance(resources, Mapping):
        return 0, ""
    which = "limits" if resources.get("limits") else "requests"
    amounts = resources.get(which) or {}
    total = 0
    for name, value in amounts.items() if isinstance(amounts, Mapping) else ():
        if _GPU_RESOURCE.search(str(name)):
            total += _whole(value)
    return total, which


def _gpus(job: Job, kind: ReplicaType) -> _GPUs:
    """The pod's GPUs as the user asked: pod-level amounts take precedence over the containers' sum, as
    Kubernetes does for the resources it supports at pod level."""
    in_containers = sum(_gpu_amount(c.get("resources"))[0] for c in reading.containers(job, kind))
    at_pod_level, which = _gpu_amount(reading.pod_spec(job, kind).get("resources"))
    path = f"{field_path.replica_spec(kind)}.template.spec.resources.{which}"
    return _GPUs(at_pod_level or in_containers, at_pod_level, path)


def _whole(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def gpu_slots_mismatch(job: Job) -> Iterator[Finding]:
    slots = job.slots_per_worker
    kinds = [ReplicaType.WORKER] + ([ReplicaType.LAUNCHER] if job.run_launcher_as_worker else [])
    for kind in kinds:
        gpus = _gpus(job, kind)
        if gpus and gpus.total != slots:
            yield Finding(
                Rule.GPU_SLOTS_MISMATCH,
                Severity.WARNING,
                "spec.slotsPerWorker",
                f"each {kind.value.lower()} requests {gpus.counted} but has {plural(slots, 'slot')}: "
                + ("GPUs stay idle" if gpus.total > slots else "ranks share GPUs"),
                f"set spec.slotsPerWorker: {gpus.total} (one rank per GPU) and mpirun -np to {gpus.total} x"
                " the number of workers",
            )


def gpus_at_pod_level(job: Job) -> Iterator[Finding]:
    for kind in ReplicaType:
        gpus = _gpus(job, kind)
        if gpus.at_pod_level:
            yield Finding(
                Rule.GPUS_AT_POD_LEVEL,
                Severity.ERROR,
                gpus.pod_level_path,
                f"the {kind.value.lower()} asks for {plural(gpus.at_pod_level, 'GPU')} in its pod-level"
                " resources (template.spec.resources), which Kubernetes supports for cpu, memory and"
                " hugepages only: the API server rejects the Pods (Kubernetes 1.34 and later: Unsupported"
                " value), or drops the field where pod-level resources are off, so the pods get no GPU",
                "move the GPU limits into the resources of the container that uses them:"
                f" {field_path.replica_spec(kind)}.template.spec.containers[0].resources.limits",
            )


def launcher_gpus_hidden(job: Job) -> Iterator[Finding]:
    gpus = _gpus(job, ReplicaType.LAUNCHER)
    if gpus and not job.run_launcher_as_worker:
        yield Finding(
            Rule.LAUNCHER_GPUS_HIDDEN,
            Severity.WARNING,
            f"{reading.LAUNCHER}.template.spec.containers",
            f"the launcher requests {gpus.counted}, but without runLauncherAsWorker it runs no ranks and"
            " its GPUs are hidden (NVIDIA_VISIBLE_DEVICES is emptied): they stay idle",
            "remove the GPU limits from the launcher, or set spec.runLauncherAsWorker: true",
        )


def gpus_held_after_finish(job: Job) -> Iterator[Finding]:
    # Unset as written (``run_policy`` is not defaulted): the default None is the mistake to point at.
    gpus = _gpus(job, ReplicaType.WORKER)
    if job.run_policy.clean_pod_policy is None and gpus:
        yield Finding(
            Rule.GPUS_HELD_AFTER_FINISH,
            Severity.WARNING,
            "spec.runPolicy.cleanPodPolicy",
            "cleanPodPolicy is unset, so it is None: when the job finishes its workers keep running sshd"
            f" and keep their {gpus.counted} each until the MPIJob is deleted",
            "set spec.runPolicy.cleanPodPolicy: Running (or All)",
        )
