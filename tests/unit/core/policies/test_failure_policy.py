"""The failure policy (``spec.failurePolicy``), driven through the fake Metacontroller sync by sync.

What it must guarantee whatever happens: never more than maxRestarts counted restarts, never two attempts'
Pods side by side, a failure of an old attempt never restarts again, and a job always ends Succeeded or
Failed. The user guide's "When a worker dies" describes the same cases.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.api.defaults import with_defaults
from app.api.types import MPIJob
from app.api.validation import validate
from app.core.sync import Outcome, sync
from app.kube.keys import SeededKeys
from app.kube.request import RequestError, decode_request
from app.server.metrics import Metrics
from app.settings import Settings
from tests.support.builders import mpijob
from tests.support.metacontroller import SEED, START, FakeMetacontroller

KEYS = SeededKeys(SEED)
CONFIG = Settings().sync_config

ATTEMPT = "mpi-operator-hook/restart-attempt"
LAUNCHER = "Job.batch/v1/pi-launcher"


def job(policy: dict[str, Any] | None, workers: int = 2, **run_policy: Any) -> dict[str, Any]:
    builder = mpijob("pi").workers(workers).run_policy(backoffLimit=0, **run_policy)
    if policy is not None:
        builder.set("spec.failurePolicy", policy)
    return builder.build()


def started(policy: dict[str, Any] | None, *, linger: bool = True, workers: int = 2) -> FakeMetacontroller:
    """Applied, every worker and the launcher Pod running: Running=True."""
    mc = FakeMetacontroller()
    mc.pods_linger = linger
    mc.apply_mpijob(job(policy, workers))
    mc.sync_until_steady()
    run_attempt(mc)
    return mc


def run_attempt(mc: FakeMetacontroller) -> None:
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    mc.sync_until_steady()
    assert condition(mc, "Running")[:2] == ("True", "MPIJobRunning"), mc.conditions()


def condition(mc: FakeMetacontroller, kind: str) -> tuple[str, str, str]:
    found = next((c for c in mc.status.get("conditions", []) if c["type"] == kind), None)
    return (found["status"], found.get("reason", ""), found.get("message", "")) if found else ("", "", "")


def attempts(mc: FakeMetacontroller) -> set[str]:
    """The attempts whose launcher Job, launcher Pods or workers exist now."""
    labelled = [mc.get("Pod", name) for name in mc.names("Pod")] + [mc.get("Job", "pi-launcher")]
    return {(o["metadata"].get("labels") or {}).get(ATTEMPT, "0") for o in labelled if o is not None}


def env(obj: dict[str, Any]) -> dict[str, str]:
    spec = obj["spec"]["template"]["spec"] if obj["kind"] == "Job" else obj["spec"]
    values = [
        {e["name"]: e.get("value", "") for e in c.get("env", [])}.get("MPIJOB_RESTART_ATTEMPT", "")
        for c in spec["containers"]
    ]
    assert len(set(values)) == 1, values
    return {"MPIJOB_RESTART_ATTEMPT": values[0]}


def test_without_a_policy_nothing_changes() -> None:
    """A dead worker leaves the job as upstream does: Running until the launcher gives up."""
    mc = started(None)
    assert "restartCount" not in mc.status and attempts(mc) == {"0"}
    assert ATTEMPT not in mc.get("Pod", "pi-worker-0")["metadata"]["labels"]
    assert env(mc.get("Pod", "pi-worker-0")) == {"MPIJOB_RESTART_ATTEMPT": ""}
    mc.container_exits("pi-worker-1", 137, "OOMKilled")
    mc.sync_until_steady()
    assert condition(mc, "Restarting") == ("", "", "")
    assert "restartAttempt" not in mc.status


def test_a_dead_worker_restarts_the_whole_gang_once_the_old_one_is_gone() -> None:
    mc = started({"maxRestarts": 2})
    assert mc.status["restartAttempt"] == 0 and mc.status["restartCount"] == 0
    assert (
        env(mc.get("Job", "pi-launcher"))
        == env(mc.get("Pod", "pi-worker-0"))
        == {"MPIJOB_RESTART_ATTEMPT": "0"}
    )

    mc.advance(5)
    mc.container_exits("pi-worker-1", 137, "OOMKilled")
    writes = mc.sync()
    assert writes.deleted == [] and writes.created == [] and writes.status == 1  # first the status
    assert mc.last_response["resyncAfterSeconds"] == 1  # ignoreStatusChanges: ask for the next sync
    status, reason, message = condition(mc, "Restarting")
    assert (status, reason) == ("True", "WorkerOOMKilled")
    assert message == (
        "MPIJob default/pi restarts as attempt 1 (no rule matched; restart 1 of 2): worker pi-worker-1:"
        " container worker exited with code 137 (OOMKilled)"
    )
    writes = mc.sync()  # the stored status says attempt 1: attempt 0 goes
    assert sorted(writes.deleted) == [LAUNCHER, "Pod.v1/pi-worker-0", "Pod.v1/pi-worker-1"]
    assert writes.created == []
    assert condition(mc, "Running") == ("", "", "")  # Restarting replaces it, as upstream's filter
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (1, 1)
    assert mc.conditions()["Restarting"] == ("True", "WorkerOOMKilled")

    # The old Pods are still terminating: nothing of attempt 1 is created, and they cause nothing more.
    mc.container_exits("pi-worker-0", 1, "Error")
    assert mc.sync_until_steady() <= 2
    assert attempts(mc) == {"0"} and mc.status["restartCount"] == 1

    mc.finish_deletions()
    writes = mc.sync()
    assert sorted(writes.created) == [LAUNCHER, "Pod.v1/pi-worker-0", "Pod.v1/pi-worker-1"]
    assert attempts(mc) == {"1"}
    assert (
        env(mc.get("Pod", "pi-worker-1"))
        == env(mc.get("Job", "pi-launcher"))
        == {"MPIJOB_RESTART_ATTEMPT": "1"}
    )
    assert mc.get("Service", "pi") is not None and mc.get("Secret", "pi-ssh") is not None

    run_attempt(mc)
    assert condition(mc, "Restarting") == ("", "", "")  # Running replaces it
    mc.finish_launcher("Complete")
    mc.sync_until_steady()
    assert condition(mc, "Succeeded")[0] == "True"
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (1, 1)


def test_the_limit_fails_the_job_naming_the_pod() -> None:
    mc = started({"maxRestarts": 1}, linger=False)
    mc.container_exits("pi-worker-0", 1, "Error")
    mc.sync_until_steady()
    assert mc.status["restartCount"] == 1
    run_attempt(mc)
    mc.container_exits("pi-worker-1", 2, "Error")
    mc.sync_until_steady()
    status, reason, message = condition(mc, "Failed")
    assert (status, reason) == ("True", "MaxRestartsReached")
    assert message == (
        "MPIJob default/pi has failed (no rule matched, and 1 of maxRestarts 1 restarts are used): worker"
        " pi-worker-1: container worker exited with code 2 (Error)"
    )
    assert mc.status["restartCount"] == 1 and "completionTime" in mc.status
    assert condition(mc, "Running")[0] in ("", "False")


def test_an_exit_code_rule_fails_the_job_at_once() -> None:
    policy = {
        "maxRestarts": 3,
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}],
    }
    mc = started(policy, linger=False)
    mc.container_exits("pi-worker-1", 42, "Error")
    mc.sync_until_steady()
    status, reason, message = condition(mc, "Failed")
    assert (status, reason) == ("True", "FailJobRule")
    assert "rule 0 (FailJob) matched" in message and "code 42" in message
    assert mc.status["restartCount"] == 0


def test_an_eviction_restarts_without_being_counted() -> None:
    policy = {
        "maxRestarts": 0,
        "rules": [{"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]}],
    }
    mc = started(policy)
    mc.disrupt("pi-worker-0")  # still Running, being deleted
    mc.sync_until_steady()
    status, reason, message = condition(mc, "Restarting")
    assert (status, reason) == ("True", "WorkerDisrupted")
    assert "rule 0 (RestartJobAndIgnoreMaxRestarts) matched; not counted" in message
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (1, 0)
    mc.finish_deletions()
    mc.sync_until_steady()
    assert attempts(mc) == {"1"}
    run_attempt(mc)


def test_a_failed_launcher_restarts_with_its_reason() -> None:
    mc = started({"maxRestarts": 1, "rules": [{"action": "FailJob", "replicaTypes": ["Worker"]}]})
    mc.container_exits("pi-launcher-00000", 1, "Error", "mpirun: connection refused")
    mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    mc.sync_until_steady()
    status, reason, message = condition(mc, "Restarting")
    assert (status, reason) == ("True", "LauncherError")
    assert "launcher pi-launcher-00000: container launcher exited with code 1 (Error)" in message
    # The old launcher's Pod outlives its Job (background deletion): attempt 1 waits for it too.
    assert mc.get("Job", "pi-launcher") is None and mc.launcher_pods()
    mc.finish_deletions()
    mc.sync_until_steady()
    assert attempts(mc) == {"1"}


def test_a_suspended_job_does_not_restart() -> None:
    mc = started({"maxRestarts": 3})
    mc.edit_spec("runPolicy.suspend", True)
    mc.container_exits("pi-worker-1", 1, "Error")  # as the suspension deletes it
    mc.sync_until_steady()
    assert mc.status["restartCount"] == 0 and condition(mc, "Suspended")[0] == "True"
    mc.finish_deletions()
    mc.edit_spec("runPolicy.suspend", False)
    mc.sync_until_steady()
    run_attempt(mc)
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (0, 0)


def test_a_lost_or_stale_status_decides_the_same_restart_again() -> None:
    """Nothing of the attempt is deleted before the status that restarts it is stored: a sync that does not
    see that status (its write was lost, or Metacontroller's cache still has the old parent) finds the same
    failed Pod and decides the same restart; the count never goes back, never counts twice."""
    mc = started({"maxRestarts": 1}, linger=False)
    mc.container_exits("pi-worker-1", 1, "Error")
    old_parent = copy.deepcopy(mc.parent)
    lost = mc.sync(lose_status=True)
    assert lost.deleted == [] and lost.created == []  # discover_hosts.sh loses the dead worker, no more
    assert mc.status["restartCount"] == 0  # lost
    mc.sync()
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (1, 1)
    stored = copy.deepcopy(mc.parent)
    mc.parent = old_parent  # a sync from a stale cache
    writes = mc.sync()
    assert writes.deleted == [] and writes.created == []
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (1, 1)
    mc.parent["status"]["conditions"] = stored["status"]["conditions"]
    mc.sync_until_steady()
    assert attempts(mc) == {"1"} and mc.status["restartCount"] == 1
    run_attempt(mc)


def test_a_worker_with_restart_policy_on_failure_is_warned_about() -> None:
    raw = mpijob("pi").set("spec.failurePolicy", {"maxRestarts": 1}).build()
    raw["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
    mc = FakeMetacontroller()
    mc.apply_mpijob(raw)
    mc.sync_until_steady()
    assert "restartPolicy" in condition(mc, "Warning")[2] and "failurePolicy" in condition(mc, "Warning")[2]


def test_validation_names_every_bad_field() -> None:
    policy = {
        "maxRestarts": -1,
        "rules": [
            {"onExitCodes": {"operator": "In", "values": [0, 3, 3]}},
            {
                "action": "Ignore",
                "replicaTypes": ["Worker", "Worker", "Master"],
                "onPodConditions": ["not ok!"],
            },
        ],
    }
    raw = mpijob("pi").set("spec.failurePolicy", policy).build()
    errors = [str(e) for e in validate(with_defaults(MPIJob.model_validate(raw)))]
    where = "spec.failurePolicy"
    assert errors == [
        f"{where}.maxRestarts: Invalid value: -1: must be greater than or equal to 0",
        f"{where}.rules[0].action: Required value: must say what to do: FailJob, RestartJob,"
        " RestartJobAndIgnoreMaxRestarts",
        f"{where}.rules[0].onExitCodes.values: Invalid value: 0: must not list 0 for operator In: a failed"
        " container never exits 0",
        f'{where}.rules[0].onExitCodes.values: Invalid value: "<list>": must not repeat an exit code',
        f'{where}.rules[1].action: Unsupported value: "Ignore": supported values: "FailJob", "RestartJob",'
        ' "RestartJobAndIgnoreMaxRestarts"',
        f'{where}.rules[1].onPodConditions[0]: Invalid value: "not ok!": must be a Pod condition type,'
        " e.g. DisruptionTarget",
        f'{where}.rules[1].replicaTypes[2]: Unsupported value: "Master": supported values: "Launcher",'
        ' "Worker"',
        f'{where}.rules[1].replicaTypes: Invalid value: "<list>": must not repeat a replica type',
    ]


# --- any sequence of failures -------------------------------------------------------------------------

EVENTS = st.sampled_from(
    [
        "worker-exit-1",
        "worker-exit-42",
        "worker-oom",
        "disrupt",
        "launcher-fails",
        "deletions-finish",
        "pods-run",
        "lose-status",
        "sync",
    ]
)
POLICY = {
    "maxRestarts": 2,
    "rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
        {"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]},
    ],
}


def _happen(mc: FakeMetacontroller, event: str, index: int) -> bool:
    """Make ``event`` happen; returns whether the next sync loses its status write."""
    live = [
        n
        for n in mc.names("Pod")
        if n.startswith("pi-worker-") and not mc.get("Pod", n)["metadata"].get("deletionTimestamp")
    ]
    if event.startswith("worker-") and live:
        name = live[index % len(live)]
        code, reason = {
            "worker-exit-1": (1, "Error"),
            "worker-exit-42": (42, "Error"),
            "worker-oom": (137, "OOMKilled"),
        }[event]
        if mc.get("Pod", name)["status"].get("phase") != "Failed":
            mc.container_exits(name, code, reason)
    elif event == "disrupt" and live:
        mc.disrupt(live[index % len(live)])
    elif event == "launcher-fails" and mc.get("Job", "pi-launcher") is not None:
        mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    elif event == "deletions-finish":
        mc.finish_deletions()
    elif event == "pods-run":
        mc.workers_running()
        if mc.get("Job", "pi-launcher") is not None and not mc.launcher_pods():
            mc.start_launcher_pod()
    return event == "lose-status"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(EVENTS, st.integers(0, 3)), max_size=25))
def test_any_failure_sequence_keeps_the_promises(events: list[tuple[str, int]]) -> None:
    mc = FakeMetacontroller()
    mc.pods_linger = True
    mc.apply_mpijob(job(POLICY, workers=3))
    mc.sync_until_steady()
    for event, index in events:
        mc.advance(1)
        lose = _happen(mc, event, index)
        mc.sync(lose_status=lose)
        assert mc.status.get("restartCount", 0) <= POLICY["maxRestarts"]
        assert len(attempts(mc)) <= 1, attempts(mc)  # never two attempts' Pods side by side
        if condition(mc, "Failed")[0] == "True" or condition(mc, "Succeeded")[0] == "True":
            break
    # Whatever happened, the job can still end: run each attempt until its launcher is done.
    for _ in range(12):
        if condition(mc, "Failed")[0] == "True" or condition(mc, "Succeeded")[0] == "True":
            break
        mc.finish_deletions()
        mc.sync_until_steady()
        mc.workers_running()
        if mc.get("Job", "pi-launcher") is not None and not mc.launcher_pods():
            mc.start_launcher_pod()
        mc.sync_until_steady()
        if mc.get("Job", "pi-launcher") is not None:
            mc.finish_launcher("Complete")
        mc.sync_until_steady()
    assert condition(mc, "Failed")[0] == "True" or condition(mc, "Succeeded")[0] == "True", mc.status
    assert mc.status.get("restartCount", 0) <= POLICY["maxRestarts"]


def test_the_launchers_deadline_ends_the_job_without_a_restart() -> None:
    """activeDeadlineSeconds bounds the whole job: a launcher past it fails the job as upstream's."""
    mc = started({"maxRestarts": 3})
    mc.finish_launcher("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
    mc.sync_until_steady()
    assert condition(mc, "Failed")[:2] == ("True", "DeadlineExceeded")
    assert (mc.status["restartAttempt"], mc.status["restartCount"]) == (0, 0)


def test_a_launcher_failing_the_job_quotes_its_last_output() -> None:
    mc = started({"rules": [{"action": "FailJob", "replicaTypes": ["Launcher"]}]}, linger=False)
    mc.container_exits("pi-launcher-00000", 3, "Error", "rank 0: checkpoint missing\n")
    mc.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    mc.sync_until_steady()
    assert condition(mc, "Failed") == (
        "True",
        "FailJobRule",
        "MPIJob default/pi has failed (rule 0 (FailJob) matched). Launcher pi-launcher-00000: container"
        " launcher exited with code 3 (Error), last output: rank 0: checkpoint missing",
    )


def test_a_worker_scaled_away_is_no_failure() -> None:
    mc = started({"maxRestarts": 3}, workers=3)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 2)
    mc.container_exits("pi-worker-2", 143, "Error")  # terminated as it is deleted
    mc.sync_until_steady()
    assert mc.status["restartAttempt"] == 0 and condition(mc, "Restarting") == ("", "", "")


def test_each_restart_is_its_own_event() -> None:
    """Events are named by their key: two restarts for the same reason must not look like one transition
    repeated (Restarting is removed, not turned False, when the attempt runs)."""
    mc = started({"maxRestarts": 3}, linger=False)
    keys: list[tuple[str, str]] = []
    original = mc.hook

    def recording(request: dict[str, Any]) -> dict[str, Any]:

        result = sync(
            decode_request(orjson.dumps(request)), now=mc.now, keys=mc.keys, config=mc.settings.sync_config
        )
        keys.extend((event.reason, event.key) for event in result.events)
        return original(request)

    mc.hook = recording
    for worker in ("pi-worker-0", "pi-worker-1"):
        mc.container_exits(worker, 1, "Error")
        mc.sync_until_steady()
        run_attempt(mc)
    restarts = [key for reason, key in keys if reason == "WorkerError"]
    assert len(restarts) == 2 and len(set(restarts)) == 2, keys
    # MPIJobRunning once per attempt: the first run and each of the two restarts (Running stays True
    # throughout, so only the attempt in the Event's key tells the three apart).
    running = [event for event in mc.posted_events() if event[1] == "MPIJobRunning"]
    assert len(running) == 3, mc.posted_events()


def test_restarts_are_counted_by_reason_in_the_metrics() -> None:
    mc = started({"maxRestarts": 3}, linger=False)
    mc.container_exits("pi-worker-1", 137, "OOMKilled")
    result = sync(
        decode_request(orjson.dumps(mc.request())), now=mc.now, keys=mc.keys, config=mc.settings.sync_config
    )
    metrics = Metrics()
    metrics.record_sync(result, 0.01)
    metrics.record_sync(result, 0.01)  # the same restart decided twice (a lost status write) counts twice
    sample = metrics.registry.get_sample_value
    assert sample("mpi_operator_hook_job_restarts_total", {"reason": "WorkerOOMKilled"}) == 2
    assert sample("mpi_operator_jobs_failed_total") == 0


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.text(max_size=8),
    st.sampled_from(["In", "FailJob"]),
)
HOSTILE_POLICY = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "maxRestarts",
                    "rules",
                    "action",
                    "onExitCodes",
                    "operator",
                    "values",
                    "onPodConditions",
                    "replicaTypes",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    policy=HOSTILE_POLICY,
    stored=st.dictionaries(st.sampled_from(["restartAttempt", "restartCount"]), SCALARS),
)
def test_any_failure_policy_and_stored_count_is_an_answer(policy: Any, stored: dict[str, Any]) -> None:
    """Whatever the policy and the stored counters, the sync answers: a valid job, or Invalid saying why
    (never an exception, never a 500)."""
    raw = mpijob("pi").set("spec.failurePolicy", policy).status({"conditions": [], **stored}).build()
    request = {"controller": {}, "parent": raw, "children": {}, "related": {}}
    try:
        body = json.dumps(request).encode()  # orjson refuses integers beyond 64 bits; a client may not
        result = sync(decode_request(body), now=START, keys=KEYS, config=CONFIG)
    except RequestError:
        return  # a status of the wrong shape: the shell answers 400 with the message
    assert isinstance(result.status.get("conditions"), list)
    invalid = result.outcome == Outcome.INVALID
    assert invalid or result.status.get("restartCount", 0) >= 0
