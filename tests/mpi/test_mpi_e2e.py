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

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.mpi.builds import Build
from tests.mpi.jobs import FAILURE_WAIT, Outcome, job_for, run_job

DISCOVER_LINE = re.compile(r"^discovered: (.*)$", re.M)
KEY_LINE = re.compile(r"^key: (.*)$", re.M)
# ssh's ConnectionAttempts=10 (rendered by the hook) spends ~10 s on a worker that refuses connections,
# after the launcher's wait-for-workers gave up (FAILURE_WAIT seconds).
FAILURE_DEADLINE = 20
WAITED = re.compile(r"^wait-for-workers: (\d+) hosts answer ssh", re.M)


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


@pytest.mark.parametrize("build", ["openmpi5"], indirect=True)
def test_open_mpi_5_needs_the_prrte_variables(build: Build, hello_dir: Path) -> None:
    """Without the PRTE_MCA_* names (upstream renders only ORTE's), Open MPI 5 ignores the hostfile and runs
    every rank on the launcher, and the job "succeeds": what the hook's PRRTE variables fix."""
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
