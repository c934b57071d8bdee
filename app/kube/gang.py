"""The gang schedulers the hook knows: which PodGroup kind each one reads, and how it is chosen.

Upstream's ``--gang-scheduling`` picks Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``) or the
scheduler-plugins coscheduler's (``scheduling.x-k8s.io/v1alpha1``). Ours in addition: ``kubernetes``, the
default scheduler's own gang scheduling: a Workload and a runtime PodGroup in ``scheduling.k8s.io/v1beta1``
(Kubernetes 1.37) or ``v1alpha2`` (1.36), whichever the CompositeController declares (the overlay applied
names it; ``GangScheduler.declared``). Kept here, below the builders, because
the core reads the same kinds from Metacontroller's requests (observed children, frozen children, the
CompositeController's declarations) that ``app.children.podgroup`` builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.api.child_names import GANG_TOPOLOGY_ANNOTATION, is_dns1123_subdomain

VOLCANO = "volcano"
VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
SCHEDULER_PLUGINS_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
# Ours: the setting value that picks Kubernetes' Workload API (never a scheduler name: Pods keep theirs).
KUBERNETES = "kubernetes"
# The Workload API by Kubernetes release: 1.37 serves v1beta1 only, 1.36 v1alpha2 only (no release serves
# both: its objects do not survive the upgrade, docs/operations.md). The newest first: the default.
WORKLOAD_API_V1BETA1 = "scheduling.k8s.io/v1beta1"
WORKLOAD_API_V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
WORKLOAD_API_VERSIONS = (WORKLOAD_API_V1BETA1, WORKLOAD_API_V1ALPHA2)
# The overlay that declares each, and the release that serves it.
WORKLOAD_API_OVERLAYS = {
    WORKLOAD_API_V1BETA1: "deploy/overlays/kubernetes",
    WORKLOAD_API_V1ALPHA2: "deploy/overlays/kubernetes-1.36",
}
WORKLOAD_API_RELEASES = {WORKLOAD_API_V1BETA1: "1.37", WORKLOAD_API_V1ALPHA2: "1.36"}
# What turns each on besides kube-apiserver's --runtime-config=<version>=true: the feature gates (1.37 folded
# GangScheduling into GenericWorkload; each overlay's header says on which components).
WORKLOAD_API_FEATURE_GATES = {
    WORKLOAD_API_V1BETA1: ("GenericWorkload",),
    WORKLOAD_API_V1ALPHA2: ("GenericWorkload", "GangScheduling"),
}
VOLCANO_OVERLAY = "deploy/overlays/volcano"
SCHEDULER_PLUGINS_OVERLAY = "deploy/overlays/scheduler-plugins"
PODGROUP_API_VERSIONS = (VOLCANO_API_VERSION, SCHEDULER_PLUGINS_API_VERSION, *WORKLOAD_API_VERSIONS)
# The setting values that pick a backend of their own (any other name: scheduler-plugins), and how many edits
# from one of them a value is taken for its typo (``meant_backend``): "volcanoo", "kubernets", "Volcano".
BACKENDS = (VOLCANO, KUBERNETES)
TYPO_EDITS = 2
KIND = "PodGroup"
RESOURCE = "podgroups"
WORKLOAD_KIND = "Workload"
WORKLOAD_RESOURCE = "workloads"

# What each scheduler writes on a PodGroup whose gang waits (``app.core.observed.GangWait`` reads it).
# The Workload API: a condition False (reasons Unschedulable, SchedulerError) until the whole gang is
# placed, then True for good; 1.37 renamed it.
WORKLOAD_SCHEDULED_CONDITIONS = {
    WORKLOAD_API_V1BETA1: "PodGroupInitiallyScheduled",
    WORKLOAD_API_V1ALPHA2: "PodGroupScheduled",
}
# Volcano: the condition Unschedulable, True (reasons NotEnoughResources, NotEnoughTasks), while the group
# is Pending or Inqueue; the condition may outlive the wait, the phase does not.
VOLCANO_UNSCHEDULABLE_CONDITION = "Unschedulable"
VOLCANO_WAITING_PHASES = frozenset({"Pending", "Inqueue"})
# scheduler-plugins: a phase only, no condition or message: Pending (fewer Pods than minMember), Scheduling
# (not minMember running yet); PreScheduling in releases before v0.26.7. Whether the coscheduler could not
# place the Pods is said by their own PodScheduled condition.
SCHEDULER_PLUGINS_WAITING_PHASES = frozenset({"Pending", "PreScheduling", "Scheduling"})
# A Pod's condition when the scheduler preempts it (Kubernetes 1.37 preempts a Workload API gang whole).
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTED = "PreemptionByScheduler"
PREEMPTED_PHASE = "preempted by the scheduler"
# A Pod's PodScheduled=False reason when the scheduler tried and found no place (SchedulingGated: it has
# not tried).
POD_UNSCHEDULABLE = "Unschedulable"


def child_resources(api_version: str) -> tuple[str, ...]:
    """The child resources (in ``api_version``) a gang overlay declares: the Workload API needs both."""
    return (WORKLOAD_RESOURCE, RESOURCE) if api_version in WORKLOAD_API_VERSIONS else (RESOURCE,)


@dataclass(frozen=True, slots=True)
class GangScheduler:
    """The gang scheduler the hook is configured for (``MPI_OPERATOR_GANG_SCHEDULING``)."""

    scheduler_name: str
    # For ``kubernetes``: the Workload API version written (``declared`` picks it from the controller's).
    workload_api: str = WORKLOAD_API_V1BETA1

    @property
    def volcano(self) -> bool:
        return self.scheduler_name == VOLCANO

    @property
    def kubernetes(self) -> bool:
        return self.scheduler_name == KUBERNETES

    @property
    def api_version(self) -> str:
        if self.kubernetes:
            return self.workload_api
        return VOLCANO_API_VERSION if self.volcano else SCHEDULER_PLUGINS_API_VERSION

    @property
    def resources(self) -> tuple[str, ...]:
        return child_resources(self.api_version)

    @property
    def overlay(self) -> str:
        """The kustomize overlay that declares this PodGroup child and sets the matching setting."""
        if self.kubernetes:
            return WORKLOAD_API_OVERLAYS[self.workload_api]
        return VOLCANO_OVERLAY if self.volcano else SCHEDULER_PLUGINS_OVERLAY


def declared(scheduler: GangScheduler, declared_versions: frozenset[str]) -> GangScheduler:
    """``scheduler`` writing the Workload API version the CompositeController declares (the overlay names
    it: the user never chooses twice); the newest when it declares none, so the notice names that overlay."""
    if not scheduler.kubernetes:
        return scheduler
    served = next((v for v in WORKLOAD_API_VERSIONS if v in declared_versions), WORKLOAD_API_V1BETA1)
    return GangScheduler(scheduler.scheduler_name, served)


def topology_key(annotations: Mapping[str, str]) -> str:
    """The node label key an MPIJob asks its gang to share (``names.GANG_TOPOLOGY_ANNOTATION``), or ''."""
    return annotations.get(GANG_TOPOLOGY_ANNOTATION, "").strip()


def gang_setting(setting: str) -> str:
    """The setting as the hook reads it, surrounding spaces dropped; ``ValueError`` unless empty, ``volcano``,
    ``kubernetes`` or a scheduler name (Pods name it in ``spec.schedulerName``, which must be a DNS
    subdomain) other than a typo of those two (``meant_backend``). The one rule for the hook's setting and
    every ``--gang-scheduling`` flag."""
    value = setting.strip()
    meant = meant_backend(value)
    if meant is not None:
        raise ValueError(
            f"is not {meant!r} but would be taken for the name of a scheduler-plugins scheduler:"
            f" did you mean {meant}?"
        )
    if value and not is_dns1123_subdomain(value):
        raise ValueError("must be empty, 'volcano', 'kubernetes' or a scheduler name (a DNS subdomain)")
    return value


def meant_backend(value: str) -> str | None:
    """The backend (``BACKENDS``) that ``value`` is a typo of: at most ``TYPO_EDITS`` edits from its name,
    in any case, yet not that name. Upstream takes any other name for a scheduler-plugins scheduler, so
    ``volcanoo`` would create a PodGroup no scheduler reads and Pods that wait for a scheduler nobody runs;
    no real scheduler is named this close to a backend."""
    lowered = value.lower()
    if value in BACKENDS or len(lowered) > max(map(len, BACKENDS)) + TYPO_EDITS:  # no need to count
        return None
    return next((name for name in BACKENDS if _edits(lowered, name) <= TYPO_EDITS), None)


def _edits(text: str, other: str) -> int:
    """The fewest insertions, deletions, substitutions and swaps of two neighbours that make ``text``
    ``other`` (optimal string alignment distance)."""
    rows = [list(range(len(other) + 1))]
    for i, char in enumerate(text, 1):
        row = [i]
        for j, wanted in enumerate(other, 1):
            row.append(min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (char != wanted)))
            if i > 1 and j > 1 and char == other[j - 2] and text[i - 2] == wanted:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def gang_scheduler(setting: str) -> GangScheduler | None:
    """As upstream: empty = off, ``volcano`` = Volcano, any other value = scheduler-plugins with that name;
    ours: ``kubernetes`` = the Workload API."""
    setting = setting.strip()
    return GangScheduler(setting) if setting else None
