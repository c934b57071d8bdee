"""The gang schedulers the hook knows: which PodGroup kind each one reads, and how it is chosen.

Upstream's ``--gang-scheduling`` picks Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``) or the
scheduler-plugins coscheduler's (``scheduling.x-k8s.io/v1alpha1``). Ours in addition: ``kubernetes``, the
default scheduler's own gang scheduling (Kubernetes 1.36, alpha): a Workload and a runtime PodGroup in
``scheduling.k8s.io/v1alpha2``. Kept here, below the builders, because
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
KUBERNETES_API_VERSION = "scheduling.k8s.io/v1alpha2"
PODGROUP_API_VERSIONS = (VOLCANO_API_VERSION, SCHEDULER_PLUGINS_API_VERSION, KUBERNETES_API_VERSION)
KIND = "PodGroup"
RESOURCE = "podgroups"
WORKLOAD_KIND = "Workload"
WORKLOAD_RESOURCE = "workloads"

# What each scheduler writes on a PodGroup whose gang waits (``app.core.observed.GangWait`` reads it).
# The Workload API: the condition PodGroupScheduled, False (reasons Unschedulable, SchedulerError) until the
# whole gang is placed, then True for good.
WORKLOAD_SCHEDULED_CONDITION = "PodGroupScheduled"
# Volcano: the condition Unschedulable, True (reasons NotEnoughResources, NotEnoughTasks), while the group
# is Pending or Inqueue; the condition may outlive the wait, the phase does not.
VOLCANO_UNSCHEDULABLE_CONDITION = "Unschedulable"
VOLCANO_WAITING_PHASES = frozenset({"Pending", "Inqueue"})
# scheduler-plugins: a phase only, no condition or message: Pending (fewer Pods than minMember), Scheduling
# (not minMember running yet); PreScheduling in releases before v0.26.7. Whether the coscheduler could not
# place the Pods is said by their own PodScheduled condition.
SCHEDULER_PLUGINS_WAITING_PHASES = frozenset({"Pending", "PreScheduling", "Scheduling"})
# A Pod's PodScheduled=False reason when the scheduler tried and found no place (SchedulingGated: it has
# not tried).
POD_UNSCHEDULABLE = "Unschedulable"


def child_resources(api_version: str) -> tuple[str, ...]:
    """The child resources (in ``api_version``) a gang overlay declares: the Workload API needs both."""
    return (WORKLOAD_RESOURCE, RESOURCE) if api_version == KUBERNETES_API_VERSION else (RESOURCE,)


@dataclass(frozen=True, slots=True)
class GangScheduler:
    """The gang scheduler the hook is configured for (``MPI_OPERATOR_GANG_SCHEDULING``)."""

    scheduler_name: str

    @property
    def volcano(self) -> bool:
        return self.scheduler_name == VOLCANO

    @property
    def kubernetes(self) -> bool:
        return self.scheduler_name == KUBERNETES

    @property
    def api_version(self) -> str:
        if self.kubernetes:
            return KUBERNETES_API_VERSION
        return VOLCANO_API_VERSION if self.volcano else SCHEDULER_PLUGINS_API_VERSION

    @property
    def resources(self) -> tuple[str, ...]:
        return child_resources(self.api_version)

    @property
    def overlay(self) -> str:
        """The kustomize overlay that declares this PodGroup child and sets the matching setting."""
        if self.kubernetes:
            return "deploy/overlays/kubernetes"
        return "deploy/overlays/volcano" if self.volcano else "deploy/overlays/scheduler-plugins"


def topology_key(annotations: Mapping[str, str]) -> str:
    """The node label key an MPIJob asks its gang to share (``names.GANG_TOPOLOGY_ANNOTATION``), or ''."""
    return annotations.get(GANG_TOPOLOGY_ANNOTATION, "").strip()


def gang_setting(setting: str) -> str:
    """The setting as the hook reads it, surrounding spaces dropped; ``ValueError`` unless empty, ``volcano``,
    ``kubernetes`` or a scheduler name (Pods name it in ``spec.schedulerName``, which must be a DNS
    subdomain)."""
    value = setting.strip()
    if value and not is_dns1123_subdomain(value):
        raise ValueError("must be empty, 'volcano', 'kubernetes' or a scheduler name (a DNS subdomain)")
    return value


def gang_scheduler(setting: str) -> GangScheduler | None:
    """As upstream: empty = off, ``volcano`` = Volcano, any other value = scheduler-plugins with that name;
    ours: ``kubernetes`` = the Workload API."""
    setting = setting.strip()
    return GangScheduler(setting) if setting else None
