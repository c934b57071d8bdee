"""The settings the hook's answers depend on: the hostfile's domain, the gang scheduler, the ConfigMap's
budget, the hostfile order. ``mpijob replay`` needs them to answer a recorded request the same again (the SSH
key seed, ``key_seed``, changes only key material, which replay ignores)."""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import Field, field_validator

from app.api.child_names import cluster_domain_setting
from app.api.hostfile_order_annotations import parse_labels
from app.core.config import SyncConfig
from app.kube.gang import gang_scheduler, gang_setting
from app.kube.label_selector import parse_selector
from app.settings.base import SettingsGroup, env_name

# Well-known labels cloud providers set on every node; finer ones (block, rack) are provider-specific.
DEFAULT_ORDER_LABELS = "topology.kubernetes.io/region,topology.kubernetes.io/zone"


class AnswerSettings(SettingsGroup):
    cluster_domain: str = Field(
        default="", description="Like --cluster-domain: suffix of the host names in the hostfile."
    )
    gang_scheduling: str = Field(
        default="",
        description=(
            "Like --gang-scheduling: 'volcano', another scheduler name, or empty; ours: 'kubernetes'."
        ),
    )
    metacontroller_apply_strategy: Literal["dynamic-apply", "server-side-apply"] = Field(
        default="dynamic-apply",
        description="Metacontroller's --apply-strategy: sizes the largest ConfigMap a job may need.",
    )
    hostfile_order_labels: str = Field(
        default=DEFAULT_ORDER_LABELS, description="Ours: node labels, coarsest first, ordering a hostfile."
    )
    hostfile_order_node_selector: str = Field(
        default="", description="Ours: a label selector: the Nodes an ordered job's sync is sent."
    )

    @field_validator("cluster_domain")
    @classmethod
    def _domain(cls, value: str) -> str:
        return cluster_domain_setting(value)

    @field_validator("gang_scheduling")
    @classmethod
    def _scheduler(cls, value: str) -> str:
        return gang_setting(value)

    @field_validator("hostfile_order_labels")
    @classmethod
    def _order_labels(cls, value: str) -> str:
        return ",".join(parse_labels(value))

    @field_validator("hostfile_order_node_selector")
    @classmethod
    def _node_selector(cls, value: str) -> str:
        parse_selector(value)
        return value.strip()

    def answer_settings(self) -> dict[str, str]:
        """The settings that change the hook's answers, by variable name, where they differ from the
        defaults: what a recorded request needs to be answered the same again (``mpijob replay``)."""
        defaults = answer_setting_defaults()
        values = {env_name(name): str(getattr(self, name)) for name in ANSWER_SETTINGS}
        return {name: value for name, value in values.items() if value != defaults[name]}

    @property
    def annotation_budget(self) -> bool:
        """dynamic-apply copies each child into a 256 KiB annotation, which bounds its size."""
        return self.metacontroller_apply_strategy == "dynamic-apply"

    @functools.cached_property
    def sync_config(self) -> SyncConfig:
        return SyncConfig(
            self.cluster_domain,
            gang_scheduler(self.gang_scheduling),
            self.annotation_budget,
            parse_labels(self.hostfile_order_labels),
        )

    @functools.cached_property
    def node_selector(self) -> dict[str, Any] | None:
        """``MPI_OPERATOR_HOSTFILE_ORDER_NODE_SELECTOR`` as a labelSelector, or None when unset."""
        return (
            parse_selector(self.hostfile_order_node_selector) if self.hostfile_order_node_selector else None
        )


ANSWER_SETTINGS = tuple(AnswerSettings.model_fields)


def answer_setting_defaults() -> dict[str, str]:
    """The default of each setting an answer depends on, by variable name."""
    return {env_name(name): str(AnswerSettings.model_fields[name].default) for name in ANSWER_SETTINGS}
