"""The gang schedulers the hook knows: which PodGroup kind each one reads, and how it is chosen.

Upstream's ``--gang-scheduling`` picks Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``) or the
scheduler-plugins coscheduler's (``scheduling.x-k8s.io/v1alpha1``). Kept here, below the builders, because
the core reads the same kinds from Metacontroller's requests (observed children, frozen children, the
CompositeController's declarations) that ``app.children.podgroup`` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

VOLCANO = "volcano"
VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
SCHEDULER_PLUGINS_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
PODGROUP_API_VERSIONS = (VOLCANO_API_VERSION, SCHEDULER_PLUGINS_API_VERSION)
KIND = "PodGroup"
RESOURCE = "podgroups"


@dataclass(frozen=True, slots=True)
class GangScheduler:
    """The gang scheduler the hook is configured for (``MPI_OPERATOR_GANG_SCHEDULING``)."""

    scheduler_name: str

    @property
    def volcano(self) -> bool:
        return self.scheduler_name == VOLCANO

    @property
    def api_version(self) -> str:
        return VOLCANO_API_VERSION if self.volcano else SCHEDULER_PLUGINS_API_VERSION

    @property
    def overlay(self) -> str:
        """The kustomize overlay that declares this PodGroup child and sets the matching setting."""
        return "deploy/overlays/volcano" if self.volcano else "deploy/overlays/scheduler-plugins"


def gang_scheduler(setting: str) -> GangScheduler | None:
    """As upstream: empty = off, ``volcano`` = Volcano, any other value = scheduler-plugins with that name."""
    setting = setting.strip()
    return GangScheduler(setting) if setting else None
