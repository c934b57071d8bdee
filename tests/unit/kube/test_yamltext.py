"""The CLI's YAML reader: the same data as ``yaml.safe_load_all``, the same bounds on both of its paths
(libyaml composing, with the event walk only where an anchor is written; PyYAML's own parser, always
walked), and one document at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from app.kube import yamltext
from app.kube.depth import MPIJOB_MAX_DEPTH
from app.kube.yamltext import InputError, iter_documents, load_documents, load_one_text

SHAPES = """\
plain: text
quoted: "123"
number: 12
octal: 0o14
float: 1.5
yes_is_a_string_in_1_2: yes
bool: true
nothing: null
tilde: ~
date: 2026-12-05
list: [1, "2", three]
nested: {a: {b: [{c: d}]}}
int_keys: {1: one, 2: two}
block: |
  line one
  line two
base: &base {cpu: 1, memory: 1Gi}
merged:
  <<: *base
  cpu: 2
shared: [*base, *base]
set: !!set {a, b}
---
kind: List
items:
- {kind: MPIJob, metadata: {name: a}}
- {kind: MPIJob, metadata: {name: b}}
---
# an empty document is skipped
---
[1, 2]
"""


@pytest.fixture(params=["libyaml", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways of reading: libyaml's (when PyYAML has it) and PyYAML's own parser."""
    if request.param == "libyaml":
        if not yaml.__with_libyaml__:
            pytest.skip("PyYAML without libyaml")
    else:
        monkeypatch.setattr(yamltext, "_Loader", yamltext._PythonLoader)
        monkeypatch.setattr(yamltext, "_EventParser", yamltext._PythonEvents)
    yield request.param


def test_the_data_is_what_safe_load_all_makes(path: str) -> None:
    expected: list[Any] = [d for d in yaml.safe_load_all(SHAPES) if d is not None]
    expected[1:2] = expected[1]["items"]  # a List's items are documents of their own
    documents = load_documents(SHAPES, "f.yaml")
    assert [d.data for d in documents] == expected
    assert [d.index for d in documents] == [0, 1, 2, 3]
    first = documents[0].data
    assert first["shared"][0] is first["shared"][1] is first["base"]  # an alias is the same object
    assert documents[0].line_of("merged.cpu") == 20 and documents[0].line_of("shared") == 21


def _nested(levels: int, anchor: str = "") -> str:
    return "kind: MPIJob\nspec: " + anchor + "[" * (levels - 1) + "]" * (levels - 1) + "\n"


@pytest.mark.parametrize("anchor", ["", "&a "], ids=["no anchor", "an anchor"])
def test_the_deepest_allowed_and_one_deeper(path: str, anchor: str) -> None:
    assert load_documents(_nested(MPIJOB_MAX_DEPTH, anchor), "f")  # the root mapping is the first level
    with pytest.raises(InputError) as refused:
        load_documents(_nested(MPIJOB_MAX_DEPTH + 1, anchor), "f")
    assert str(refused.value) == f"f:2:{7 + len(anchor) + MPIJOB_MAX_DEPTH - 1}: {yamltext.TOO_DEEP}"


def test_a_tree_under_a_tag_of_its_own_is_bounded_too(path: str) -> None:
    deep = "k: !!set {" + "{" * MPIJOB_MAX_DEPTH + "}" * MPIJOB_MAX_DEPTH + ": }\n"
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        load_documents(deep, "f")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: *nowhere\n", "found undefined alias 'nowhere'"),
        ("a: &x [1, *x]\n", "alias *x is inside its own anchor (a document that contains itself)"),
        ("a: 1\nb: 2\na: 3\n", 'duplicate key "a": first at line 1, again at line 3'),
        ("a: 1\n---\nb: [\n", "node content"),  # libyaml and PyYAML word it differently
    ],
)
def test_refusals_name_line_and_problem(path: str, text: str, problem: str) -> None:
    with pytest.raises(InputError, match=r"^f:\d+:\d+: ") as refused:
        load_documents(text, "f")
    assert problem in str(refused.value)


def test_documents_come_one_at_a_time() -> None:
    """With libyaml and no anchor, the first job is handed out before a later document is composed."""
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml")
    documents = iter_documents("kind: MPIJob\n---\nkind: a\nkind: b\n", "f")
    assert next(documents).data == {"kind": "MPIJob"}
    with pytest.raises(InputError, match=r"^f:4:1: duplicate key"):
        next(documents)


def test_one_document_is_read_with_the_same_bounds(path: str) -> None:
    assert load_one_text("a: {b: [1, true, null]}\n", "k") == {"a": {"b": [1, True, None]}}
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        load_one_text(_nested(MPIJOB_MAX_DEPTH + 1), "k")
