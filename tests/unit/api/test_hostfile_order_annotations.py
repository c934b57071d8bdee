"""The hostfile order's two annotations: what a job may write, and what validation says otherwise."""

from __future__ import annotations

import pytest

from app.api.hostfile_order_annotations import LABELS_ANNOTATION, ORDER_ANNOTATION, order_labels, parse_labels
from app.api.validation import validate
from tests.support.builders import mpijob
from tests.support.observed import defaulted

DEFAULT = ("topology.kubernetes.io/zone",)


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        ({}, None),
        ({ORDER_ANNOTATION: "index"}, None),
        ({ORDER_ANNOTATION: " topology "}, DEFAULT),
        ({ORDER_ANNOTATION: "topology", LABELS_ANNOTATION: " a/b , c,, a/b "}, ("a/b", "c")),
        ({ORDER_ANNOTATION: "topology", LABELS_ANNOTATION: " "}, DEFAULT),
        ({LABELS_ANNOTATION: "a"}, None),  # labels alone do not opt in
    ],
)
def test_which_labels_order_a_job(annotations: dict[str, str], want: tuple[str, ...] | None) -> None:
    assert order_labels(annotations, DEFAULT) == want


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({ORDER_ANNOTATION: "rack"}, "must be 'topology' (sorted by node labels) or 'index'"),
        (
            {ORDER_ANNOTATION: "topology", LABELS_ANNOTATION: "zone, not a key"},
            "'not a key' is not a node label key",
        ),
        ({LABELS_ANNOTATION: ",".join(f"k{i}" for i in range(9))}, "at most 8 node label keys"),
    ],
)
def test_a_malformed_annotation_makes_the_job_invalid_saying_what_to_write(
    annotations: dict[str, str], message: str
) -> None:
    errors = validate(defaulted(mpijob().set("metadata.annotations", annotations)))
    assert len(errors) == 1 and message in str(errors[0])
    assert str(errors[0]).startswith("metadata.annotations[mpi-operator-hook/hostfile-order")


def test_parse_labels_keeps_the_order_given() -> None:
    assert parse_labels("z, a, m") == ("z", "a", "m")
