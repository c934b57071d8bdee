"""One MPIJob run for real: the hook's children through the fake Metacontroller, its Pods in the test bed.

``job_for`` writes an MPIJob whose launcher runs ``examples/hello`` on every slot; ``run_job`` creates it,
runs its worker Pods and launcher in the bed (``tests/mpi/bed.py``), and feeds the launcher's exit back
through a sync, as the Job controller would.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.kube.names import LAUNCHER_WAIT_ANNOTATION, config_name
from app.settings import Settings
from tests.mpi.bed import Bed, Image
from tests.mpi.builds import POD_PREFIX, PREFIX, Build, in_pod
from tests.support.builders import mpijob
from tests.support.metacontroller import FakeMetacontroller

RANK_LINE = re.compile(r"^rank (\d+) of (\d+) on (\S+) \(sum of ranks (\d+)\)$", re.M)
# The bound of the launcher's wait-for-workers in jobs with a deadline (the MPIJob's annotation).
FAILURE_WAIT = 2
LAUNCHER_SECONDS = int(os.environ.get("MPI_E2E_LAUNCHER_SECONDS", "60"))


@dataclass
class Outcome:
    exit_code: int | None  # None: still running at activeDeadlineSeconds
    log: str
    hostfile: str
    conditions: dict[str, tuple[str, str]]
    status: dict[str, Any]
    launcher_seconds: float

    @property
    def ranks(self) -> list[tuple[int, int, str, int]]:
        return [(int(r), int(n), h, int(s)) for r, n, h, s in RANK_LINE.findall(self.log)]

    def hostfile_hosts(self) -> list[str]:
        return [re.split(r"[\s:]", line)[0] for line in self.hostfile.splitlines() if line]


def job_for(
    build: Build, hello_dir: Path, *, workers: int = 2, slots: int = 1, **options: Any
) -> dict[str, Any]:
    """An MPIJob whose launcher runs discover_hosts.sh, then mpirun of examples/hello on every slot (or on
    ``ranks``), with ``mpirun_args`` before the program and the launcher's own ``env`` (a dict)."""
    as_root = not options.get("non_root")
    ranks = options.get("ranks") or slots * (workers + (1 if options.get("launcher_as_worker") else 0))
    mpirun = [
        str(in_pod(build.mpirun)),
        *(build.root_args if as_root else ()),
        "-n",
        str(ranks),
        *options.get("mpirun_args", ()),
        str(in_pod(hello_dir / build.name)),
    ]
    script = (
        'echo "discovered: $(/etc/mpi/discover_hosts.sh | tr "\\n" " ")"; '
        'echo "key: $(stat -L -c "%a %u:%g" "$HOME/.ssh/id_rsa")"; exec ' + " ".join(mpirun)
    )
    if options.get("launcher_as_worker") and build.ssh_to_itself:
        script = "/usr/sbin/sshd; " + script
    builder = mpijob("hello").impl(build.implementation).workers(workers).slots(slots)
    builder.run_policy(backoffLimit=0)
    if options.get("deadline"):
        builder.run_policy(activeDeadlineSeconds=options["deadline"])
        builder.set("metadata.annotations", {LAUNCHER_WAIT_ANNOTATION: str(FAILURE_WAIT)})
    launcher: dict[str, Any] = {"name": "launcher", "image": "hello", "command": ["/bin/sh", "-c", script]}
    if options.get("env"):
        launcher["env"] = [{"name": k, "value": v} for k, v in options["env"].items()]
    builder.set("spec.mpiReplicaSpecs.Launcher.template.spec.containers", [launcher])
    worker: dict[str, Any] = {"name": "worker", "image": "hello"}
    if options.get("launcher_as_worker"):
        builder.launcher_as_worker()
    if options.get("non_root"):
        # As upstream's examples/pi: everything runs as mpiuser, sshd too, from ~/.sshd_config.
        builder.set("spec.sshAuthMountPath", "/home/mpiuser/.ssh")
        user = {"runAsUser": 1000}
        launcher = builder.spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
        launcher["securityContext"] = user
        if options.get("root_sshd"):  # workers keep the default command: sshd as root logs mpiuser in
            for role in ("Launcher", "Worker"):  # a group of the user's own, not mpiuser's 1000
                builder.set(f"spec.mpiReplicaSpecs.{role}.template.spec.securityContext", {"fsGroup": 2000})
        else:
            worker.update(
                securityContext=user,
                command=["/usr/sbin/sshd"],
                args=["-De", "-f", "/home/mpiuser/.sshd_config"],
            )
    builder.set("spec.mpiReplicaSpecs.Worker.template.spec.containers", [worker])
    return builder.build()


def run_job(
    build: Build,
    job: dict[str, Any],
    *,
    hook_domain: str = "",
    cluster_domain: str = "cluster.local",
    sshd_down: str = "",
    drop_env_prefix: str = "",
    launcher_first: float = 0,
    hostfile: Callable[[str], str] | None = None,
    placement: Callable[[FakeMetacontroller], None] | None = None,
) -> Outcome:
    """Create the job, run its Pods, report the launcher's end to the hook as the Job controller would.
    ``placement``: the scheduler binds the workers (and Nodes join) before the Pods run."""
    mc = FakeMetacontroller(settings=Settings(cluster_domain=hook_domain))
    mc.apply_mpijob(job)
    mc.sync_until_steady()
    if placement is not None:
        placement(mc)
        mc.sync_until_steady(limit=8)
    name = mc.name
    image = Image(
        path_dirs=(str(in_pod(build.bin_dir)),), env=build.image_env, binds=((str(PREFIX), str(POD_PREFIX)),)
    )
    with Bed(image, cluster_domain=cluster_domain) as bed:
        workers = [bed.plan(mc.get("Pod", w)) for w in mc.names("Pod") if w.startswith(f"{name}-worker-")]
        launcher_job = mc.get("Job", f"{name}-launcher")
        assert launcher_job is not None
        if drop_env_prefix:  # what an operator without our additions would have rendered
            container = launcher_job["spec"]["template"]["spec"]["containers"][0]
            container["env"] = [e for e in container["env"] if not e["name"].startswith(drop_env_prefix)]
        launcher_pod = mc.start_launcher_pod()
        launcher = bed.plan(launcher_job["spec"]["template"], name=launcher_pod)
        children = list(mc.objects.values())
        started = time.monotonic()
        if launcher_first:  # as AtStartup on a real cluster: the launcher before any worker answers
            bed.start(launcher, _with_hostfile(children, name, hostfile))
            time.sleep(launcher_first)
        for pod in workers:
            bed.start(pod, children)
        for pod in workers:
            pod.wait_for_log("Server listening")
        mc.workers_running()
        mc.sync_until_steady()
        if sshd_down:
            bed.stop(sshd_down)
        if not launcher_first:
            started = time.monotonic()
            bed.start(launcher, _with_hostfile(list(mc.objects.values()), name, hostfile))
        deadline = job["spec"]["runPolicy"].get("activeDeadlineSeconds")
        try:
            exit_code = launcher.wait(timeout=deadline or LAUNCHER_SECONDS)
        except subprocess.TimeoutExpired:
            bed.stop(launcher.name)
            if not deadline and build.finalize_may_hang and _every_rank_reported(launcher.output()):
                warnings.warn(
                    f"{build.name}: every rank reported, then a rank hung in MPI_Finalize", stacklevel=1
                )
                exit_code = 0
            else:
                assert deadline, f"launcher still running after {LAUNCHER_SECONDS}s:\n{launcher.output()}"
                exit_code = None  # the Job controller ends it: activeDeadlineSeconds
        log = launcher.output()
        seconds = time.monotonic() - started
    if exit_code == 0:
        mc.finish_launcher("Complete")
    elif exit_code is None:
        mc.set_launcher_pod(launcher_pod, "Failed", reason="DeadlineExceeded", message="deadline exceeded")
        mc.finish_launcher("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
    else:
        mc.set_launcher_pod(launcher_pod, "Failed", reason="Error", message=f"mpirun exited with {exit_code}")
        mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    mc.sync_until_steady()
    config = mc.get("ConfigMap", f"{name}-config")
    assert config is not None
    return Outcome(exit_code, log, config["data"]["hostfile"], mc.conditions(), mc.status, seconds)


def _with_hostfile(
    objects: list[dict[str, Any]], name: str, edit: Callable[[str], str] | None
) -> list[dict[str, Any]]:
    """The children as the launcher mounts them, its hostfile rewritten by ``edit`` (e.g. permuted)."""
    if edit is None:
        return objects
    wanted = ("ConfigMap", config_name(name))
    config = next(o for o in objects if (o["kind"], o["metadata"]["name"]) == wanted)
    edited = {**config, "data": {**config["data"], "hostfile": edit(config["data"]["hostfile"])}}
    return [edited if o is config else o for o in objects]


def _every_rank_reported(log: str) -> bool:
    ranks = RANK_LINE.findall(log)
    return bool(ranks) and len({r for r, *_ in ranks}) == int(ranks[0][1])
