"""What every conversion returns or raises: kept apart so each source shape (``mpijob``, ``v1alpha1``) and
target (``trainjob``) can share them without importing one another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def as_object(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one: manifests are user input of any shape."""
    return value if isinstance(value, dict) else {}


class ConvertError(ValueError):
    """The document cannot be converted at all (not an MPIJob, or a version we do not read)."""


@dataclass
class Conversion:
    obj: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    # Objects to apply before ``obj`` (a TrainJob's own TrainingRuntime).
    prerequisites: list[dict[str, Any]] = field(default_factory=list)
