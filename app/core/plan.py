"""The plan of one sync: every decision made once, from the job, what exists, the stored status and ``now``.

``make_plan`` asks each policy (``app.core.policies``) once, in upstream's order, and hands each the
values it needs from the decisions before it. The status (``status.next_status``), the children
(``desired.desired_children``), the metrics and the CLI render the plan; none re-derives a decision.

1. Did the job finish before this sync? (``finishing.has_finished``: the stored status, never a missing
   launcher.) Is it suspended (``suspension``)?
2. Which children count, and does a failure restart or fail the job (``failure``)?
3. Upstream's worker list, and does the job end now, and how (``finishing``: the ``Ending``)?
4. The hostfile order and whether the launcher may start on it (``hostfile_order``), whether the launcher
   Job is kept or created (``launcher_creation``), whether the Pods join a PodGroup and the response has
   it (``gang_scheduling``), which workers to return (``worker_pods``; new ones wait for a PodGroup that
   counts them).
5. Which conditions change and why, and the start and completion times (``stage``, ``notices``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.api.defaults import Job
from app.core import stage
from app.core.intents import ConditionIntent
from app.core.notices import notices
from app.core.observed import Observed, count_workers
from app.core.policies import (
    failure,
    finishing,
    gang_scheduling,
    hostfile_order,
    launcher_creation,
    suspension,
    worker_pods,
)
from app.kube.gang import GangScheduler, topology_key
from app.kube.names import podgroup_name


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a plan is made from besides the job and what exists."""

    # The configured gang scheduler (``MPI_OPERATOR_GANG_SCHEDULING``), declared as a child or not.
    gang: GangScheduler | None
    # ``mpijob lint``'s findings on this job as one message, or None.
    warning: str | None
    now: datetime
    # What an ordered job's hostfile order is made from (None: index order).
    topology_order: hostfile_order.TopologyOrder | None = None


@dataclass(frozen=True)
class Plan:
    # The stored status says Succeeded or Failed: the job keeps what exists (``finishing``).
    finished_before: bool
    suspension: suspension.Suspension
    restarts: failure.Restarts
    finish: finishing.Finishing
    workers: worker_pods.WorkerPods
    launcher_job: launcher_creation.LauncherJobDecision
    gang: gang_scheduling.Gang
    hostfile_order: hostfile_order.HostfileOrderDecision
    # The stage conditions and the times; the notices (GangSchedulingUnavailable, GangScheduled, the lint
    # Warning).
    stage: stage.Stage
    notices: tuple[ConditionIntent, ...]

    @property
    def conditions(self) -> tuple[ConditionIntent, ...]:
        """Every condition change, in the order ``status.apply`` writes them."""
        return (*self.stage.conditions, *self.notices)

    @property
    def writes_finished(self) -> bool:
        """Finished before this sync or by it: the status this sync writes says Succeeded or Failed."""
        return self.finished_before or self.finish.finishing

    @property
    def follow_up_sync(self) -> bool:
        """Ask Metacontroller for another sync: nothing else triggers one (ignoreStatusChanges) once the
        status this sync writes is stored, yet that sync deletes children (a finished job's clean-up, the
        attempt a restart replaces)."""
        return self.finish.clean_up_follows or self.restarts.restarting


def make_plan(job: Job, observed: Observed, inputs: Inputs) -> Plan:
    """``job.status`` is the stored status without the lint Warning."""
    finished_before = finishing.has_finished(job.status)
    paused = suspension.decide(job)
    restarts = failure.decide(job, observed, finished_before=finished_before, suspended=paused.suspended)
    current, launcher_job = restarts.current, restarts.current.launcher_job_state
    launcher_done = launcher_job is not None and launcher_job.done
    listed = worker_pods.listed(
        job, suspended=paused.suspended, launcher_done=launcher_done, finished_before=finished_before
    )
    counts = count_workers(current, listed)
    finish = finishing.decide(
        job, launcher_job, finished_before=finished_before, evicted=counts.evicted, fails=restarts.fails
    )
    hold = _hold(finish, restarts, paused)
    order = hostfile_order.decide(job, current, inputs.topology_order, finished_before=finished_before)
    hold_launcher = hold or not order.launcher_may_start
    launcher = launcher_creation.decide(
        job, current, listed, finished_before=finished_before, suspended=paused.suspended, hold=hold_launcher
    )
    gang = gang_scheduling.decide(
        inputs.gang,
        current,
        finished_before=finished_before,
        suspended=paused.suspended,
        launcher_done=launcher_done,
        cleaned=finish.cleaning is not None,
    )
    held = gang_scheduling.holds_new_workers(gang, current, job, launcher_pending=launcher.pending)
    hold_workers = hold or held
    workers = worker_pods.decide(
        job, current, counts, hold=hold_workers, cleaning=finish.cleaning, finished_before=finished_before
    )
    gang = gang_scheduling.with_topology(gang, inputs.gang, topology_key(job.metadata.annotations))
    gang = gang_scheduling.with_wait(gang, current, ended=finished_before or finish.finishing)
    progress = stage.Progress(finished_before, paused, restarts, finish.ending, launcher_job, workers)
    advice = notices(finished_before, gang, inputs.gang, inputs.warning, podgroup_name(job.name))
    staged = stage.decide(job, progress, inputs.now)
    return Plan(finished_before, paused, restarts, finish, workers, launcher, gang, order, staged, advice)


def _hold(finish: finishing.Finishing, restarts: failure.Restarts, paused: suspension.Suspension) -> bool:
    """Nothing is created, what exists is kept, while the job finishes or restarts, or while an old attempt
    is being deleted (a suspended job keeps nothing of it)."""
    return finish.finishing or restarts.restarting or (restarts.in_flight and not paused.suspended)
