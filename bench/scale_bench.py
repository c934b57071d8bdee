"""Side by side at scale: the Go MPI Operator v0.8.2 and ours (Metacontroller + the hook) on one real control
plane, N MPIJobs x M workers applied at once, one controller after the other.

The control plane is tests/e2e's (etcd, kube-apiserver, kube-controller-manager; no kubelet) with an audit
log. For each case, each side in turn:

  - Go: upstream's CRD (from its release manifest), ``mpi-operator`` out of cluster with its manifest's flags
    (``-alsologtostderr --lock-namespace=...``, client defaults 5 QPS / burst 10, threadiness 2) as admin.
  - ours: our CRD (crds/), our CompositeController (metacontroller/, hook URLs pointed at the local hook),
    the hook as the image runs it (``mpijob serve``, deploy/'s settings, Events posted with the hook's own
    ServiceAccount token), Metacontroller v4.17.2 with the flags deploy/ gives it (deploy/components/
    metacontroller; ``--metacontroller-defaults``: its own defaults, 5 QPS / burst 10, dynamic-apply).

Each side gets its own namespace; the other side's controller is stopped and its namespace is gone (and the
CRD swapped) before a side starts, so neither works on the other's objects. The harness plays kubelet: it
marks worker Pods Running as they appear; once every child exists, every worker runs and each job reports its
workers active, it marks every launcher Pod Succeeded at once; the Job controller then completes the launcher
Jobs and the controller marks the MPIJobs Succeeded.

Measured per side: apply -> every child exists (server creationTimestamps), launcher Pods done -> every
MPIJob Succeeded (the harness's clock, same machine, polled every 0.2 s; and per job from the Job's
Complete to the MPIJob's Succeeded lastTransitionTime), API requests by user agent from the audit log, CPU
(utime+stime) and peak RSS (VmHWM) of each controller process from /proc, kube-apiserver CPU.

    .venv/bin/python bench/scale_bench.py --case 20x32 [--case 200x8 ...]     # as shipped
    .venv/bin/python bench/scale_bench.py --case 20x32 --qps 50 --burst 100     # one budget for both

Binaries: as tests/e2e (``MPI_HOOK_E2E_BIN_DIR`` or the control-plane tarball) plus the Go operator from
``upstream-mpi-operator-v0.8.2-linux-amd64.tar.xz`` in the same tarball directory
(``MPI_HOOK_E2E_TARBALL_DIR``), or ``MPI_HOOK_BENCH_GO_OPERATOR_DIR`` holding ``mpi-operator`` and
``upstream-mpi-operator-v0.8.2.yaml``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.conftest import events_account, install_overlay
from tests.e2e.controlplane import (
    ControlPlane,
    Options,
    extract_once,
    find_binaries,
    metacontroller_crds,
    start_control_plane,
    tarball_dir,
)
from tests.e2e.hook import Hook, install_caller_token
from tests.e2e.kube import ApiError, Kube, finish_pod, run_pod, wait_for
from tests.e2e.processes import Started, http_ok, wait_until_ready
from tests.support import metacontroller_standin

ROOT = Path(__file__).resolve().parent.parent
CASES = {"20x32": (20, 32), "50x64": (50, 64), "1x4096": (1, 4096), "200x8": (200, 8)}
GO_TARBALL = "upstream-mpi-operator-v0.8.2-linux-amd64.tar.xz"
GO_BINARY, GO_MANIFEST = "mpi-operator", "upstream-mpi-operator-v0.8.2.yaml"
GO_HEALTH_PORT = 8080  # fixed in v0.8.2
LOCK_NAMESPACE = "mpi-operator"
CRD = "mpijobs.kubeflow.org"
ROLE, JOB_NAME = "training.kubeflow.org/job-role", "training.kubeflow.org/job-name"
HOOK_USER = "system:serviceaccount:mpi-operator:mpi-operator-hook"
# dynamic-apply keeps a copy of each child in an annotation: a ConfigMap past ~2,500 workers does not fit.
SSA_FROM_WORKERS = 2500
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["watch"]
- level: Metadata
"""
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- binaries ----------------------------------------------------------------------------------------------


def go_operator_dir() -> Path | None:
    """``MPI_HOOK_BENCH_GO_OPERATOR_DIR``, else the upstream tarball beside the control plane one."""
    given = os.environ.get("MPI_HOOK_BENCH_GO_OPERATOR_DIR")
    if given:
        return Path(given)
    tarball = tarball_dir() / GO_TARBALL
    if not tarball.is_file():
        return None
    return extract_once(tarball, (GO_BINARY,), prefix="mpi-hook-bench-go")


def upstream_crd(go_dir: Path) -> dict[str, Any]:
    docs = yaml.safe_load_all((go_dir / GO_MANIFEST).read_text())
    return next(d for d in docs if d and d.get("kind") == "CustomResourceDefinition")


def go_manifest_args(go_dir: Path) -> list[str]:
    """The operator container's args in upstream's release manifest."""
    docs = yaml.safe_load_all((go_dir / GO_MANIFEST).read_text())
    deployment = next(d for d in docs if d and d.get("kind") == "Deployment")
    return list(deployment["spec"]["template"]["spec"]["containers"][0].get("args") or [])


# ---- /proc -------------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def parse_time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


# ---- the kubelet the harness plays -------------------------------------------------------------------------


def _slim(pod: dict[str, Any]) -> dict[str, Any]:
    """What run_pod/finish_pod need of a Pod."""
    meta = pod["metadata"]
    containers = [{"name": c["name"], "image": c.get("image", "")} for c in pod["spec"]["containers"]]
    return {
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "spec": {"containers": containers},
    }


@dataclass
class PodState:
    role: str
    job: str
    created: float
    phase: str
    slim: dict[str, Any]


class Kubelet:
    """Watches one namespace's Pods; marks each worker Running once; finishes launchers on request."""

    def __init__(self, plane: ControlPlane, ns: str, threads: int = 4) -> None:
        self.plane, self.ns = plane, ns
        self.pods: dict[str, PodState] = {}
        self.lock = threading.Lock()
        self.started: set[str] = set()
        self.pool = ThreadPoolExecutor(threads)
        self.local = threading.local()
        self.stopping = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.watching = threading.Event()

    def kube(self) -> Kube:
        kube = getattr(self.local, "kube", None)
        if kube is None:
            kube = self.local.kube = client(self.plane)
        return kube

    def start(self) -> None:
        self.thread.start()
        if not self.watching.wait(30):
            raise RuntimeError("the Pod watch did not start")

    def stop(self) -> None:
        self.stopping = True
        self.pool.shutdown(wait=True)

    def _watch(self) -> None:
        version = ""
        watcher = client(self.plane, timeout=httpx.Timeout(30, read=5))
        while not self.stopping:
            url = f"/api/v1/namespaces/{self.ns}/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=300"
            if version:
                url += f"&resourceVersion={version}"
            try:
                with watcher.client.stream("GET", url) as response:
                    self.watching.set()
                    for line in response.iter_lines():
                        if self.stopping:
                            return
                        event = json.loads(line)
                        if event["type"] == "ERROR":
                            version = ""  # too old: list again from now (the namespace is ours alone)
                            break
                        version = event["object"]["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            self._seen(event["type"], event["object"])
            except httpx.ReadTimeout:
                continue  # quiet for 5 s: watch again from the last version
            except (httpx.HTTPError, ValueError) as err:
                if self.stopping:
                    return
                self.error = err
                time.sleep(0.5)

    def _seen(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        name, labels = meta["name"], meta.get("labels") or {}
        with self.lock:
            if kind == "DELETED":
                self.pods.pop(name, None)
                return
            role = labels.get(ROLE) or ("launcher" if "-launcher" in name else "worker")
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            self.pods[name] = PodState(
                role, labels.get(JOB_NAME, ""), parse_time(meta["creationTimestamp"]), phase, _slim(pod)
            )
            if role == "worker" and phase == "Pending" and name not in self.started:
                self.started.add(name)
                self.pool.submit(self._run, _slim(pod))

    def _run(self, pod: dict[str, Any]) -> None:
        try:
            run_pod(self.kube(), pod)
        except ApiError as err:
            if err.status != 404:
                self.error = err

    def _finish(self, pod: dict[str, Any]) -> None:
        finish_pod(self.kube(), pod)

    def snapshot(self) -> list[PodState]:
        with self.lock:
            return list(self.pods.values())

    def finish_launchers(self) -> int:
        launchers = [p.slim for p in self.snapshot() if p.role == "launcher"]
        list(self.pool.map(self._finish, launchers))
        return len(launchers)


# ---- the API -----------------------------------------------------------------------------------------------


def client(plane: ControlPlane, timeout: httpx.Timeout | float = 60) -> Kube:
    return Kube(
        httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=timeout), plane.kubeconfig
    )


def owned_by_mpijob(obj: dict[str, Any]) -> bool:
    return any(ref.get("kind") == "MPIJob" for ref in obj["metadata"].get("ownerReferences") or [])


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return dict(c)
    return None


def mpijob(name: str, workers: int) -> dict[str, Any]:
    """examples/pi/pi.yaml with M workers, its pods kept (cleanPodPolicy None) and no TTL."""
    job = yaml.safe_load((ROOT / "examples" / "pi" / "pi.yaml").read_text())
    job["metadata"] = {"name": name}
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = workers
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][1] = str(workers)
    return dict(job)


def swap_crd(kube: Kube, crd: dict[str, Any] | Path) -> None:
    """Delete whichever MPIJob CRD is installed (and so every MPIJob), then install ``crd``."""
    kube.delete("customresourcedefinitions", None, CRD)
    wait_for(lambda: kube.get("customresourcedefinitions", None, CRD) is None, 120, "the old CRD to go")
    if isinstance(crd, Path):
        kube.kubectl("apply", "--server-side", "-k", str(crd))
    else:
        kube.kubectl("apply", "--server-side", "-f", "-", stdin=json.dumps(crd))

    def established() -> bool:
        return condition(kube.get("customresourcedefinitions", None, CRD) or {}, "Established") is not None

    wait_for(established, 60, "the MPIJob CRD to be Established")
    # The apiserver serves a new CRD's resource a moment after Established.
    wait_for(lambda: _lists(kube, "mpijobs"), 30, "mpijobs to be served")


def _lists(kube: Kube, resource: str) -> bool:
    try:
        kube.list(resource)
    except ApiError:
        return False
    return True


def delete_namespace(kube: Kube, ns: str) -> None:
    kube.delete("namespaces", None, ns)
    wait_for(lambda: kube.get("namespaces", None, ns) is None, 600, f"namespace {ns} to be gone")


# ---- the two sides -----------------------------------------------------------------------------------------


@dataclass
class Budget:
    """Client budgets and knobs; None = what each side ships (Go: its manifest's flags, client defaults
    5 QPS / burst 10; ours: deploy/'s Metacontroller flags, or Metacontroller's own defaults with
    ``metacontroller_defaults``)."""

    qps: int | None = None
    burst: int | None = None
    mc_workers: int | None = None
    apply_strategy: str | None = None
    metacontroller_defaults: bool = False

    def label(self) -> str:
        parts = []
        if self.qps is not None or self.burst is not None:
            parts.append(f"both at {self.qps or 5} QPS / burst {self.burst or 10}")
        elif self.metacontroller_defaults:
            parts.append("both at client defaults (5 QPS / burst 10)")
        else:
            parts.append("as shipped (Go: 5 QPS / burst 10; ours: deploy/'s Metacontroller flags)")
        if self.mc_workers is not None:
            parts.append(f"Metacontroller --workers={self.mc_workers}")
        if self.apply_strategy is not None:
            parts.append(f"--apply-strategy={self.apply_strategy}")
        return ", ".join(parts)

    def metacontroller_flags(self) -> list[str]:
        """Metacontroller's flags for our side: deploy/'s (or none), then this budget's overrides."""
        shipped = [] if self.metacontroller_defaults else shipped_metacontroller_flags()
        overrides = {
            "--client-go-qps": self.qps,
            "--client-go-burst": self.burst,
            "--workers": self.mc_workers,
            "--apply-strategy": self.apply_strategy,
        }
        flags = {f.split("=", 1)[0]: f for f in shipped}
        flags |= {name: f"{name}={value}" for name, value in overrides.items() if value is not None}
        return list(flags.values())


def shipped_metacontroller_flags() -> list[str]:
    """The args deploy/ gives Metacontroller's container, but for the addresses the harness chooses. deploy/
    pulls Metacontroller's manifests from GitHub: offline, a local stand-in serves them (as in the tests)."""
    with tempfile.TemporaryDirectory(prefix="scale-bench-standin-") as standin:
        env = dict(os.environ)
        if "GIT_CONFIG_COUNT" not in env:  # under pytest, tests/e2e/conftest.py has served it
            env |= metacontroller_standin.serve(Path(standin))
        built = subprocess.run(
            ["kubectl", "kustomize", str(ROOT / "deploy" / "metacontroller")],
            capture_output=True, text=True, timeout=120, check=True, env=env,
        ).stdout  # fmt: skip
    statefulset = next(d for d in yaml.safe_load_all(built) if d and d["kind"] == "StatefulSet")
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    local = ("--health-probe-bind-address", "--metrics-address")
    return [a for a in container["args"] if not a.startswith(local)]


def apply_strategy(flags: list[str]) -> str:
    given = [f.split("=", 1)[1] for f in flags if f.startswith("--apply-strategy=")]
    return given[-1] if given else "dynamic-apply"


class Side:
    name = ""
    title = ""
    agents: tuple[str, ...] = ()

    def __init__(self, plane: ControlPlane, kube: Kube, budget: Budget) -> None:
        self.plane, self.kube, self.budget = plane, kube, budget
        self.processes: dict[str, Started] = {}

    def prepare(self, workers: int) -> None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        for started in self.processes.values():
            self.plane.processes.stop(started)
        self.processes.clear()


class GoSide(Side):
    name, title, agents = "go", "Go v0.8.2", ("mpi-operator",)

    def __init__(self, plane: ControlPlane, kube: Kube, budget: Budget, go_dir: Path) -> None:
        super().__init__(plane, kube, budget)
        self.go_dir = go_dir

    def prepare(self, workers: int) -> None:
        # Upstream's CRD: the side runs as shipped (its schema, its validation cost on the apiserver).
        swap_crd(self.kube, upstream_crd(self.go_dir))
        if self.kube.get("namespaces", None, LOCK_NAMESPACE) is None:
            meta = {"name": LOCK_NAMESPACE}
            self.kube.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def start(self) -> None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", GO_HEALTH_PORT)) == 0:
                raise RuntimeError(
                    f"port {GO_HEALTH_PORT} is taken: mpi-operator v0.8.2 needs it for /healthz"
                )
        args = [a for a in go_manifest_args(self.go_dir) if not a.startswith("--lock-namespace")]
        args += [f"--kubeConfig={self.plane.kubeconfig}", f"--lock-namespace={LOCK_NAMESPACE}"]
        if self.budget.qps is not None:
            args.append(f"--kube-api-qps={self.budget.qps}")
        if self.budget.burst is not None:
            args.append(f"--kube-api-burst={self.budget.burst}")
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}  # it would override --kubeConfig
        started = self.plane.processes.start("mpi-operator", [str(self.go_dir / GO_BINARY), *args], env=env)
        self.processes["mpi-operator"] = started
        wait_until_ready(started, lambda: "Started workers" in started.tail(200), 120, "mpi-operator")


class HookSide(Side):
    name, title, agents = "ours", "ours", ("metacontroller", "hook")

    def prepare(self, workers: int) -> None:
        swap_crd(self.kube, ROOT / "crds")
        self.flags = self.budget.metacontroller_flags()
        if (
            self.budget.metacontroller_defaults
            and workers > SSA_FROM_WORKERS
            and not self.budget.apply_strategy
        ):
            self.flags.append("--apply-strategy=server-side-apply")
        self.strategy = apply_strategy(self.flags)
        workdir = self.plane.workdir
        self.settings = events_account(self.kube, self.plane, workdir)
        self.settings.update(install_caller_token(self.kube, workdir))
        self.hook = Hook(
            self.plane.processes,
            workdir,
            settings={
                **self.settings,
                # deploy/base/deployment.yaml's settings, logs at its INFO level.
                "MPI_OPERATOR_LOG_LEVEL": "INFO",
                "MPI_OPERATOR_CLUSTER_DOMAIN": "",
                "MPI_OPERATOR_MAX_BODY_BYTES": "167772160",
                "MPI_OPERATOR_MEMORY_BUDGET_BYTES": "167772160",
                "MPI_OPERATOR_METACONTROLLER_APPLY_STRATEGY": self.strategy,
            },
            command=(str(Path(sys.executable).parent / "mpijob"), "serve"),
        )
        install_overlay(self.kube, workdir, self.hook.url)

    def start(self) -> None:
        self.hook.start()
        assert self.hook.started is not None
        self.processes["hook"] = self.hook.started
        self.plane.start_metacontroller(self.flags)
        assert self.plane.metacontroller is not None
        self.processes["metacontroller"] = self.plane.metacontroller

    def stop(self) -> None:
        self.plane.metacontroller = None
        self.hook.started = None
        super().stop()


# ---- one side of one case ----------------------------------------------------------------------------------


@dataclass
class Result:
    side: str
    jobs: int
    workers: int
    children_s: float = 0.0  # server: last child's creationTimestamp - first MPIJob's
    children_wall_s: float = 0.0
    active_s: float = 0.0  # harness clock: every child exists -> every job reports all its workers active
    finish_s: float = 0.0  # harness clock: launchers marked done -> last MPIJob seen Succeeded
    finish_server_s: float = 0.0  # last Succeeded lastTransitionTime - launchers marked done (1 s steps)
    lag_median_s: float = 0.0  # per job: launcher Job Complete -> MPIJob Succeeded (server, 1 s steps)
    lag_max_s: float = 0.0
    succeeded: int = 0
    requests: dict[str, Counter[str]] = field(default_factory=dict)
    finish_requests: dict[str, Counter[str]] = field(default_factory=dict)  # launchers done -> Succeeded
    cpu: dict[str, float] = field(default_factory=dict)
    rss: dict[str, float] = field(default_factory=dict)
    apiserver_cpu: float = 0.0
    caught_up: bool = True
    skipped: bool = False  # --skip-go: this side did not run
    window: tuple[float, float] = (0.0, 0.0)


def poll(probe: Callable[[], bool], timeout: float, what: str, every: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def run_side(side: Side, jobs: int, workers: int, timeout: float, log: Callable[[str], None]) -> Result:
    plane, kube = side.plane, side.kube
    result = Result(side.name, jobs, workers)
    ns = f"bench-{side.name}-{jobs}x{workers}-{int(time.time())}"
    side.prepare(workers)
    kube.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    apiserver = next(s for s in plane.processes.started if s.name == "kube-apiserver")
    began = time.time()
    side.start()
    kubelet = Kubelet(plane, ns)
    kubelet.start()
    try:
        cpu0 = {name: cpu_seconds(s.pid) for name, s in side.processes.items()}
        api0 = cpu_seconds(apiserver.pid)
        names = [f"job-{i}" for i in range(jobs)]
        t_apply = time.time()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: kube.create("mpijobs", ns, mpijob(n, workers)), names))
        log(f"  {side.name}: applied {jobs} MPIJobs")

        def others() -> dict[str, list[dict[str, Any]]]:
            found = {r: [o for o in kube.list(r, ns) if owned_by_mpijob(o)] for r in ("jobs", "services")}
            found |= {
                r: [o for o in kube.list(r, ns) if owned_by_mpijob(o)] for r in ("configmaps", "secrets")
            }
            return found

        def all_exist() -> bool:
            pods = kubelet.snapshot()
            if sum(p.role == "worker" for p in pods) < jobs * workers:
                return False
            return all(len(v) >= jobs for v in others().values())

        poll(all_exist, timeout, f"{jobs}x{workers} children in {ns}", every=1.0)
        result.children_wall_s = time.time() - t_apply
        log(f"  {side.name}: every child exists after {result.children_wall_s:.1f} s")

        def ready() -> bool:
            pods = kubelet.snapshot()
            running = sum(p.role == "worker" and p.phase == "Running" for p in pods)
            launchers = sum(p.role == "launcher" for p in pods)
            if running < jobs * workers or launchers < jobs:
                return False
            listed = kube.list("mpijobs", ns)
            active = [
                ((j.get("status") or {}).get("replicaStatuses") or {}).get("Worker", {}) for j in listed
            ]
            return len(listed) == jobs and all(a.get("active") == workers for a in active)

        try:
            poll(ready, timeout, "every worker running and reported active", every=1.0)
        except AssertionError:
            result.caught_up = False  # finish anyway; the table says so
        t_done = time.time()
        result.active_s = t_done - t_apply - result.children_wall_s
        finished = kubelet.finish_launchers()
        log(f"  {side.name}: {finished} launcher Pods marked Succeeded")

        def all_succeeded() -> bool:
            listed = kube.list("mpijobs", ns)
            return sum(condition(j, "Succeeded") is not None for j in listed) >= jobs

        try:
            poll(all_succeeded, timeout, f"every MPIJob in {ns} to succeed")
        except AssertionError:
            log(f"  {side.name}: not every MPIJob Succeeded after {timeout:.0f} s")
        t_end = time.time()
        result.finish_s = t_end - t_done
        result.cpu = {name: cpu_seconds(s.pid) - cpu0[name] for name, s in side.processes.items()}
        result.rss = {name: peak_rss_mib(s.pid) for name, s in side.processes.items()}
        result.apiserver_cpu = cpu_seconds(apiserver.pid) - api0
    finally:
        kubelet.stop()
        side.stop()
    result.window = (began, t_end)
    _server_times(kube, ns, result, t_done)
    result.requests = count_requests(plane.workdir / "audit.log", began, t_end, side.agents)
    result.finish_requests = count_requests(plane.workdir / "audit.log", t_done, t_end, side.agents)
    log(f"  {side.name}: every MPIJob Succeeded {result.finish_s:.1f} s after the launchers; cleaning up")
    delete_namespace(kube, ns)
    return result


def _server_times(kube: Kube, ns: str, result: Result, t_done: float) -> None:
    listed = kube.list("mpijobs", ns)
    first = min(parse_time(j["metadata"]["creationTimestamp"]) for j in listed)
    children = [o for r in ("pods", "jobs", "services", "configmaps", "secrets") for o in kube.list(r, ns)]
    created = [parse_time(o["metadata"]["creationTimestamp"]) for o in children if owned_by_mpijob(o)]
    result.children_s = max(created) - first
    succeeded = {j["metadata"]["name"]: condition(j, "Succeeded") for j in listed}
    result.succeeded = sum(c is not None for c in succeeded.values())
    stamps = [parse_time(c["lastTransitionTime"]) for c in succeeded.values() if c]
    result.finish_server_s = max(stamps, default=t_done) - t_done
    lags = []
    for job in kube.list("jobs", ns):
        complete = condition(job, "Complete")
        owner = next((r["name"] for r in job["metadata"].get("ownerReferences") or []), "")
        done = succeeded.get(owner)
        if complete and done:
            lags.append(parse_time(done["lastTransitionTime"]) - parse_time(complete["lastTransitionTime"]))
    if lags:
        result.lag_median_s, result.lag_max_s = statistics.median(lags), max(lags)


def agent_of(entry: dict[str, Any]) -> str:
    if (entry.get("user") or {}).get("username") == HOOK_USER:
        return "hook"
    return str(entry.get("userAgent", "")).split("/", 1)[0]


def count_requests(audit: Path, start: float, end: float, agents: tuple[str, ...]) -> dict[str, Counter[str]]:
    """Requests each agent sent between start and end, by "VERB resource[/sub]" (watches not logged)."""
    counts: dict[str, Counter[str]] = {agent: Counter() for agent in agents}
    with audit.open() as lines:
        for line in lines:
            entry = json.loads(line)
            agent = agent_of(entry)
            if agent not in counts or entry.get("stage") != "ResponseComplete":
                continue
            if not start <= parse_time(entry["requestReceivedTimestamp"]) <= end:
                continue
            ref = entry.get("objectRef") or {}
            resource = ref.get("resource", entry.get("requestURI", "?"))
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            verb = entry["verb"]
            if verb == "get" and not ref.get("name"):
                verb = "list"
            counts[agent][f"{verb} {resource}"] += 1
    return counts


# ---- the table ---------------------------------------------------------------------------------------------


def ratio(ours: float, go: float) -> str:
    return f"{ours / go:.2f}x" if go else "-"


def table(go: Result, ours: Result, budget: Budget) -> str:
    def total(r: Result, finishing: bool = False) -> int:
        return sum(sum(c.values()) for c in (r.finish_requests if finishing else r.requests).values())

    def gets(r: Result) -> int:
        return sum(c["get mpijobs"] for c in r.requests.values())

    ours_cpu, ours_rss = sum(ours.cpu.values()), sum(ours.rss.values())
    split_cpu = " + ".join(f"{k} {v:.2f}" for k, v in sorted(ours.cpu.items()))
    split_rss = " + ".join(f"{k} {v:.0f}" for k, v in sorted(ours.rss.items()))
    rows = [
        ("apply → every child exists (server)", f"{go.children_s:.0f} s", f"{ours.children_s:.0f} s",
         ratio(ours.children_s, go.children_s)),
        ("apply → every child exists (harness)", f"{go.children_wall_s:.1f} s",
         f"{ours.children_wall_s:.1f} s",
         ratio(ours.children_wall_s, go.children_wall_s)),
        ("every child exists → every job reports its workers active", f"{go.active_s:.1f} s",
         f"{ours.active_s:.1f} s", ratio(ours.active_s, go.active_s)),
        ("launcher Pods done → every MPIJob Succeeded", f"{go.finish_s:.1f} s", f"{ours.finish_s:.1f} s",
         ratio(ours.finish_s, go.finish_s)),
        ("per job, launcher Job Complete → Succeeded (median / max)",
         f"{go.lag_median_s:.0f} / {go.lag_max_s:.0f} s",
         f"{ours.lag_median_s:.0f} / {ours.lag_max_s:.0f} s", ""),
        ("MPIJobs Succeeded", f"{go.succeeded}/{go.jobs}", f"{ours.succeeded}/{ours.jobs}", ""),
        ("API requests", str(total(go)), str(total(ours)), ratio(total(ours), total(go))),
        ("of which GET mpijobs", str(gets(go)), str(gets(ours)), ""),
        ("requests while finishing (launchers done → Succeeded)", str(total(go, True)),
         str(total(ours, True)), ratio(total(ours, True), total(go, True))),
        ("controller CPU", f"{sum(go.cpu.values()):.2f} s", f"{ours_cpu:.2f} s ({split_cpu})",
         ratio(ours_cpu, sum(go.cpu.values()))),
        ("kube-apiserver CPU", f"{go.apiserver_cpu:.1f} s", f"{ours.apiserver_cpu:.1f} s",
         ratio(ours.apiserver_cpu, go.apiserver_cpu)),
        ("peak RSS", f"{sum(go.rss.values()):.0f} MiB", f"{ours_rss:.0f} MiB ({split_rss})",
         ratio(ours_rss, sum(go.rss.values()))),
    ]  # fmt: skip
    head = f"{go.jobs}x{go.workers}, {budget.label()}"
    lines = [f"| {head} | Go v0.8.2 | ours | ours/Go |", "|---|---:|---:|---:|"]
    if go.skipped:
        rows = [(a, "-", c, "") for a, _, c, _ in rows]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    if not (go.caught_up and ours.caught_up):
        lines.append("(a side had not reported every worker active when the launchers were finished)")
    return "\n".join(lines)


def request_table(go: Result, ours: Result, finishing: bool = False) -> str:
    def merged(r: Result) -> Counter[str]:
        out: Counter[str] = Counter()
        for agent, counts in (r.finish_requests if finishing else r.requests).items():
            for key, n in counts.items():
                out[f"{key} ({agent})" if r.side == "ours" else key] += n
        return out

    what = "requests while finishing" if finishing else "requests"
    lines = [f"| {what} by verb and resource | Go | ours (by agent) |", "|---|---|---|"]
    left, right = merged(go).most_common(), merged(ours).most_common()
    for i in range(max(len(left), len(right))):
        a = f"{left[i][0]}: {left[i][1]}" if i < len(left) else ""
        b = f"{right[i][0]}: {right[i][1]}" if i < len(right) else ""
        lines.append(f"| {i + 1} | {a} | {b} |")
    return "\n".join(lines)


# ---- main --------------------------------------------------------------------------------------------------


def parse_case(text: str) -> tuple[int, int]:
    if text in CASES:
        return CASES[text]
    jobs, _, workers = text.partition("x")
    return int(jobs), int(workers)


@contextlib.contextmanager
def bench_plane(workdir: Path) -> Iterator[tuple[ControlPlane, Kube, Path]]:
    go_dir = go_operator_dir()
    if go_dir is None:
        raise SystemExit(f"scale_bench: no {GO_TARBALL}")
    with audited_plane(workdir) as (plane, kube):
        yield plane, kube, go_dir


@contextlib.contextmanager
def audited_plane(workdir: Path) -> Iterator[tuple[ControlPlane, Kube]]:
    """The control plane with its audit log and Metacontroller's CRDs, no Go side (bench/scale_faults.py)."""
    bin_dir, reason = find_binaries()
    if bin_dir is None:
        raise SystemExit(f"scale_bench: {reason}")
    workdir.mkdir(parents=True, exist_ok=True)
    policy = workdir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit = [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={workdir / 'plane' / 'audit.log'}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
    ]
    plane = start_control_plane(bin_dir, workdir / "plane", Options(apiserver_args=tuple(audit)))
    try:
        kube = client(plane)
        crds = metacontroller_crds(bin_dir)
        assert crds is not None, "metacontroller-crds-v1.yaml not found"
        kube.kubectl("apply", "--server-side", "-f", str(crds))
        wait_for(http_ok(f"{plane.server}/readyz", plane.ssl_context()), 30, "the apiserver")
        yield plane, kube
    finally:
        plane.stop()


def run_case(
    plane: ControlPlane, kube: Kube, go_dir: Path, jobs: int, workers: int, budget: Budget, timeout: float,
    log: Callable[[str], None], skip_go: bool = False,
) -> tuple[Result, Result]:  # fmt: skip
    log(f"case {jobs}x{workers}, {budget.label()}")
    if skip_go:
        go = Result("go", jobs, workers, skipped=True)
    else:
        go = run_side(GoSide(plane, kube, budget, go_dir), jobs, workers, timeout, log)
    ours = run_side(HookSide(plane, kube, budget), jobs, workers, timeout, log)
    return go, ours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", help=f"NxM, e.g. {', '.join(CASES)} (default 20x32)")
    parser.add_argument("--qps", type=int, help="both sides' client QPS (default: each one's shipped 5)")
    parser.add_argument("--burst", type=int, help="both sides' client burst (default: shipped 10)")
    parser.add_argument("--mc-workers", type=int, help="Metacontroller --workers (default 5)")
    parser.add_argument("--apply-strategy", help="Metacontroller --apply-strategy (and the hook's setting)")
    parser.add_argument(
        "--metacontroller-defaults",
        action="store_true",
        help="ours with Metacontroller's defaults (5 QPS / burst 10, dynamic-apply), not deploy/'s flags",
    )
    parser.add_argument("--skip-go", action="store_true", help="only our side (levers of Metacontroller's)")
    parser.add_argument("--timeout", type=float, default=3600, help="per phase, seconds")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp") / f"scale-bench-{os.getpid()}")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    budget = Budget(args.qps, args.burst, args.mc_workers, args.apply_strategy, args.metacontroller_defaults)
    cases = [parse_case(c) for c in args.case or ["20x32"]]

    def log(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)

    results = []
    with bench_plane(args.workdir) as (plane, kube, go_dir):
        for jobs, workers in cases:
            go, ours = run_case(
                plane, kube, go_dir, jobs, workers, budget, args.timeout, log, skip_go=args.skip_go
            )
            results.append((go, ours))
            print(table(go, ours, budget), flush=True)
            print(flush=True)
            print(request_table(go, ours), flush=True)
            print(flush=True)
            print(request_table(go, ours, finishing=True), flush=True)
            print(flush=True)
    if args.json:
        args.json.write_text(
            json.dumps([[r.__dict__ for r in pair] for pair in results], default=str, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
