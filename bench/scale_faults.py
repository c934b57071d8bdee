"""Load and faults: a case of bench/scale_bench.py (ours only: Metacontroller + the hook) while the hook is
restarted, Metacontroller is restarted and the hook answers 503 for a while; then checks that every MPIJob
still succeeds, that no child was deleted and that nothing keeps writing once every job is done.

The control plane, the harness's kubelet, the MPIJobs (examples/pi with M workers, cleanPodPolicy None) and
our side's processes are scale_bench's. Two differences: Metacontroller's hook URLs point at a fault proxy
on loopback (this process) for the whole run, which forwards to the hook or answers 503; and the hook runs
this checkout's app/ (PYTHONPATH), whichever checkout the venv's editable install points at.

Faults, one after the other, each once the harness's Pod watch has seen a given share of the worker Pods
(``--fault-at``, default 25 %, 50 %, 75 %):

  1. the hook is killed with SIGKILL (no graceful shutdown) and started again on the same port;
  2. Metacontroller is stopped (SIGTERM) and started again with the same flags;
  3. the proxy answers every hook request with 503 for ``--unavailable`` seconds (default 30).

The launcher Pods are marked Succeeded once every fault is over, every child exists and every job reports
its workers active. Checks (exit code 1 if one fails): every MPIJob Succeeded; no DELETE of a Pod, Job,
Service, ConfigMap or Secret by Metacontroller or the hook in the audit log, no DELETED event or new UID for
a Pod in the harness's watch, no other child replaced; and, after every job is Succeeded and ``--settle``
seconds have passed, no write by Metacontroller or the hook during a ``--quiet`` window (GETs and the
hook's /sync requests in that window are reported).

    .venv/bin/python bench/scale_faults.py [--case 50x64] [--qps 50 --burst 100]
        [--apply-strategy server-side-apply] [--unavailable 30] [--quiet 30]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_bench import (
    CASES,
    ROOT,
    Budget,
    HookSide,
    Kubelet,
    agent_of,
    audited_plane,
    condition,
    count_requests,
    mpijob,
    owned_by_mpijob,
    parse_case,
    parse_time,
)

from tests.e2e.conftest import install_overlay
from tests.e2e.controlplane import ControlPlane
from tests.e2e.kube import Kube

CHILDREN = ("pods", "jobs", "services", "configmaps", "secrets")
NOT_PODS = CHILDREN[1:]
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
READS = {"get", "list"}
# Metacontroller gives up on a hook call after the CompositeController's 30 s; the proxy waits longer.
UPSTREAM_TIMEOUT = 35.0
FAULTS = (
    "hook killed (SIGKILL), started again on the same port",
    "Metacontroller stopped (SIGTERM), started again with the same flags",
    "hook answers 503 (fault proxy)",
)
# Why Metacontroller failed a sync, by what its log line says; the last: syncs cut short when it was stopped.
MC_ERRORS = (
    ("503", ("status code: 503",)),
    ("hook unreachable", ("EOF", "connection reset", "connection refused")),
    ("stopped", ("context canceled",)),
)
CAUSES = (*(c for c, _ in MC_ERRORS), "other")
# start_metacontroller sets these itself (new loopback ports on every start).
MC_OWN_FLAGS = ("--kubeconfig=", "--metrics-address=", "--health-probe-bind-address=")


# ---- the fault proxy ---------------------------------------------------------------------------------------


class FaultProxy:
    """Loopback HTTP proxy between Metacontroller and the hook: forwards each request, or answers 503 with a
    short body while ``unavailable`` is set. When the hook cannot be reached (killed), the caller's connection
    is closed without an answer, as the dead hook's own would be."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.unavailable = threading.Event()
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        owner = self

        class Handler(_Forwarder):
            proxy = owner

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.counts)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Forwarder(BaseHTTPRequestHandler):
    """One caller connection (kept alive, as Metacontroller's Go client keeps it) and one to the hook."""

    protocol_version = "HTTP/1.1"
    proxy: FaultProxy
    upstream: http.client.HTTPConnection | None = None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self.path.split("?", 1)[0]
        if self.proxy.unavailable.is_set():
            self.proxy.count(f"{route} 503 (fault)")
            self._answer(503, "text/plain", b"unavailable\n")
            return
        try:
            status, content_type, payload = self._forward(body)
        except (OSError, http.client.HTTPException):
            self.proxy.count(f"{route} cut (hook unreachable)")
            self._drop_upstream()
            self.close_connection = True
            return
        self.proxy.count(f"{route} {status}")
        self._answer(status, content_type, payload)

    do_GET = do_POST

    def _forward(self, body: bytes) -> tuple[int, str, bytes]:
        """Send to the hook; once more on a fresh connection if a kept one broke (the hook was restarted)."""
        for attempt in (1, 2):
            reused = self.upstream is not None
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection(*self.proxy.upstream, timeout=UPSTREAM_TIMEOUT)
            headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
            if self.headers.get("Authorization"):  # Metacontroller's caller token, passed through
                headers["Authorization"] = self.headers["Authorization"]
            try:
                self.upstream.request(self.command, self.path, body=body, headers=headers)
                response = self.upstream.getresponse()
                payload = response.read()
            except (ConnectionError, http.client.HTTPException):
                self._drop_upstream()
                if reused and attempt == 1:
                    continue
                raise
            if response.will_close:
                self._drop_upstream()
            return response.status, response.getheader("Content-Type") or "application/json", payload
        raise AssertionError("unreachable")

    def _answer(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _drop_upstream(self) -> None:
        if self.upstream is not None:
            self.upstream.close()
            self.upstream = None

    def finish(self) -> None:
        super().finish()
        self._drop_upstream()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the proxy's counts are its log."""


# ---- our side, behind the proxy ----------------------------------------------------------------------------


class FaultSide(HookSide):
    """scale_bench's HookSide with the fault proxy in front of the hook, and the faults themselves."""

    proxy: FaultProxy

    def prepare(self, workers: int) -> None:
        super().prepare(workers)
        # The venv's `mpijob` imports app/ from wherever its editable install points: use this checkout's.
        path = os.environ.get("PYTHONPATH")
        self.hook.settings["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([path] if path else [])])
        self.proxy = FaultProxy((self.hook.host, self.hook.port))
        install_overlay(self.kube, self.plane.workdir, self.proxy.url)
        controller = self.kube.get("compositecontrollers", None, "mpi-operator-hook") or {}
        hooks = controller["spec"]["hooks"]
        urls = {hooks[h]["webhook"]["url"] for h in ("sync", "customize")}
        assert urls == {f"{self.proxy.url}/sync", f"{self.proxy.url}/customize"}, urls

    def restart_hook(self) -> None:
        self.hook.kill()
        self.hook.start()
        assert self.hook.started is not None
        self.processes["hook"] = self.hook.started

    def restart_metacontroller(self) -> None:
        running = self.plane.metacontroller
        assert running is not None
        argv = running.process.args  # the list start_metacontroller gave Popen
        assert isinstance(argv, list)
        flags = [str(a) for a in argv[1:] if not str(a).startswith(MC_OWN_FLAGS)]
        self.plane.stop_metacontroller()
        self.plane.start_metacontroller(flags)
        assert self.plane.metacontroller is not None
        self.processes["metacontroller"] = self.plane.metacontroller

    def hook_syncs(self) -> int:
        """The hook process's /sync requests so far, from its /metrics (all outcomes)."""
        text = httpx.get(f"{self.hook.url}/metrics", timeout=10).text
        total = 0.0
        for line in text.splitlines():
            if line.startswith("mpi_operator_hook_requests_total{") and 'hook="sync"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return int(total)

    def stop(self) -> None:
        super().stop()
        self.proxy.close()


class WatchingKubelet(Kubelet):
    """The harness's kubelet, also remembering each Pod's first UID, every DELETED event, every Pod seen
    with a deletionTimestamp and every name that came back with a new UID."""

    def __init__(self, plane: ControlPlane, ns: str) -> None:
        super().__init__(plane, ns)
        self.uids: dict[str, str] = {}
        self.deleted: list[str] = []
        self.terminating: set[str] = set()
        self.replaced: list[str] = []
        self.books = threading.Lock()

    def _seen(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        name, uid = meta["name"], meta.get("uid", "")
        with self.books:
            first = self.uids.setdefault(name, uid)
            if first != uid:
                self.replaced.append(name)
                self.uids[name] = uid
            if kind == "DELETED":
                self.deleted.append(name)
            if meta.get("deletionTimestamp"):
                self.terminating.add(name)
        super()._seen(kind, pod)

    def workers(self) -> int:
        return sum(p.role == "worker" for p in self.snapshot())


# ---- one run -----------------------------------------------------------------------------------------------


@dataclass
class Plan:
    jobs: int
    workers: int
    budget: Budget
    fault_at: tuple[float, float, float] = (0.25, 0.5, 0.75)
    unavailable_s: float = 30.0
    settle_s: float = 5.0
    quiet_s: float = 30.0
    timeout_s: float = 1800.0


@dataclass
class Injected:
    fault: str
    share: float
    at_s: float = 0.0  # after the MPIJobs were applied
    workers_seen: int = 0
    took_s: float = 0.0
    effect: str = ""
    error: str = ""


@dataclass
class Check:
    what: str
    value: str
    ok: bool | None  # None: reported, not checked


@dataclass
class Outcome:
    plan: Plan
    namespace: str = ""
    injected: list[Injected] = field(default_factory=list)
    children_wall_s: float | None = None
    children_server_s: float | None = None
    finish_s: float | None = None
    lags: list[float] = field(default_factory=list)  # per job: launcher Job Complete -> MPIJob Succeeded
    uids: dict[str, str] = field(default_factory=dict)  # of the Jobs, Services, ... once every child exists
    checks: list[Check] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # phases that timed out, faults that failed
    proxy: Counter[str] = field(default_factory=Counter)
    mc_errors: Counter[str] = field(default_factory=Counter)

    @property
    def passed(self) -> bool:
        return not self.problems and all(c.ok is not False for c in self.checks)


def wait(probe: Callable[[], bool], timeout: float, every: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def owned(kube: Kube, ns: str, resource: str) -> list[dict[str, Any]]:
    return [o for o in kube.list(resource, ns) if owned_by_mpijob(o)]


def child_uids(kube: Kube, ns: str) -> dict[str, str]:
    """ "resource/name" -> UID of every child but the Pods (the Pod watch keeps theirs)."""
    return {
        f"{r}/{o['metadata']['name']}": o["metadata"]["uid"] for r in NOT_PODS for o in owned(kube, ns, r)
    }


def inject(side: FaultSide, kubelet: WatchingKubelet, plan: Plan, t_apply: float, out: Outcome) -> None:
    """The three faults in order, each once the Pod watch has seen its share of the worker Pods."""
    total = plan.jobs * plan.workers
    actions: list[Callable[[], str]] = [
        lambda: _timed(side.restart_hook, side.proxy, "cut (hook unreachable)"),
        lambda: _timed(side.restart_metacontroller, side.proxy, ""),
        lambda: _timed(lambda: _unavailable(side.proxy, plan.unavailable_s), side.proxy, "503 (fault)"),
    ]

    def seen(share: float) -> Callable[[], bool]:
        return lambda: kubelet.workers() >= share * total

    for fault, share, action in zip(FAULTS, plan.fault_at, actions, strict=True):
        record = Injected(fault, share)
        out.injected.append(record)
        if not wait(seen(share), plan.timeout_s, every=0.2):
            record.error = f"never saw {share:.0%} of the workers"
            out.problems.append(f"{fault}: {record.error}")
            continue
        began = time.time()
        record.at_s, record.workers_seen = began - t_apply, kubelet.workers()
        try:
            record.effect = action()
        except Exception as err:  # reported as a failed run; the other faults still go
            record.error = repr(err)
            out.problems.append(f"{fault}: {err!r}")
        record.took_s = time.time() - began


def watch_children(
    kube: Kube, ns: str, kubelet: WatchingKubelet, t_apply: float, out: Outcome, log: Callable[[str], None]
) -> None:
    """Wait for every child; then note the time and the UIDs of the Jobs, Services, ConfigMaps, Secrets."""
    plan = out.plan

    def all_exist() -> bool:
        if kubelet.workers() < plan.jobs * plan.workers:
            return False
        return all(len(owned(kube, ns, r)) >= plan.jobs for r in NOT_PODS)

    if wait(all_exist, plan.timeout_s):
        out.children_wall_s = time.time() - t_apply
        log(f"every child exists after {out.children_wall_s:.1f} s")
    else:
        out.problems.append(f"not every child existed after {plan.timeout_s:.0f} s")
    out.uids = child_uids(kube, ns)


def _timed(action: Callable[[], None], proxy: FaultProxy, counted: str) -> str:
    """Run ``action``; the hook requests the proxy answered with ``counted`` meanwhile."""
    before = proxy.snapshot()
    action()
    if not counted:
        return ""
    after = proxy.snapshot()
    n = sum(after[k] - before[k] for k in after if k.endswith(counted))
    return f"{n} hook requests {counted.split(' ', 1)[0]}"


def _unavailable(proxy: FaultProxy, seconds: float) -> None:
    proxy.unavailable.set()
    try:
        time.sleep(seconds)
    finally:
        proxy.unavailable.clear()


def run(plane: ControlPlane, kube: Kube, plan: Plan, log: Callable[[str], None]) -> Outcome:
    out = Outcome(plan)
    jobs, workers, timeout = plan.jobs, plan.workers, plan.timeout_s
    ns = out.namespace = f"faults-{jobs}x{workers}-{int(time.time())}"
    side = FaultSide(plane, kube, plan.budget)
    side.prepare(workers)
    kube.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    began = time.time()
    side.start()
    kubelet = WatchingKubelet(plane, ns)
    kubelet.start()
    total = jobs * workers
    schedule = ", ".join(
        f"{i + 1}. {f} at {s:.0%} of the workers ({int(s * total)}/{total})"
        for i, (f, s) in enumerate(zip(FAULTS, plan.fault_at, strict=True))
    )
    log(f"faults: {schedule}; 503 window {plan.unavailable_s:.0f} s")
    t_succeeded = t_quiet = t_end = 0.0
    syncs = (0, 0)
    try:
        names = [f"job-{i}" for i in range(jobs)]
        t_apply = time.time()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: kube.create("mpijobs", ns, mpijob(n, workers)), names))
        log(f"applied {jobs} MPIJobs of {workers} workers in {ns}")
        # The faults run on this thread: a child gets SIGTERM when the *thread* that started it ends
        # (PR_SET_PDEATHSIG, tests/e2e/processes.py), so the restarted hook and Metacontroller must not be
        # started from a short-lived one.
        children = threading.Thread(target=watch_children, args=(kube, ns, kubelet, t_apply, out, log))
        children.start()
        inject(side, kubelet, plan, t_apply, out)
        children.join()
        for record in out.injected:
            log(f"  {record.fault}: at {record.at_s:.1f} s, took {record.took_s:.1f} s {record.effect}")

        def ready() -> bool:
            pods = kubelet.snapshot()
            if sum(p.role == "worker" and p.phase == "Running" for p in pods) < total:
                return False
            if sum(p.role == "launcher" for p in pods) < jobs:
                return False
            listed = kube.list("mpijobs", ns)
            active = [
                ((j.get("status") or {}).get("replicaStatuses") or {}).get("Worker", {}) for j in listed
            ]
            return len(listed) == jobs and all(a.get("active") == workers for a in active)

        if not wait(ready, timeout):
            out.problems.append("not every job reported its workers active")
        t_done = time.time()
        log(f"{kubelet.finish_launchers()} launcher Pods marked Succeeded")

        def all_succeeded() -> bool:
            return sum(condition(j, "Succeeded") is not None for j in kube.list("mpijobs", ns)) >= jobs

        if wait(all_succeeded, timeout, every=0.2):
            t_succeeded = time.time()
            out.finish_s = t_succeeded - t_done
            log(f"every MPIJob Succeeded {out.finish_s:.1f} s after the launchers")
        else:
            t_succeeded = time.time()
            out.problems.append(f"not every MPIJob Succeeded {timeout:.0f} s after the launchers")
        time.sleep(plan.settle_s)
        t_quiet, first = time.time(), side.hook_syncs()
        log(f"quiet window: {plan.quiet_s:.0f} s")
        time.sleep(plan.quiet_s)
        t_end, last = time.time(), side.hook_syncs()
        syncs = (first, last)
        _final_state(kube, ns, kubelet, out)
    finally:
        kubelet.stop()
        side.stop()
    out.proxy = side.proxy.snapshot()
    time.sleep(1)  # the audit log's last entries
    _audit_checks(plane, ns, side, (began, t_succeeded, t_quiet, t_end), syncs, out)
    out.mc_errors = metacontroller_errors(plane.workdir / "metacontroller.log", ns)
    out.checks.append(
        Check(
            f"Metacontroller's failed syncs ({' / '.join(CAUSES)})",
            " / ".join(str(out.mc_errors[c]) for c in CAUSES),
            None,
        )
    )
    return out


def _final_state(kube: Kube, ns: str, kubelet: WatchingKubelet, out: Outcome) -> None:
    plan, uids = out.plan, out.uids
    listed = kube.list("mpijobs", ns)
    succeeded = sum(condition(j, "Succeeded") is not None for j in listed)
    out.checks.append(Check("MPIJobs Succeeded", f"{succeeded}/{plan.jobs}", succeeded == plan.jobs))
    policies = Counter(((j["spec"].get("runPolicy") or {}).get("cleanPodPolicy")) for j in listed)
    out.checks.append(
        Check(
            "cleanPodPolicy None on every MPIJob (nothing is to be deleted)",
            f"{policies['None']}/{plan.jobs}",
            policies["None"] == plan.jobs == len(listed),
        )
    )
    done = {j["metadata"]["name"]: condition(j, "Succeeded") for j in listed}
    for job in owned(kube, ns, "jobs"):
        complete = condition(job, "Complete")
        succeeded_at = done.get(job["metadata"]["ownerReferences"][0]["name"])
        if complete and succeeded_at:
            lag = parse_time(succeeded_at["lastTransitionTime"]) - parse_time(complete["lastTransitionTime"])
            out.lags.append(lag)
    first = min((parse_time(j["metadata"]["creationTimestamp"]) for j in listed), default=0.0)
    stamps = [parse_time(o["metadata"]["creationTimestamp"]) for r in CHILDREN for o in owned(kube, ns, r)]
    out.children_server_s = max(stamps, default=first) - first
    with kubelet.books:
        deleted, terminating, replaced = len(kubelet.deleted), len(kubelet.terminating), len(kubelet.replaced)
    out.checks.append(
        Check(
            "Pod watch: DELETED events / Pods with a deletionTimestamp / names with a new UID",
            f"{deleted} / {terminating} / {replaced}",
            deleted == terminating == replaced == 0,
        )
    )
    now = child_uids(kube, ns)
    changed = sorted(k for k, uid in uids.items() if now.get(k) != uid)
    out.checks.append(
        Check(
            "Jobs, Services, ConfigMaps, Secrets replaced or gone since every child existed",
            str(len(changed)) + (f" ({', '.join(changed[:5])})" if changed else ""),
            not changed and len(uids) == 4 * plan.jobs,
        )
    )
    pods = kubelet.snapshot()
    counts = (
        sum(p.role == "worker" for p in pods),
        sum(p.role == "launcher" for p in pods),
        *(len(owned(kube, ns, r)) for r in NOT_PODS),
    )
    expected = (plan.jobs * plan.workers, *(plan.jobs,) * 5)
    out.checks.append(
        Check(
            "children at the end: workers / launcher Pods / Jobs / Services / ConfigMaps / Secrets",
            " / ".join(map(str, counts)),
            counts == expected,
        )
    )


def tally(
    counts: dict[str, Counter[str]], verbs: set[str], resources: tuple[str, ...] = ()
) -> tuple[int, str]:
    """How many of count_requests' requests have one of ``verbs`` (and ``resources``), and which."""
    found: Counter[str] = Counter()
    for agent, by_key in counts.items():
        for key, n in by_key.items():
            verb, _, resource = key.partition(" ")
            if verb in verbs and (not resources or resource in resources):
                found[f"{key} ({agent})"] += n
    detail = ", ".join(f"{k}: {n}" for k, n in found.most_common())
    return sum(found.values()), f"{sum(found.values())} ({detail})" if found else "0"


def _audit_checks(
    plane: ControlPlane,
    ns: str,
    side: FaultSide,
    times: tuple[float, float, float, float],
    syncs: tuple[int, int],
    out: Outcome,
) -> None:
    began, succeeded, quiet, end = times
    audit, agents, plan = plane.workdir / "audit.log", side.agents, out.plan
    run = count_requests(audit, began, end, agents)
    deletes, deleted = tally(run, {"delete", "deletecollection"}, CHILDREN)
    anyone = namespace_deletes(audit, ns, began, end)
    settle = count_requests(audit, succeeded, quiet, agents)
    quiet_counts = count_requests(audit, quiet, end, agents)
    writes, written = tally(quiet_counts, WRITES)
    sent = " / ".join(f"{a} {sum(run[a].values())}" for a in agents)
    out.checks += [
        Check("API requests during the run (watches not counted)", sent, None),
        Check("DELETE of Pods/Jobs/Services/ConfigMaps/Secrets by Metacontroller or the hook", deleted,
              deletes == 0),
        Check("DELETE of anything in the namespace by anyone",
              str(sum(anyone.values())) + (f" ({dict(anyone)})" if anyone else ""), None),
        Check(f"writes by Metacontroller or the hook from every MPIJob Succeeded to the quiet window "
              f"({plan.settle_s:.0f} s)", tally(settle, WRITES)[1], None),
        Check(f"writes by Metacontroller or the hook in the {plan.quiet_s:.0f} s quiet window", written,
              writes == 0),
        Check("GETs and lists by Metacontroller or the hook in the quiet window",
              tally(quiet_counts, READS)[1], None),
        Check("hook /sync requests in the quiet window (its /metrics)", str(syncs[1] - syncs[0]), None),
    ]  # fmt: skip


def namespace_deletes(audit: Path, ns: str, start: float, end: float) -> Counter[str]:
    """DELETE requests for objects in ``ns`` between start and end, by anyone: "agent resource" -> count."""
    found: Counter[str] = Counter()
    with audit.open() as lines:
        for line in lines:
            if '"delete' not in line:
                continue
            entry = json.loads(line)
            ref = entry.get("objectRef") or {}
            if entry.get("stage") != "ResponseComplete" or ref.get("namespace") != ns:
                continue
            when = parse_time(entry["requestReceivedTimestamp"])
            if entry["verb"] in ("delete", "deletecollection") and start <= when <= end:
                found[f"{agent_of(entry)} {ref.get('resource', '?')}"] += 1
    return found


def metacontroller_errors(path: Path, ns: str) -> Counter[str]:
    """Metacontroller's logged failed syncs of our jobs, by MC_ERRORS' causes (else "other")."""
    found: Counter[str] = Counter()
    prefix = f"failed to sync MPIJob '{ns}/"
    for line in path.read_text(errors="replace").splitlines():
        if prefix in line:
            found[next((c for c, marks in MC_ERRORS if any(m in line for m in marks)), "other")] += 1
    return found


# ---- the table ---------------------------------------------------------------------------------------------


def _seconds(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f} s"


def table(out: Outcome) -> str:
    plan = out.plan
    head = f"{plan.jobs}x{plan.workers}, {plan.budget.label()}"
    lines = [
        f"| {head}: fault | at (after apply) | workers seen | took | meanwhile |",
        "|---|---:|---:|---:|---|",
    ]
    for r in out.injected:
        seen = f"{r.workers_seen}/{plan.jobs * plan.workers}"
        lines.append(
            f"| {r.fault} ({r.share:.0%}) | {r.at_s:.1f} s | {seen} | {r.took_s:.1f} s | "
            f"{r.error or r.effect or '-'} |"
        )
    lines += ["", f"| {head}: check | result | |", "|---|---:|---|"]
    lags = f"{statistics.median(out.lags):.0f} / {max(out.lags):.0f} s" if out.lags else "-"
    timings = [
        Check("apply → every child exists (harness / server)",
              f"{_seconds(out.children_wall_s)} / {_seconds(out.children_server_s, 0)}", None),
        Check("launcher Pods done → every MPIJob Succeeded", _seconds(out.finish_s), None),
        Check("per job, launcher Job Complete → Succeeded (server, 1 s steps; median / max)", lags, None),
    ]  # fmt: skip
    verdict = {True: "ok", False: "FAIL", None: ""}
    lines += [f"| {c.what} | {c.value} | {verdict[c.ok]} |" for c in [*timings, *out.checks]]
    proxied = ", ".join(f"{k}: {n}" for k, n in sorted(out.proxy.items()))
    lines.append(f"| hook requests through the proxy | {proxied} | |")
    lines += [f"| problem | {p} | FAIL |" for p in out.problems]
    return "\n".join(lines)


# ---- main --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="50x64", help=f"NxM, e.g. {', '.join(CASES)} (default 50x64)")
    parser.add_argument("--qps", type=int, default=50, help="Metacontroller --client-go-qps (default 50)")
    parser.add_argument(
        "--burst", type=int, default=100, help="Metacontroller --client-go-burst (default 100)"
    )
    parser.add_argument(
        "--apply-strategy", default="server-side-apply", help="Metacontroller's (default server-side-apply)"
    )
    parser.add_argument(
        "--fault-at", default="0.25,0.5,0.75", help="share of the worker Pods seen before each fault"
    )
    parser.add_argument("--unavailable", type=float, default=30, help="seconds of 503 (default 30)")
    parser.add_argument("--settle", type=float, default=5, help="seconds after every Succeeded (default 5)")
    parser.add_argument("--quiet", type=float, default=30, help="quiet window, seconds (default 30)")
    parser.add_argument("--timeout", type=float, default=1800, help="per phase, seconds")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp") / f"scale-faults-{os.getpid()}")
    args = parser.parse_args(argv)
    jobs, workers = parse_case(args.case)
    shares = tuple(float(s) for s in args.fault_at.split(","))
    if len(shares) != 3:
        parser.error("--fault-at takes three shares, e.g. 0.25,0.5,0.75")
    budget = Budget(qps=args.qps, burst=args.burst, apply_strategy=args.apply_strategy)
    plan = Plan(
        jobs, workers, budget, (shares[0], shares[1], shares[2]), args.unavailable, args.settle, args.quiet,
        args.timeout,
    )  # fmt: skip

    def log(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)

    with audited_plane(args.workdir) as (plane, kube):
        out = run(plane, kube, plan, log)
    print(table(out), flush=True)
    return 0 if out.passed else 1


if __name__ == "__main__":
    sys.exit(main())
