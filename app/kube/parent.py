"""Read the parent MPIJob once: the model, the document as sent, or why it cannot be read.

pydantic parses the parent's bytes once; the same parse keeps the document as written, which lint reads
for fields the model drops and a job left alone gets back as its status. A parent that does not parse is
an invalid job, not a bad request: its errors in upstream's path notation (``Unreadable``), with just
enough of it read to answer (its metadata and stored status). Nesting deeper than ``depth.MPIJOB_MAX_DEPTH``
(which the CRD keeps under a template's metadata) is found before the parse and reported where it starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from app.api import field_path
from app.api.types import JobStatus, MPIJob, ObjectMeta
from app.api.validation import FieldError
from app.kube import depth
from app.kube.request import RequestError, check_parent, check_parent_head


@dataclass(frozen=True)
class Parent:
    job: MPIJob
    # The parent as sent, every field the model drops included (read, never changed).
    document: Mapping[str, Any]


@dataclass(frozen=True)
class Unreadable:
    """A parent of the wrong shape: who it is, its stored status and what is wrong, field by field."""

    meta: ObjectMeta
    status: JobStatus
    errors: tuple[FieldError, ...]


class _Head(BaseModel):
    """Just enough of a parent whose spec does not parse: who it is and what status it has."""

    metadata: ObjectMeta = ObjectMeta()
    status: JobStatus = JobStatus()


def _with_document(data: Any, handler: ValidatorFunctionWrapHandler) -> tuple[MPIJob, Any]:
    return handler(data), data


_reader: TypeAdapter[Any] = TypeAdapter(Annotated[MPIJob, WrapValidator(_with_document)])


def read_parent(raw: bytes) -> Parent | Unreadable:
    """Raises ``RequestError`` when the parent is no MPIJob of the served version, or when not even its
    metadata and status can be read."""
    if depth.deeper_than(raw):
        return _too_deep(raw)
    try:
        job, document = _reader.validate_json(raw)
    except ValidationError as err:
        return _unreadable(raw, err)
    # Parsed, so a JSON object whose apiVersion and kind are strings, when present.
    check_parent(document.get("apiVersion"), document.get("kind"))
    return Parent(job, document)


def _too_deep(raw: bytes) -> Unreadable:
    """Nested deeper than ``depth.MPIJOB_MAX_DEPTH``: where it starts, read from the rest."""
    pruned, where = depth.prune(raw)
    check_parent_head(pruned)
    detail = f"must not nest deeper than {depth.MPIJOB_MAX_DEPTH} levels"
    head = _head(pruned)
    return Unreadable(head.metadata, head.status, (FieldError((where or "")[:128], "Forbidden", detail),))


def _unreadable(raw: bytes, err: ValidationError) -> Unreadable:
    check_parent_head(raw)
    head = _head(raw)
    errors = tuple(
        FieldError(field_path.join(e["loc"]), "Invalid", e["msg"], _short(e.get("input")))
        for e in err.errors()
    )
    return Unreadable(head.metadata, head.status, errors)


def _head(raw: bytes) -> _Head:
    try:
        return _Head.model_validate_json(raw)
    except ValidationError:
        raise RequestError("parent MPIJob has malformed metadata or status") from None


def _short(value: object) -> object:
    """The offending value for a message: scalars as they are (cut short), structures not at all."""
    if isinstance(value, str):
        return value[:64]
    return value if isinstance(value, int | float | bool) or value is None else "<object>"
