"""One MPIJob run by the hook and its conversion run by Trainer, observed the same way for docs/migration.md's
side-by-side table: the objects each made in the namespace (watched while it ran), the hostfile, the launcher
container's environment, where each rank ran, and the times from apply to ``mpirun`` and to the end.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import runs, trainjobs
from tests.support.hostfiles import slot_hosts

KINDS = ("pods", "jobs", "services", "configmaps", "secrets", "jobsets")
KIND_NAMES = {
    "pods": "Pod", "jobs": "Job", "services": "Service", "configmaps": "ConfigMap", "secrets": "Secret",
    "jobsets": "JobSet", "trainjobs": "TrainJob", "trainingruntimes": "TrainingRuntime",
}  # fmt: skip
NOT_THEIRS = {"kube-root-ca.crt"}  # every namespace's ConfigMap
_INDEX = re.compile(r"(\d+)$")


@dataclass(frozen=True)
class Run:
    """What one controller did with the job."""

    objects: dict[str, list[str]]  # kind -> names (a Pod named by a controller: its generateName + "*")
    hosts: list[str]  # the hostfile's host of each slot, short
    env: list[str]  # names of the launcher's MPI container's environment
    ranks: dict[int, str]  # rank -> short host
    to_mpirun: float  # seconds from the object's creation to the launcher's MPI container starting
    to_end: float  # ... to the condition that says it is done

    def workers(self) -> list[int]:
        """The hostfile's hosts as worker indexes (``pi-worker-1`` and ``pi-node-0-1`` are both 1)."""
        return [_worker(host) for host in self.hosts]


def _worker(host: str) -> int:
    found = _INDEX.search(host)
    assert found, host
    return int(found[0])


def rank_workers(run: Run) -> dict[int, int]:
    """rank -> the index of the worker it ran on."""
    return {rank: _worker(host) for rank, host in run.ranks.items()}


def _named(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['generateName']}*" if meta.get("generateName") else str(meta["name"])


def watch(kube: Kube, ns: str, done: Callable[[], dict[str, Any] | None], timeout: float) -> tuple[
    dict[str, Any], dict[str, list[str]]
]:  # fmt: skip
    """Poll the namespace's objects until ``done`` returns the finished object: (it, kind -> names seen)."""
    seen: dict[str, set[str]] = defaultdict(set)

    def probe() -> dict[str, Any] | None:
        for kind in KINDS:
            for obj in kube.list(kind, ns):
                if obj["metadata"]["name"] not in NOT_THEIRS:
                    seen[kind].add(_named(obj))
        return done()

    finished = wait_for(probe, timeout, f"the job in {ns} to finish")
    return finished, {kind: sorted(names) for kind, names in sorted(seen.items())}


def _env(pod: dict[str, Any], container: str) -> list[str]:
    (found,) = [c for c in pod["spec"]["containers"] if c["name"] == container]
    return sorted(e["name"] for e in found.get("env") or [])


def _timings(created: str, launcher: dict[str, Any], container: str, ended: str) -> tuple[float, float]:
    started = trainjobs.container_started(launcher, container)
    assert started, f"the launcher's {container} never started: {launcher['status']}"
    return trainjobs.seconds(started, created), trainjobs.seconds(ended, created)


def hook_run(kube: Kube, ns: str, job: dict[str, Any]) -> Run:
    name = job["metadata"]["name"]
    launchers: list[dict[str, Any]] = []

    def done() -> dict[str, Any] | None:
        launchers[:] = jobs.launcher_pods(kube, ns, name) or launchers
        found = jobs.get(kube, ns, name)
        return (
            found if found and jobs.conditions(found).get("Succeeded", {}).get("status") == "True" else None
        )

    runs.apply(kube, ns, job)
    finished, objects = watch(kube, ns, done, runs.RUN_SECONDS)
    container = runs.launcher(job)["name"]
    placed = runs.assert_ran_on_hostfile(kube, ns, name, 2)
    ended = jobs.conditions(finished)["Succeeded"]["lastTransitionTime"]
    mpirun, end = _timings(finished["metadata"]["creationTimestamp"], launchers[-1], container, ended)
    hostfile = jobs.config(kube, ns, name)["hostfile"]
    return Run(objects, slot_hosts(hostfile), _env(launchers[-1], container), placed, mpirun, end)


def trainer_run(kube: Kube, ns: str, manifest: str, name: str) -> Run:
    launchers: list[dict[str, Any]] = []

    def done() -> dict[str, Any] | None:
        launchers[:] = trainjobs.pods(kube, ns, name, "launcher") or launchers
        found = trainjobs.get(kube, ns, name)
        return found if trainjobs.conditions(found).get("Complete", {}).get("status") == "True" else None

    trainjobs.apply(kube, ns, manifest)
    finished, objects = watch(kube, ns, done, trainjobs.RUN_SECONDS)
    for kind in ("trainjobs", "trainingruntimes"):
        objects[kind] = [name]  # applied, not made
    placed = trainjobs.assert_ran_on_hostfile(kube, ns, name, 2)
    ended = trainjobs.conditions(finished)["Complete"]["lastTransitionTime"]
    container = trainjobs.CONTAINER
    mpirun, end = _timings(finished["metadata"]["creationTimestamp"], launchers[-1], container, ended)
    hosts = slot_hosts(trainjobs.hostfile(kube, ns, name))
    return Run(objects, hosts, _env(launchers[-1], container), placed, mpirun, end)


def table(hook: Run, trainer: Run) -> str:
    """The side-by-side table, in Markdown."""
    only_hook = sorted(set(hook.env) - set(trainer.env))
    only_trainer = sorted(set(trainer.env) - set(hook.env))
    rows = [
        ("objects", _objects(hook), _objects(trainer)),
        ("hostfile (slot hosts)", ", ".join(hook.hosts), ", ".join(trainer.hosts)),
        ("launcher env only here", ", ".join(only_hook) or "-", ", ".join(only_trainer) or "-"),
        ("ranks' hosts", _ranks(hook), _ranks(trainer)),
        ("apply to `mpirun`", f"{hook.to_mpirun:.0f} s", f"{trainer.to_mpirun:.0f} s"),
        ("apply to the end", f"{hook.to_end:.0f} s", f"{trainer.to_end:.0f} s"),
    ]
    lines = ["| | MPIJob, the hook | TrainJob, Trainer v2.3 |", "|---|---|---|"]
    return "\n".join([*lines, *(f"| {a} | {b} | {c} |" for a, b, c in rows)])


def _objects(run: Run) -> str:
    return "; ".join(f"{kind}: {', '.join(names)}" for kind, names in run.objects.items())


def _ranks(run: Run) -> str:
    return ", ".join(f"{rank}: {host}" for rank, host in sorted(run.ranks.items()))
