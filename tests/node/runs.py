"""MPIJobs on the real node, made from the examples, and what their launcher's log says actually ran.

The pi program (examples/pi/pi.c) prints ``Rank <r> on host <host>`` for every rank and ``Workers: <n>`` on
rank 0: ``ranks`` reads that back, so a test checks the number of ranks, where each ran, and that mpirun
really spanned the hostfile's hosts.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.support.hostfiles import slot_hosts

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pi"
RUN_SECONDS = 180.0  # from apply to Succeeded; ~10-30 s on 2 cores
_RANK = re.compile(r"^Rank (\d+) on host (\S+)$", re.M)


def example(file: str, name: str, cpu: str = "") -> dict[str, Any]:
    """An example job renamed to ``name``; with ``cpu``, every container's CPU limit set to it."""
    job: dict[str, Any] = yaml.safe_load((EXAMPLES / file).read_text())
    job["metadata"]["name"] = name
    if cpu:
        for container in containers(job):
            container.setdefault("resources", {}).setdefault("limits", {})["cpu"] = cpu
    return job


def containers(job: dict[str, Any]) -> list[dict[str, Any]]:
    specs = job["spec"]["mpiReplicaSpecs"]
    return [c for role in ("Launcher", "Worker") for c in specs[role]["template"]["spec"]["containers"]]


def launcher(job: dict[str, Any]) -> dict[str, Any]:
    """The launcher's container (the dict in ``job``: changes go into the job)."""
    container: dict[str, Any] = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][
        0
    ]
    return container


def with_image(job: dict[str, Any], image: str) -> dict[str, Any]:
    changed = copy.deepcopy(job)
    for container in containers(changed):
        container["image"] = image
    return changed


def apply(kube: Kube, ns: str, job: dict[str, Any]) -> None:
    kube.kubectl("-n", ns, "apply", "-f", "-", stdin=yaml.safe_dump(job))


def succeeded(kube: Kube, ns: str, name: str, timeout: float = RUN_SECONDS) -> dict[str, Any]:
    return jobs.wait_condition(kube, ns, name, "Succeeded", timeout=timeout)


def launcher_log(kube: Kube, ns: str, name: str) -> str:
    return kube.kubectl("-n", ns, "logs", f"job/{name}-launcher").stdout


def ranks(log: str) -> dict[int, str]:
    """rank -> short host name (the part before the first dot), from the pi program's output."""
    found: dict[int, str] = {}
    for rank, host in _RANK.findall(log):
        assert int(rank) not in found, f"rank {rank} printed twice:\n{log}"
        found[int(rank)] = host.split(".")[0]
    return found


def hostfile(kube: Kube, ns: str, name: str) -> dict[str, int]:
    """short host name -> slots, from the job's ConfigMap (Open MPI ``slots=N`` or a line per slot, MPICH
    ``:N``)."""
    return dict(Counter(slot_hosts(jobs.config(kube, ns, name)["hostfile"])))


def assert_ran_on_hostfile(kube: Kube, ns: str, name: str, expected_ranks: int) -> dict[int, str]:
    """The launcher's log shows exactly ``expected_ranks`` ranks, placed as the hostfile's slots say."""
    log = launcher_log(kube, ns, name)
    placed = ranks(log)
    assert sorted(placed) == list(range(expected_ranks)), f"ranks {sorted(placed)} in:\n{log}"
    assert f"Workers: {expected_ranks}" in log, log
    slots = hostfile(kube, ns, name)
    assert Counter(placed.values()) == Counter({h: n for h, n in slots.items() if n}), (placed, slots)
    return placed


# On an emptyDir: the launcher container may restart in place (restartPolicy OnFailure, e.g. a first attempt
# that met a worker's stale DNS record after a resume) and must still find the gate a test opened.
GATE_DIR = "/gate"
GATE = f"{GATE_DIR}/go"


def gated(name: str, cpu: str = "") -> dict[str, Any]:
    """examples/pi/pi.yaml whose launcher waits for ``open_gate`` before ``mpirun``: a job that stays
    Running (workers up, launcher started, no rank yet) for as long as a test needs."""
    job = example("pi.yaml", name, cpu)
    container = launcher(job)
    container["command"] = [
        "sh",
        "-c",
        f"until [ -e {GATE} ]; do sleep 0.5; done; exec mpirun -n 2 /home/mpiuser/pi",
    ]
    container.pop("args", None)
    container.setdefault("volumeMounts", []).append({"name": "gate", "mountPath": GATE_DIR})
    pod = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    pod.setdefault("volumes", []).append({"name": "gate", "emptyDir": {}})
    return job


def running(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    """Wait for the job's Running condition and its launcher container running; return the job."""
    job = jobs.wait_condition(kube, ns, name, "Running", timeout=RUN_SECONDS)
    wait_for(
        lambda: any(p["status"].get("phase") == "Running" for p in jobs.launcher_pods(kube, ns, name)),
        RUN_SECONDS,
        f"the launcher Pod of {ns}/{name} running",
    )
    return job


def open_gate(kube: Kube, ns: str, name: str) -> None:
    kube.kubectl("-n", ns, "exec", f"job/{name}-launcher", "--", "touch", GATE)
