"""``MPI_OPERATOR_HOSTFILE_ORDER_NODE_SELECTOR``: ``kubectl -l`` syntax to a ``labelSelector`` object."""

from __future__ import annotations

from typing import Any

import pytest

from app.kube.label_selector import parse_selector

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "equals": ("pool=gpu", {"matchLabels": {"pool": "gpu"}}),
    "double equals, prefixed key": (
        "nvidia.com/gpu.present==true",
        {"matchLabels": {"nvidia.com/gpu.present": "true"}},
    ),
    "exists and does not exist": (
        "a, !b",
        {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "DoesNotExist"}]},
    ),
    "not equal": ("a!=x", {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}),
    "in and notin": (
        "a in (x, y),b notin (z)",
        {
            "matchExpressions": [
                {"key": "a", "operator": "In", "values": ["x", "y"]},
                {"key": "b", "operator": "NotIn", "values": ["z"]},
            ]
        },
    ),
    "empty": ("  ", {}),
}


@pytest.mark.parametrize(("text", "want"), CASES.values(), ids=CASES.keys())
def test_selectors(text: str, want: dict[str, Any]) -> None:
    assert parse_selector(text) == want


@pytest.mark.parametrize("text", ["a=b=c", "a in (b", "=b", "a=b,,", "Bad Key=x", "a=" + "x" * 64, "a=-x"])
def test_what_is_not_a_selector_is_refused_with_what_to_write(text: str) -> None:
    with pytest.raises(ValueError, match="label"):
        parse_selector(text)
