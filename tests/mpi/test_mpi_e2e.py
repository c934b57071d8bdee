"""Real MPI over real sshd: what the hook renders must put every rank where the hostfile says.

Each test drives an MPIJob through the fake Metacontroller (``tests/support/metacontroller.py``) to the point
where its worker Pods and launcher Job exist, runs those Pods in the test bed (``tests/mpi/bed.py``: one
network, PID, mount and UTS namespace per Pod, volumes as kubelet lays them out), lets the launcher's
``mpirun`` run ``examples/hello`` on the workers, and feeds the launcher's exit back through a sync. Per build
(Open MPI 4.1 and MPICH from Debian, Open MPI 5 and Intel MPI from PyPI; ``.ci/install-mpi``): ranks per host
= slots, runLauncherAsWorker, a custom cluster domain, discover_hosts.sh, a non-root job; a worker without
sshd and a wrong cluster domain end the MPIJob Failed. One more shows what Open MPI 5 does with upstream's env
alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.kube.names import LAUNCHER_WAIT_ANNOTATION
from app.settings import Settings
from tests.mpi.bed import Bed, Image
from tests.mpi.builds import BUILDS, POD_PREFIX, PREFIX, Build, in_pod
from tests.support.builders import mpijob
from tests.support.metacontroller import FakeMetacontroller

RANK_LINE = re.compile(r"^rank (\d+) of (\d+) on (\S+) \(sum of ranks (\d+)\)$", re.M)
DISCOVER_LINE = re.compile(r"^discovered: (.*)$", re.M)
KEY_LINE = re.compile(r"^key: (.*)$", re.M)
# ssh's ConnectionAttempts=10 (rendered by the hook) spends ~10 s on a worker that refuses connections,
# after the launcher's wait-for-workers gave up (FAILURE_WAIT seconds, the MPIJob's annotation).
FAILURE_WAIT = 2
FAILURE_DEADLINE = 20
WAITED = re.compile(r"^wait-for-workers: (\d+) hosts answer ssh", re.M)
LAUNCHER_SECONDS = int(os.environ.get("MPI_E2E_LAUNCHER_SECONDS", "60"))


def _bed_missing() -> str | None:
    if os.geteuid() != 0:
        return "the MPI test bed needs root (network, mount and PID namespaces)"
    for tool in ("ip", "unshare", "setpriv", "ssh-keygen", "/usr/sbin/sshd", "ssh"):
        if shutil.which(tool) is None:
            return f"the MPI test bed needs {tool}"
    return None


@pytest.fixture(scope="session")
def hello_dir() -> Iterator[Path]:
    """examples/hello compiled per build, in a folder every user of the "pods" can read (not /tmp: the pods
    have their own)."""
    PREFIX.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"hello-{os.getpid()}-", dir=PREFIX))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _hello(build: Build, hello_dir: Path) -> Path:
    binary = hello_dir / build.name
    if not binary.exists():
        build.compile(binary)
    return binary


@pytest.fixture(params=sorted(BUILDS))
def build(request: pytest.FixtureRequest, hello_dir: Path) -> Build:
    b = BUILDS[request.param]
    reason = _bed_missing() or b.missing()
    if reason:
        if os.environ.get("CI") and _bed_missing():
            pytest.fail(reason)
        pytest.skip(reason)
    _hello(b, hello_dir)
    return b


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
    """An MPIJob whose launcher runs discover_hosts.sh, then mpirun of examples/hello on every slot."""
    as_root = not options.get("non_root")
    ranks = slots * (workers + (1 if options.get("launcher_as_worker") else 0))
    mpirun = [
        str(in_pod(build.mpirun)),
        *(build.root_args if as_root else ()),
        "-n",
        str(ranks),
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
    builder.set(
        "spec.mpiReplicaSpecs.Launcher.template.spec.containers",
        [
            {"name": "launcher", "image": "hello", "command": ["/bin/sh", "-c", script]},
        ],
    )
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
) -> Outcome:
    """Create the job, run its Pods, report the launcher's end to the hook as the Job controller would."""
    mc = FakeMetacontroller(settings=Settings(cluster_domain=hook_domain))
    mc.apply_mpijob(job)
    mc.sync_until_steady()
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
            bed.start(launcher, children)
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
            bed.start(launcher, list(mc.objects.values()))
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


def _every_rank_reported(log: str) -> bool:
    ranks = RANK_LINE.findall(log)
    return bool(ranks) and len({r for r, *_ in ranks}) == int(ranks[0][1])


def assert_placed(outcome: Outcome, slots: int) -> None:
    """Every slot of every hostfile host ran exactly one rank, all in one MPI world."""
    assert outcome.exit_code == 0, outcome.log
    ranks = outcome.ranks
    size = len(outcome.hostfile_hosts()) * slots
    assert sorted(r for r, *_ in ranks) == list(range(size)), outcome.log
    assert {(n, s) for _, n, _, s in ranks} == {(size, size * (size - 1) // 2)}, outcome.log
    short_hosts = [h.split(".")[0] for h in outcome.hostfile_hosts()]
    assert Counter(h for *_, h, _ in ranks) == dict.fromkeys(short_hosts, slots), outcome.log
    assert outcome.conditions["Succeeded"] == ("True", "MPIJobSucceeded")
    # The launcher's init container checked every worker over ssh first (not the launcher itself).
    workers = [h for h in short_hosts if "-worker-" in h]
    assert WAITED.findall(outcome.log) == [str(len(workers))], outcome.log


def test_ranks_fill_the_workers_slots(build: Build, hello_dir: Path) -> None:
    outcome = run_job(build, job_for(build, hello_dir, workers=2, slots=2))
    assert_placed(outcome, slots=2)
    assert outcome.hostfile_hosts() == [
        "hello-worker-0.hello.default.svc",
        "hello-worker-1.hello.default.svc",
    ]
    # discover_hosts.sh (run in the launcher) names the Running workers, as the last sync saw them.
    assert DISCOVER_LINE.findall(outcome.log) == [" ".join(outcome.hostfile_hosts()) + " "]
    assert KEY_LINE.findall(outcome.log) == ["600 0:0"]  # the launcher's private key, as its ssh sees it


def test_launcher_as_worker_runs_ranks_on_the_launcher(build: Build, hello_dir: Path) -> None:
    outcome = run_job(build, job_for(build, hello_dir, workers=1, launcher_as_worker=True))
    assert_placed(outcome, slots=1)
    assert outcome.hostfile_hosts()[0] == "hello-launcher.hello.default.svc"


def test_custom_cluster_domain(build: Build, hello_dir: Path) -> None:
    outcome = run_job(
        build, job_for(build, hello_dir), hook_domain="example.org", cluster_domain="example.org"
    )
    assert_placed(outcome, slots=1)
    assert all(h.endswith(".hello.default.svc.example.org") for h in outcome.hostfile_hosts())


def test_non_root_job(build: Build, hello_dir: Path) -> None:
    """As examples/pi/pi.yaml: uid 1000 everywhere, sshd from ~/.sshd_config with the key as host key."""
    outcome = run_job(build, job_for(build, hello_dir, non_root=True))
    assert_placed(outcome, slots=1)
    # root-owned as kubelet leaves it, readable through the fsGroup the hook added, not by others
    assert KEY_LINE.findall(outcome.log) == ["440 0:1000"]


def assert_failed(build: Build, outcome: Outcome) -> None:
    """No rank ran; the launcher's end reaches the MPIJob as upstream's updateMPIJobFailedStatus maps it.

    Open MPI's mpirun and Intel's mpiexec exit non-zero; MPICH's Hydra waits forever for the proxy that ssh
    could not start, so only activeDeadlineSeconds ends that launcher (docs/image-contract.md says so)."""
    assert not outcome.ranks, f"ranks ran although the job cannot work:\n{outcome.log}"
    # The launcher's wait gave up at its bound and left the failure to mpirun, as without the wait.
    assert f"did not answer within {FAILURE_WAIT}s: starting the launcher anyway" in outcome.log, outcome.log
    failed = next(c for c in outcome.status["conditions"] if c["type"] == "Failed")
    if build.hangs_when_ssh_fails:
        assert outcome.exit_code is None, outcome.log
        assert (failed["status"], failed["reason"]) == ("True", "DeadlineExceeded")
        assert failed["message"] == "Job was active longer than specified deadline"
    else:
        assert outcome.exit_code not in (0, None), outcome.log
        assert (failed["status"], failed["reason"]) == ("True", "BackoffLimitExceeded/Error")
        assert failed["message"] == (
            f"Job has reached the specified backoff limit: mpirun exited with {outcome.exit_code}"
        )
    assert outcome.conditions["Running"][0] == "False"


def test_launcher_started_before_its_workers_waits_for_them(build: Build, hello_dir: Path) -> None:
    """As AtStartup on a real cluster: the launcher Pod starts while no worker's sshd listens yet. Its
    init container retries ssh until both answer, then mpirun runs once and places every rank."""
    outcome = run_job(build, job_for(build, hello_dir, non_root=True), launcher_first=3)
    assert_placed(outcome, 1)
    assert "hello-worker-0.hello.default.svc: " in outcome.log and ", retrying" in outcome.log, outcome.log


def test_non_root_launcher_with_root_sshd(build: Build, hello_dir: Path) -> None:
    """Workers run the default root sshd, which reads mpiuser's authorized_keys as mpiuser with mpiuser's
    groups, not the pod's fsGroup (here the user's own 2000): why only the private key item is 0440 and the
    public files keep 0644."""
    outcome = run_job(build, job_for(build, hello_dir, non_root=True, root_sshd=True))
    assert_placed(outcome, slots=1)
    assert KEY_LINE.findall(outcome.log) == ["440 0:2000"]


def test_worker_without_sshd_fails_the_job(build: Build, hello_dir: Path) -> None:
    outcome = run_job(build, job_for(build, hello_dir, deadline=FAILURE_DEADLINE), sshd_down="hello-worker-1")
    assert_failed(build, outcome)
    assert "hello-worker-1.hello.default.svc" in outcome.log
    # ssh got the rendered "-o ConnectionAttempts=10" (one attempt a second) before giving up; without it
    # (e.g. Open MPI 5 without PRTE_MCA_plm_ssh_args) mpirun fails within half a second.
    assert outcome.launcher_seconds >= 5, outcome.log


def test_open_mpi_5_needs_the_prrte_variables(hello_dir: Path) -> None:
    """Without the PRTE_MCA_* names (upstream renders only ORTE's), Open MPI 5 ignores the hostfile and runs
    every rank on the launcher, and the job "succeeds": what the hook's PRRTE variables fix."""
    build = BUILDS["openmpi5"]
    reason = _bed_missing() or build.missing()
    if reason:
        pytest.skip(reason)
    _hello(build, hello_dir)
    outcome = run_job(build, job_for(build, hello_dir), drop_env_prefix="PRTE_MCA_")
    assert outcome.exit_code == 0, outcome.log
    assert [host for *_, host, _ in outcome.ranks] == ["hello-launcher", "hello-launcher"], outcome.log
    assert outcome.conditions["Succeeded"] == ("True", "MPIJobSucceeded")


def test_wrong_cluster_domain_fails_loudly(build: Build, hello_dir: Path) -> None:
    """A hook whose --cluster-domain the cluster does not serve: no rank runs, never a silent single node."""
    job = job_for(build, hello_dir, deadline=FAILURE_DEADLINE)
    outcome = run_job(build, job, hook_domain="wrong.example", cluster_domain="cluster.local")
    assert_failed(build, outcome)
    assert "wrong.example" in outcome.log
