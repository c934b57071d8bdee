"""One MPIJob run again and again under the same name: apply, wait for Succeeded, delete, apply again.

Each run records how long it took from ``kubectl apply`` to the ``Succeeded`` condition and how many times
its launcher started over: launcher Pods beyond the first (the Job's back-off) plus in-place container
restarts (``restartPolicy: OnFailure``), with the first line the kubelet kept of each failed attempt. The
first run meets a cold cluster DNS (no record of the job's workers yet); each later one meets the records of
the previous job of that name, whose Pods are still going away.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tests.e2e import jobs
from tests.e2e.kube import Kube, wait_for
from tests.node import runs


@dataclass(frozen=True)
class Run:
    seconds: float
    launcher_pods: int
    container_restarts: int
    job_failed: int
    failures: tuple[str, ...]

    @property
    def restarts(self) -> int:
        return self.launcher_pods - 1 + self.container_restarts


def _failures(pods: list[dict[str, Any]]) -> tuple[str, ...]:
    """The last failed attempt's message of every launcher container (FallbackToLogsOnError keeps it)."""
    found = []
    for pod in pods:
        for status in pod.get("status", {}).get("containerStatuses") or []:
            for state in (status.get("lastState", {}), status.get("state", {})):
                ended = state.get("terminated")
                if ended and ended.get("exitCode"):
                    lines = [line for line in (ended.get("message") or "").splitlines() if line.strip()]
                    found.append(f"exit {ended['exitCode']}: {lines[0] if lines else ended.get('reason')}")
    return tuple(found)


def run_once(kube: Kube, ns: str, job: dict[str, Any]) -> Run:
    name = job["metadata"]["name"]
    began = time.monotonic()
    runs.apply(kube, ns, job)
    runs.succeeded(kube, ns, name)
    seconds = time.monotonic() - began
    pods = jobs.launcher_pods(kube, ns, name)
    launcher = kube.get("jobs", ns, f"{name}-launcher") or {}
    restarts = sum(
        s.get("restartCount", 0) for p in pods for s in p.get("status", {}).get("containerStatuses") or []
    )
    return Run(
        seconds=seconds,
        launcher_pods=len(pods),
        container_restarts=restarts,
        job_failed=launcher.get("status", {}).get("failed", 0),
        failures=_failures(pods),
    )


def delete(kube: Kube, ns: str, name: str) -> None:
    """``kubectl delete mpijob <name> --cascade=foreground``: returns once the MPIJob and every child are gone
    (their DNS records may still answer). With the default background deletion, a job applied at once under
    the same name met children of its predecessor still being deleted, and once in 20 runs stayed in
    ``Created`` with no child for minutes (Metacontroller's retries of the failed creations back off)."""
    kube.kubectl("-n", ns, "delete", "mpijob", name, "--cascade=foreground", "--timeout=120s")
    wait_for(lambda: kube.get("mpijobs", ns, name) is None, runs.RUN_SECONDS, f"MPIJob {ns}/{name} gone")


def repeat(kube: Kube, ns: str, job: dict[str, Any], count: int, label: str) -> list[Run]:
    """``count`` runs; each printed as it ends. A run that does not succeed fails with the runs before it."""
    done: list[Run] = []
    for i in range(count):
        if i:
            delete(kube, ns, job["metadata"]["name"])
        try:
            done.append(run_once(kube, ns, job))
        except AssertionError as err:
            raise AssertionError(f"run {i + 1} of {count}: {err}\n{summary(label, done)}") from None
        print(summary(label, done).splitlines()[-1], flush=True)
    return done


def summary(label: str, done: list[Run]) -> str:
    if not done:
        return f"{label}: no run ended"
    times = sorted(r.seconds for r in done)
    restarted = [r for r in done if r.restarts]
    lines = [
        f"{label}: {len(done)} runs, {len(restarted)} with launcher restarts "
        f"({sum(r.restarts for r in done)} restarts in all), apply->Succeeded "
        f"min {times[0]:.1f} s, median {times[len(times) // 2]:.1f} s, max {times[-1]:.1f} s"
    ]
    for i, r in enumerate(done):
        lines.append(
            f"  run {i + 1:2}: {r.seconds:5.1f} s, launcher Pods {r.launcher_pods}, container restarts "
            f"{r.container_restarts}, Job failed {r.job_failed}" + "".join(f"\n      {f}" for f in r.failures)
        )
    return "\n".join(lines)
