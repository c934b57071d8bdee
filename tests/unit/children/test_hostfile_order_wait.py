"""An ordered hostfile's wait: the launcher's ``wait-for-workers`` holds ``mpirun`` until the hostfile it
sees says the order is final (with ``runLauncherAsWorker``: final for its own Pod), within its bound."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from app.api.hostfile_order_annotations import ORDER_ANNOTATION
from app.children.hostfile_order_lines import HostfileOrder, Placement
from app.children.launcher_wait import ORDERED_SCRIPT, POD_ENV, SCRIPT
from tests.support.builders import mpijob
from tests.unit.children.test_launcher_wait import _SHELLS, _run, _spec, _waits

HOSTS = "a.j.ns.svc slots=1\nb.j.ns.svc slots=1\n"
UP = ["a.j.ns.svc", "b.j.ns.svc"]


def header(bound: int, launcher_pod: str = "") -> str:
    placements = (Placement("a", "n1" if bound else "", ()), Placement("b", "n2", ()))
    return HostfileOrder((), placements, launcher_pod).header()


def _later(path: Path, text: str, seconds: int) -> subprocess.Popen[bytes]:
    """Rewrite ``path`` after ``seconds``, as the kubelet refreshes a mounted ConfigMap."""
    (path.parent / "next").write_text(text)
    return subprocess.Popen(["sh", "-c", f"sleep {seconds}; cp {path.parent / 'next'} {path}"])


def ordered(launcher_as_worker: bool = False) -> dict[str, Any]:
    builder = mpijob().set("metadata.annotations", {ORDER_ANNOTATION: "topology"})
    return _spec((builder.launcher_as_worker() if launcher_as_worker else builder).build())


def test_only_an_ordered_job_runs_the_ordered_script_and_only_a_launcher_as_worker_learns_its_pod() -> None:
    assert _waits(_spec(mpijob().build()))[0]["command"][2] == SCRIPT
    plain = _waits(ordered())[0]
    assert plain["command"][2] == ORDERED_SCRIPT and POD_ENV not in str(plain.get("env"))
    law = _waits(ordered(launcher_as_worker=True))[0]
    assert {"name": POD_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in law["env"]


@pytest.mark.parametrize("shell", _SHELLS)
def test_it_waits_while_the_order_is_pending(tmp_path: Path, shell: str) -> None:
    helper = _later(tmp_path / "hostfile", header(2) + HOSTS, 2)
    started = time.monotonic()
    try:
        done, calls = _run(tmp_path, shell, header(0) + HOSTS, UP, bound=30, script=ORDERED_SCRIPT)
    finally:
        helper.wait(timeout=10)
    assert done.returncode == 0, done
    assert time.monotonic() - started >= 2
    assert f"wait-for-workers: hostfile order: {header(2).strip()} (" in done.stdout
    assert sorted(calls) == UP and "2 hosts answer ssh" in done.stdout


@pytest.mark.parametrize("shell", _SHELLS)
def test_a_launcher_as_worker_waits_for_the_order_made_for_its_own_pod(tmp_path: Path, shell: str) -> None:
    mine = header(2, "pi-launcher-b")
    helper = _later(tmp_path / "hostfile", mine + HOSTS, 2)
    started = time.monotonic()
    try:
        done, _ = _run(
            tmp_path,
            shell,
            header(2, "pi-launcher-a") + HOSTS,  # final, but for the Pod this one replaced
            UP,
            bound=30,
            launcher="pi-launcher",
            script=ORDERED_SCRIPT,
            env={POD_ENV: "pi-launcher-b"},
        )
    finally:
        helper.wait(timeout=10)
    assert done.returncode == 0, done
    assert time.monotonic() - started >= 2
    assert mine.strip() in done.stdout


@pytest.mark.parametrize("shell", _SHELLS)
def test_at_the_bound_it_starts_on_the_order_it_has(tmp_path: Path, shell: str) -> None:
    done, _ = _run(tmp_path, shell, header(0) + HOSTS, UP, bound=2, script=ORDERED_SCRIPT)
    assert done.returncode == 0, done
    assert "the hostfile's order is not final within 2s: starting on the order it has" in done.stdout


@pytest.mark.parametrize("shell", _SHELLS)
def test_a_final_order_does_not_wait(tmp_path: Path, shell: str) -> None:
    started = time.monotonic()
    done, _ = _run(tmp_path, shell, header(2) + HOSTS, UP, bound=30, script=ORDERED_SCRIPT)
    assert done.returncode == 0, done
    # Not a second's sleep: the order's line names 0 s, or 1 s when a second ticked over meanwhile.
    assert re.search(r"^wait-for-workers: hostfile order: .* \([01]s\)$", done.stdout, re.M), done.stdout
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("shell", _SHELLS)
def test_a_host_on_a_line_per_slot_is_checked_once(tmp_path: Path, shell: str) -> None:
    """Open MPI's ordered form: a bare line per slot; the launcher's short name is its own and skipped."""
    lines = "pi-launcher\npi-launcher\nb.j.ns.svc\nb.j.ns.svc\na.j.ns.svc\na.j.ns.svc\n"
    done, calls = _run(
        tmp_path, shell, header(2) + lines, UP, bound=30, launcher="pi-launcher", script=ORDERED_SCRIPT
    )
    assert done.returncode == 0, done
    assert sorted(calls) == UP and "2 hosts answer ssh" in done.stdout
