"""Gang scheduling (``MPI_OPERATOR_GANG_SCHEDULING``): whether the Pods join a PodGroup, and whether the
response has it.

Gang scheduling is available only when the CompositeController declares the PodGroup child of the
configured scheduler (an overlay applied); otherwise the job runs without it and says so
(``notices``: GangSchedulingUnavailable). Membership is decided here, once: the builders decorate the
launcher and the workers for the scheduler named here, or for none. The PodGroup is returned, from the
current spec, whenever workers may be created (so it is in the response that first creates them);
dropped while suspended; once the launcher is done upstream neither creates nor deletes it; a finished
job keeps the one it has unless cleanPodPolicy cleans up. The Workload API's Workload follows its PodGroup,
in the version the CompositeController declares (``gang.declared``).

Ours: a topology key (the MPIJob's annotation) only the Workload API can honour; under any other setting
it is refused with a notice (GangSchedulingUnavailable), never silently dropped. And while the scheduler
holds the gang (its PodGroup says so: ``Observed.gang_wait``), the job says why (GangScheduled=False),
until the gang is placed or the job ends. And new workers wait for the Volcano or scheduler-plugins
PodGroup that counts them (``holds_new_workers``): Metacontroller creates a response's Pods before its
PodGroups, so the workers added by scaling up would otherwise reach the scheduler before the larger
minMember, and a waiting gang could start without them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.api.defaults import Job
from app.children.podgroup import gang_job, min_member
from app.core.observed import GangWait, Observed
from app.kube.gang import GangScheduler, declared


@dataclass(frozen=True, slots=True)
class Gang:
    # The scheduler whose PodGroup the Pods join (None: no gang scheduling for this job).
    scheduler: GangScheduler | None = None
    # The response has the PodGroup.
    podgroup: bool = False
    # Configured, but its PodGroup child is not declared.
    undeclared: GangScheduler | None = None
    # The job's topology key, which the configured backend (or none) cannot honour.
    refused_topology: str = ""
    # The scheduler holds the gang: none of its Pods is placed until all fit.
    waiting: GangWait | None = None


def decide(
    configured: GangScheduler | None,
    observed: Observed,
    *,
    finished_before: bool,
    suspended: bool,
    launcher_done: bool,
    cleaned: bool,
) -> Gang:
    """``cleaned``: cleanPodPolicy deletes its workers in this sync."""
    if configured is None:
        return Gang()
    configured = declared(configured, observed.podgroups_declared)
    if configured.api_version not in observed.podgroups_declared:
        return Gang(undeclared=configured)
    exists = configured.api_version in observed.podgroups
    if finished_before:
        return Gang(configured, exists and not cleaned)
    if suspended:
        return Gang(configured, False)
    if launcher_done:
        return Gang(configured, exists)  # upstream neither creates nor deletes it once the launcher is done
    return Gang(configured, True)


def holds_new_workers(gang: Gang, observed: Observed, job: Job, *, launcher_pending: bool) -> bool:
    """Create no worker this sync: the job's Volcano or scheduler-plugins PodGroup exists and asks another
    minMember than this response writes, so its update goes first. A missing PodGroup holds the Pods by
    itself (each scheduler waits for it). Not the Workload API's: immutable, and kept by the apiserver while
    its Pods run, its replacement would never come (a new worker joins the PodGroup there is)."""
    if gang.scheduler is None or not gang.podgroup:
        return False
    spec = observed.podgroup_specs.get(gang.scheduler.api_version)
    return spec is not None and (spec.min_member or 0) != min_member(gang_job(job, launcher_pending))


def with_topology(gang: Gang, configured: GangScheduler | None, topology: str) -> Gang:
    """``gang`` and the job's topology key (``topology``) that no backend but the Workload API can honour."""
    if topology and (configured is None or not configured.kubernetes):
        return replace(gang, refused_topology=topology)
    return gang


def with_wait(gang: Gang, observed: Observed, *, ended: bool) -> Gang:
    """``gang`` and whether its scheduler holds it, while the response keeps the PodGroup and the job has
    not ended (``ended``: finished before or in this sync)."""
    if gang.scheduler is None or not gang.podgroup or ended:
        return gang
    waiting = observed.gang_wait(gang.scheduler.api_version)
    return replace(gang, waiting=waiting) if waiting is not None else gang
