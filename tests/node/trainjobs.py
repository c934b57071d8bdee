"""MPIJobs converted with the real ``mpijob convert --to trainjob`` and run by the real Trainer and JobSet on
the real node (trainer.py installs them), and what ran, read back as for an MPIJob (runs.py): the ranks in
the launcher's log and the hosts of the hostfile Trainer wrote.

Names as Trainer v2.3.0 and JobSet v0.12.0 make them: JobSet ``<name>``, its Jobs ``<name>-launcher-0`` and
``<name>-node-0``, the hostfile ConfigMap ``<name>-mpi-hostfile`` (key ``hostfile``), the MPI container
``node``.
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import yaml

from tests.e2e.kube import Kube, wait_for
from tests.node import runs
from tests.support.hostfiles import slot_hosts
from tests.unit.cli.test_cli import mpijob

RUN_SECONDS = 240.0  # apply to Complete: ~20-40 s on 2 cores
TERMINAL = ("Complete", "Failed")
CONTAINER = "node"


def convert(job: dict[str, Any], *args: str) -> str:
    """What ``mpijob convert --to trainjob -`` writes for ``job`` (it must succeed)."""
    done = mpijob("convert", "--to", "trainjob", *args, "-", stdin=yaml.safe_dump(job))
    assert done.returncode == 0, f"mpijob convert failed ({done.returncode}): {done.stderr}"
    return done.stdout


# Trainer's TrainJob webhook reads runtimes from its cache: applied together, the TrainJob may come first.
_RUNTIME_NOT_SEEN = "specified trainingRuntime must be created before the TrainJob is created"


def apply(kube: Kube, ns: str, manifest: str) -> None:
    """The conversion applied as docs/migration.md says: server-side, and again if Trainer's webhook had not
    seen the runtime yet."""
    argv = ("-n", ns, "apply", "--server-side", "-f", "-")
    done = kube.kubectl(*argv, stdin=manifest, check=False)
    if done.returncode != 0 and _RUNTIME_NOT_SEEN in done.stderr:
        done = kube.kubectl(*argv, stdin=manifest, check=False)
    assert done.returncode == 0, f"kubectl apply of the conversion failed ({done.returncode}): {done.stderr}"


def get(kube: Kube, ns: str, name: str) -> dict[str, Any] | None:
    found = kube.kubectl("-n", ns, "get", "trainjob", name, "-o", "yaml", check=False)
    return yaml.safe_load(found.stdout) if found.returncode == 0 else None


def conditions(trainjob: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in ((trainjob or {}).get("status") or {}).get("conditions") or []}


def wait_condition(kube: Kube, ns: str, name: str, kind: str, timeout: float = RUN_SECONDS) -> dict[str, Any]:
    """The TrainJob once ``kind`` is True; fails early, with the conditions, on the other terminal one."""

    def reached() -> dict[str, Any] | None:
        trainjob = get(kube, ns, name)
        found = conditions(trainjob)
        other = [t for t in TERMINAL if t != kind and found.get(t, {}).get("status") == "True"]
        assert not other, f"TrainJob {ns}/{name} is {other[0]}, not {kind}: {found}"
        return trainjob if found.get(kind, {}).get("status") == "True" else None

    return wait_for(
        reached, timeout, lambda: f"TrainJob {ns}/{name} {kind}: {conditions(get(kube, ns, name))}"
    )


def pods(kube: Kube, ns: str, name: str, job: str) -> list[dict[str, Any]]:
    """The Pods of one of the JobSet's replicated jobs (``launcher`` or ``node``), oldest first."""
    selector = f"jobset.sigs.k8s.io/jobset-name={name},jobset.sigs.k8s.io/replicatedjob-name={job}"
    found = kube.list("pods", ns, selector)
    return sorted(found, key=lambda p: p["metadata"]["creationTimestamp"])


def launcher_log(kube: Kube, ns: str, name: str) -> str:
    return kube.kubectl("-n", ns, "logs", f"job/{name}-launcher-0", "-c", CONTAINER).stdout


def hostfile(kube: Kube, ns: str, name: str) -> str:
    config = kube.get("configmaps", ns, f"{name}-mpi-hostfile")
    assert config is not None, f"no hostfile ConfigMap {name}-mpi-hostfile"
    return str(config["data"]["hostfile"])


def assert_ran_on_hostfile(kube: Kube, ns: str, name: str, expected_ranks: int) -> dict[int, str]:
    """The launcher's log shows exactly ``expected_ranks`` ranks, each on a host of the hostfile's slots."""
    log = launcher_log(kube, ns, name)
    placed = runs.ranks(log)
    assert sorted(placed) == list(range(expected_ranks)), f"ranks {sorted(placed)} in:\n{log}"
    assert f"Workers: {expected_ranks}" in log, log
    slots = Counter(slot_hosts(hostfile(kube, ns, name)))
    assert Counter(placed.values()) == slots, (placed, slots)
    return placed


def seconds(later: str, earlier: str) -> float:
    """Between two RFC 3339 timestamps of the apiserver."""
    parse = datetime.datetime.fromisoformat
    return (parse(later.replace("Z", "+00:00")) - parse(earlier.replace("Z", "+00:00"))).total_seconds()


def container_started(pod: dict[str, Any], container: str) -> str | None:
    """When the container last started (running or terminated), as the kubelet reported it."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status["name"] == container:
            state = status.get("state") or {}
            started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
            return str(started) if started else None
    return None
