"""The launcher's init container ``wait-for-workers``: where it goes, what it copies, what its script does.

The script runs here under ``sh`` (dash on Debian) and ``busybox sh`` when present, with a stand-in ``ssh``
that answers for the hosts a test names; tests/mpi runs it against real sshd, tests/node on a real node.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from app.api.defaults import with_defaults
from app.api.types import MPIJob
from app.children.launcher_job import build_launcher_job
from app.children.launcher_wait import DEFAULT_WAIT_SECONDS, SCRIPT
from app.children.service import build_service
from app.kube.names import LAUNCHER_WAIT_ANNOTATION, WAIT_FOR_WORKERS_CONTAINER
from tests.support.builders import mpijob


def _spec(job: dict[str, Any]) -> dict[str, Any]:
    parsed = with_defaults(MPIJob.model_validate(job))
    assert parsed.launcher_spec is not None
    spec: dict[str, Any] = build_launcher_job(parsed, parsed.launcher_spec)["spec"]["template"]["spec"]
    return spec


def _waits(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in spec.get("initContainers") or [] if c["name"] == WAIT_FOR_WORKERS_CONTAINER]


def test_it_copies_the_decorated_first_container_and_runs_last() -> None:
    builder = mpijob("pi")
    builder.set("spec.sshAuthMountPath", "/home/mpiuser/.ssh")
    first = {
        "name": "launcher",
        "image": "mpi:1",
        "imagePullPolicy": "IfNotPresent",
        "command": ["mpirun", "-n", "2", "/pi"],
        "envFrom": [{"configMapRef": {"name": "settings"}}],
        "securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
        "readinessProbe": {"exec": {"command": ["true"]}},
        "workingDir": "/work",
    }
    builder.set("spec.mpiReplicaSpecs.Launcher.template.spec.containers", [first])
    builder.set(
        "spec.mpiReplicaSpecs.Launcher.template.spec.initContainers", [{"name": "mine", "image": "x"}]
    )
    spec = _spec(builder.build())
    assert [c["name"] for c in spec["initContainers"]] == ["mine", WAIT_FOR_WORKERS_CONTAINER]
    wait, launcher = spec["initContainers"][1], spec["containers"][0]
    assert wait == {
        "name": WAIT_FOR_WORKERS_CONTAINER,
        "command": ["sh", "-c", SCRIPT, WAIT_FOR_WORKERS_CONTAINER, str(DEFAULT_WAIT_SECONDS), "-"],
        # ours included: the hostfile and key mounts, the MPI env
        **{k: launcher[k] for k in ("image", "imagePullPolicy", "env", "envFrom", "volumeMounts")},
        "securityContext": first["securityContext"],
        "resources": first["resources"],
    }
    assert {"name": "mpi-job-config", "mountPath": "/etc/mpi"} in wait["volumeMounts"]


def test_the_launcher_as_worker_skips_its_own_host() -> None:
    spec = _spec(mpijob("pi").launcher_as_worker().build())
    assert _waits(spec)[0]["command"][-2:] == [str(DEFAULT_WAIT_SECONDS), "pi-launcher"]


@pytest.mark.parametrize(
    ("value", "bound"),
    [("0", None), ("45", 45), (" 600 ", 600), ("86400", 86400), ("86401", 300), ("-1", 300), ("1m", 300)],
)
def test_the_annotation_sets_the_bound_and_0_turns_it_off(value: str, bound: int | None) -> None:
    spec = _spec(mpijob("pi").set("metadata.annotations", {LAUNCHER_WAIT_ANNOTATION: value}).build())
    waits = _waits(spec)
    assert [int(c["command"][-2]) for c in waits] == ([] if bound is None else [bound])


@pytest.mark.parametrize("where", ["containers", "initContainers"])
def test_a_container_of_that_name_in_the_template_is_left_alone(where: str) -> None:
    builder = mpijob("pi")
    template = builder.obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    template.setdefault(where, []).append({"name": WAIT_FOR_WORKERS_CONTAINER, "image": "mine"})
    spec = _spec(builder.build())
    assert [c["image"] for c in _waits(spec)] == (["mine"] if where == "initContainers" else [])


@pytest.mark.parametrize("name", [{"a": 1}, ["x"], 7])
def test_a_container_name_that_is_not_a_string_yet_is_no_crash(name: object) -> None:
    """The template's schema is the apiserver's to check: a name of another type (found by hypothesis)
    still builds, and the apiserver's error reaches the user, not a 500 from the hook."""
    builder = mpijob("pi")
    builder.obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["name"] = name
    assert [c["name"] for c in _waits(_spec(builder.build()))] == [WAIT_FOR_WORKERS_CONTAINER]


# --- the script ---------------------------------------------------------------------------------------------

_SHELLS = [s for s in ("dash", "bash", "busybox") if shutil.which(s)]
# A stand-in ssh: succeeds for the hosts listed in $UP_FILE (re-read each call), logs every call's host.
_FAKE_SSH = """#!/bin/sh
host=$(for a; do case $a in -*|true|BatchMode=*|ConnectTimeout=*|ConnectionAttempts=*|LogLevel=*) ;; \
*) echo "$a";; esac; done | head -n 1)
echo "$host" >> "$CALLS"
grep -qx "$host" "$UP_FILE" && exit 0
echo "ssh: Could not resolve hostname $host: Name or service not known" >&2
exit 255
"""


def _run(
    tmp_path: Path,
    shell: str,
    hostfile: str,
    up: list[str],
    bound: int,
    launcher: str = "-",
    ssh: bool = True,
    name: str = "",
    script: str = SCRIPT,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("date", "sleep", "grep", "head", "cat", "printf"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).unlink(missing_ok=True)
        (bin_dir / tool).symlink_to(found)
    if ssh:
        (bin_dir / "ssh").write_text(_FAKE_SSH)
        (bin_dir / "ssh").chmod(0o755)
    (tmp_path / "hostfile").write_text(hostfile)
    (tmp_path / "up").write_text("".join(f"{h}\n" for h in up))
    calls = tmp_path / "calls"
    calls.write_text("")
    script = script.replace("/etc/mpi/hostfile", str(tmp_path / "hostfile"))
    argv = [
        shutil.which(shell) or shell,
        *(["sh"] if shell == "busybox" else []),
        "-c",
        script,
        "wait-for-workers",
        str(bound),
        launcher,
        name,
    ]
    env = {"PATH": str(bin_dir), "UP_FILE": str(tmp_path / "up"), "CALLS": str(calls), **(env or {})}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    return done, calls.read_text().split()


@pytest.mark.parametrize("shell", _SHELLS)
def test_hosts_that_answer_end_the_wait_at_once(tmp_path: Path, shell: str) -> None:
    hostfile = "pi-launcher.pi.ns.svc slots=2\npi-worker-0.pi.ns.svc slots=2\npi-worker-1.pi.ns.svc slots=2\n"
    up = ["pi-worker-0.pi.ns.svc", "pi-worker-1.pi.ns.svc"]
    done, calls = _run(tmp_path, shell, hostfile, up, bound=30, launcher="pi-launcher")
    assert done.returncode == 0, done
    assert sorted(calls) == up  # once each, never the launcher itself
    assert done.stdout.startswith("wait-for-workers: 2 hosts answer ssh ("), done.stdout


@pytest.mark.parametrize("shell", _SHELLS)
def test_it_retries_until_a_host_answers(tmp_path: Path, shell: str) -> None:
    """MPICH/Intel's ``host:N`` lines; the last one without a newline."""
    hostfile = "w-0.j.ns.svc:1\nw-1.j.ns.svc:1"
    up_file = tmp_path / "up"
    # w-1 comes up after ~2 s: a helper rewrites the up list meanwhile.
    started = time.monotonic()
    helper = subprocess.Popen(
        ["sh", "-c", f"sleep 2; printf 'w-0.j.ns.svc\\nw-1.j.ns.svc\\n' > {up_file}"],
    )
    try:
        done, calls = _run(tmp_path, shell, hostfile, ["w-0.j.ns.svc"], bound=30)
    finally:
        helper.wait(timeout=10)
    assert done.returncode == 0, done
    assert time.monotonic() - started >= 2
    assert calls.count("w-0.j.ns.svc") == 1 and calls.count("w-1.j.ns.svc") >= 2, calls
    assert "w-1.j.ns.svc: ssh: Could not resolve hostname w-1.j.ns.svc" in done.stdout
    assert done.stdout.count("retrying") == 1, done.stdout  # the same error is said once
    assert "2 hosts answer ssh" in done.stdout


@pytest.mark.parametrize("shell", _SHELLS)
def test_at_the_bound_it_gives_up_and_exits_0(tmp_path: Path, shell: str) -> None:
    done, _ = _run(tmp_path, shell, "a.j.ns.svc slots=1\nb.j.ns.svc slots=1\n", ["a.j.ns.svc"], bound=2)
    assert done.returncode == 0, done
    assert "b.j.ns.svc: no answer within 2s (ssh: Could not resolve hostname" in done.stdout
    assert done.stdout.endswith(
        "wait-for-workers: 1 of 2 hosts did not answer within 2s: starting the launcher anyway\n"
    )


@pytest.mark.parametrize("shell", _SHELLS)
def test_without_ssh_it_does_not_wait(tmp_path: Path, shell: str) -> None:
    done, _ = _run(tmp_path, shell, "a.j.ns.svc slots=1\n", [], bound=30, ssh=False)
    assert (done.returncode, done.stdout) == (0, "wait-for-workers: no ssh in the image: not waiting\n")


def test_many_hosts_are_checked_side_by_side(tmp_path: Path) -> None:
    hosts = [f"w-{i}.j.ns.svc" for i in range(40)]
    done, calls = _run(tmp_path, "sh", "".join(f"{h} slots=1\n" for h in hosts), hosts, bound=30)
    assert done.returncode == 0, done
    assert sorted(calls) == sorted(hosts)
    assert "40 hosts answer ssh" in done.stdout


def test_the_script_is_posix_sh() -> None:
    """``sh -n`` parses it; no bashisms a minimal image's sh would reject."""
    assert subprocess.run(["sh", "-n", "-c", SCRIPT], check=False).returncode == 0
    for bashism in ("[[", "$(<", "function ", "local ", "$RANDOM", "$SECONDS", "<<<"):
        assert bashism not in SCRIPT, bashism


@pytest.mark.parametrize(
    ("implementation", "publish", "resolve"),
    [
        ("OpenMPI", None, []),
        ("MPICH", True, ["pi-launcher.pi.default.svc"]),
        ("Intel", True, ["pi-launcher.pi.default.svc"]),
    ],
)
def test_hydra_launchers_are_published_before_ready_and_wait_to_resolve(
    implementation: str, publish: bool | None, resolve: list[str]
) -> None:
    """Hydra's proxies connect back to the launcher by name as soon as mpiexec starts them: the Service
    publishes not-ready addresses, and the wait ends only once the launcher's own name resolves."""
    job = mpijob("pi").impl(implementation).build()
    parsed = with_defaults(MPIJob.model_validate(job))
    assert build_service(parsed)["spec"].get("publishNotReadyAddresses") is publish
    assert _waits(_spec(job))[0]["command"][6:] == resolve


def test_a_name_that_never_resolves_ends_the_wait_at_the_bound(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "getent").write_text("#!/bin/sh\nexit 2\n")
    (tmp_path / "bin" / "getent").chmod(0o755)
    hostfile = "w-0.j.ns.svc:1\n"
    done, _ = _run(tmp_path, "sh", hostfile, ["w-0.j.ns.svc"], bound=2, name="j-launcher.j.ns.svc")
    assert done.returncode == 0, done
    assert "j-launcher.j.ns.svc: not resolved within 2s" in done.stdout, done.stdout
