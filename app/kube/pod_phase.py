"""A Pod's ``status.phase`` (core/v1 ``PodPhase``): the kubelet's five words, spelled once.

The phase is read from Kubernetes as a plain string (any value, or none); a ``StrEnum`` compares equal to
the string it names, so a read phase is compared with these members as it is.
"""

from __future__ import annotations

from enum import StrEnum


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"
