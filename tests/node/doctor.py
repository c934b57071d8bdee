"""Run ``mpijob doctor`` (or ``kubectl mpijob doctor``) against the real node, as a user would: the
installed entry points on PATH, a kubeconfig, JSON out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.kube import wait_for

# Where `pip install .` put the mpijob and kubectl-mpijob entry points: beside this interpreter.
BIN = Path(sys.executable).parent
DOCTOR_SECONDS = 240.0
# Each Pod's CPU in these tests: three of them and what is still terminating fit the 2-CPU node.
CPU = "250m"


@dataclass(frozen=True)
class Verdict:
    code: int
    out: str
    err: str

    @property
    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.out)
        return value

    @property
    def check(self) -> str | None:
        problem = self.json.get("problem")
        return problem["check"] if problem else None

    @property
    def evidence(self) -> str:
        problem = self.json.get("problem") or {}
        return "\n".join(problem.get("evidence") or [])


def doctor(kubeconfig: Path, ns: str, name: str, *args: str, kubectl: bool = False) -> Verdict:
    argv = ["kubectl", "mpijob"] if kubectl else [str(BIN / "mpijob")]
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [*argv, "doctor", name, "-n", ns, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Verdict(done.returncode, done.stdout, done.stderr)


def wait_for_problem(kubeconfig: Path, ns: str, name: str, check: str, shows: str = "") -> Verdict:
    """Poll the doctor until it names ``check`` (with ``shows`` in its evidence); every answer on the way
    must be healthy (exit 0) or that same check: the doctor never names another problem meanwhile."""
    seen: list[str] = []

    def probe() -> Verdict | None:
        verdict = doctor(kubeconfig, ns, name, "-o", "json")
        assert verdict.code in (0, 1), f"exit {verdict.code}: {verdict.err}"
        seen.append(str(verdict.check))
        assert verdict.check in (None, check), f"named {verdict.check}, not {check}:\n{verdict.out}"
        if verdict.check == check and shows in verdict.evidence:
            return verdict
        return None

    return wait_for(probe, DOCTOR_SECONDS, lambda: f"the doctor to name {check} (it said {seen[-3:]})")


def settled_pods_gone(real_node: Any, ns: str) -> None:
    """Delete the job and wait until its Pods are gone (their CPU is free for the next test)."""
    real_node.kube.kubectl("-n", ns, "delete", "mpijob", "pi", "--ignore-not-found", "--wait=false")
    wait_for(lambda: not real_node.kube.list("pods", ns), 120, f"the Pods of {ns} to be gone")
