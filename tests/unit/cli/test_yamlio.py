"""``dump_all``: multi-line strings print as blocks (``|``), and every string still reads back as written.
Reading: a key written twice is an error, and every input is bounded (depth, aliases, size) with libyaml's
parser and with PyYAML's own alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from app.cli import yamlio
from app.cli.yamlio import dump_all, read_text
from app.kube import yamltext
from app.kube.depth import MPIJOB_MAX_DEPTH, deeper_than
from app.kube.yamltext import InputError, load_documents, load_one_text

HOSTFILE = "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n"


def test_a_hostfile_prints_as_its_lines() -> None:
    text = dump_all([{"data": {"hostfile": HOSTFILE, "discover_hosts.sh": "#!/bin/sh\necho a\n"}}])
    assert text == (
        "---\n"
        "data:\n"
        "  hostfile: |\n"
        "    pi-worker-0.pi.default.svc slots=1\n"
        "    pi-worker-1.pi.default.svc slots=1\n"
        "  discover_hosts.sh: |\n"
        "    #!/bin/sh\n"
        "    echo a\n"
    )


@pytest.mark.parametrize(
    "value",
    [
        HOSTFILE,
        "no newline at the end\nsecond",
        "two newlines at the end\n\n",
        "\nstarts with a newline",
        "  indented first line\nx\n",
        "trailing space \nx\n",  # a block cannot hold it: quoted instead
        "tab\tinside\nx",
        "windows\r\nline\r\n",
        "ünïcödé\nline\n",
        "key: value\n- item\n",
        "one line",
        "",
    ],
)
def test_strings_read_back_as_written(value: str) -> None:
    assert yaml.safe_load(dump_all([{"s": value}])) == {"s": value}


@given(st.text())
def test_any_string_reads_back_as_written(value: str) -> None:
    assert yaml.safe_load(dump_all([{"s": value}])) == {"s": value}


def test_several_documents_and_none() -> None:
    documents: list[dict[str, Any]] = [{"kind": "Service"}, {"kind": "ConfigMap", "data": {"a": "1\n2\n"}}]
    assert list(yaml.safe_load_all(dump_all(documents))) == documents
    assert dump_all([]) == ""


# --- reading: a key written twice ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", 'x.yaml:3:1: duplicate key "a": first at line 1, again at line 3'),
        ("s:\n  t: {k: 1, k: 2}\n", 'x.yaml:2:13: duplicate key "k": first at line 2, again at line 2'),
        (
            "---\nok: 1\n---\nl:\n- x: 1\n  x: 2\n",
            'x.yaml:6:3: duplicate key "x": first at line 5, again at line 6',
        ),
    ],
)
def test_a_key_written_twice_is_an_input_error(text: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        load_documents(text, "x.yaml")
    assert str(raised.value) == message


def test_the_same_key_in_different_mappings_and_merges_are_fine() -> None:
    text = "a: {k: 1}\nb: {k: 2}\nbase: &b {k: 1}\nc:\n  <<: *b\n  k: 3\n"
    [doc] = load_documents(text, "x.yaml")
    assert doc.data["c"] == {"k": 3} and doc.data["b"] == {"k": 2}


# --- reading: bounded (depth, aliases, size), with libyaml's events and with PyYAML's own -----------------

LOADERS = [yamltext._PythonLoader, *([yamltext._LibyamlLoader] if yaml.__with_libyaml__ else [])]


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamltext, "_Loader", request.param)


def nested_flow(depth: int) -> str:
    return "kind: MPIJob\nspec: " + "{a: " * (depth - 1) + "1" + "}" * (depth - 1) + "\n"


def nested_block(depth: int) -> str:
    lines = ["kind: MPIJob", "spec:"] + ["  " * level + f"k{level}:" for level in range(1, depth)]
    return "\n".join(lines) + " 1\n"


def nested_json(depth: int) -> str:
    return '{"kind": "MPIJob",\n"spec": ' + '{"a": ' * (depth - 1) + "1" + "}" * depth + "\n"


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize("nested", [nested_flow, nested_block, nested_json])
def test_the_hooks_depth_is_the_limit(nested: Callable[[int], str]) -> None:
    """As deep as the hook reads: fine, one level more: refused where it starts, and the hook agrees."""
    [doc] = load_documents(nested(MPIJOB_MAX_DEPTH), "x.yaml")
    assert not deeper_than(orjson.dumps(doc.data))
    with pytest.raises(
        InputError, match=r"^x\.yaml:\d+:\d+: nests deeper than 64 levels \(the hook's limit\)$"
    ):
        load_documents(nested(MPIJOB_MAX_DEPTH + 1), "x.yaml")
    assert deeper_than(orjson.dumps(doc.data | {"more": [doc.data["spec"]]}))


@pytest.mark.usefixtures("loader")
def test_a_thousand_levels_are_refused_on_the_line_they_pass_the_limit() -> None:
    with pytest.raises(InputError) as raised:
        load_documents(nested_block(1000), "deep.yaml")
    assert str(raised.value) == "deep.yaml:66:129: nests deeper than 64 levels (the hook's limit)"


@pytest.mark.usefixtures("loader")
def test_an_alias_counts_the_depth_of_what_it_repeats() -> None:
    anchored = "a: &deep " + "[" * 40 + "]" * 40 + "\n"
    load_documents(anchored + "b: " + "[" * 23 + "*deep" + "]" * 23 + "\n", "x.yaml")
    with pytest.raises(InputError, match=r"^x\.yaml:2:28: nests deeper than 64"):
        load_documents(anchored + "b: " + "[" * 24 + "*deep" + "]" * 24 + "\n", "x.yaml")


def billion_laughs(levels: int) -> str:
    text = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for level in range(1, levels):
        text += f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]\n"
    return text


@pytest.mark.usefixtures("loader")
def test_a_billion_laughs_is_refused_where_its_aliases_pass_the_budget() -> None:
    with pytest.raises(InputError) as raised:
        load_documents(billion_laughs(10), "bomb.yaml")
    assert str(raised.value) == "bomb.yaml:6:10: aliases expand to more than 100,000 nodes"


@pytest.mark.usefixtures("loader")
def test_the_alias_budget_is_exact() -> None:
    """A list of 999 scalars is 1,000 nodes: repeated 100 times it fills the budget, 101 times it does not."""
    anchored = "a: &a [" + ", ".join(["x"] * 999) + "]\n"
    [doc] = load_documents(anchored + "b: [" + ", ".join(["*a"] * 100) + "]\n", "x.yaml")
    assert len(doc.data["b"]) == 100 and doc.data["b"][99] == ["x"] * 999
    with pytest.raises(InputError, match="aliases expand to more than 100,000 nodes"):
        load_documents(anchored + "b: [" + ", ".join(["*a"] * 101) + "]\n", "x.yaml")


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(
    ("text", "where"),
    [("a: &a [1, *a]\n", "1:11"), ("a: &a\n  b: {c: *a}\n", "2:10"), ("- &x [*x]\n", "1:7")],
)
def test_a_document_that_contains_itself_is_refused(text: str, where: str) -> None:
    with pytest.raises(InputError) as raised:
        load_documents(text, "x.yaml")
    assert str(raised.value) == f"x.yaml:{where}: alias *{text.split('&')[1][0]} is inside its own anchor" + (
        " (a document that contains itself)"
    )


@pytest.mark.usefixtures("loader")
def test_anchors_merges_and_kind_list_still_read_as_written() -> None:
    text = (
        "kind: List\nitems:\n- &job {kind: MPIJob, metadata: &m {name: a}}\n"
        "- {kind: MPIJob, metadata: {<<: *m, name: b}}\n- *job\n---\n---\n[1, 2]\n"
    )
    documents = load_documents(text, "x.yaml")
    assert [d.data for d in documents] == [
        {"kind": "MPIJob", "metadata": {"name": "a"}},
        {"kind": "MPIJob", "metadata": {"name": "b"}},
        {"kind": "MPIJob", "metadata": {"name": "a"}},
        [1, 2],
    ]
    # the third is the first again (an alias is the node it names)
    assert [d.line_of("metadata.name") for d in documents] == [3, 4, 3, 8]


@pytest.mark.usefixtures("loader")
def test_a_kubeconfig_is_one_document(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("current-context: a\n")
    assert load_one_text(read_text(str(path)), str(path)) == {"current-context": "a"}
    path.write_text("")
    assert load_one_text(read_text(str(path)), str(path)) is None
    path.write_text("a: 1\n---\nb: 2\n")
    with pytest.raises(InputError, match=rf"^{path}:2:1: but found another document$"):
        load_one_text(read_text(str(path)), str(path))
    path.write_text(nested_flow(100))
    with pytest.raises(InputError, match=rf"^{path}:2:\d+: nests deeper than 64"):
        load_one_text(read_text(str(path)), str(path))


def test_reading_stops_past_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlio, "MAX_BYTES", 2 * 1024 * 1024)
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (2 * 1024 * 1024))
    assert read_text(str(path)) == "#" * (2 * 1024 * 1024)
    path.write_bytes(b"#" * (2 * 1024 * 1024 + 1))
    with pytest.raises(InputError, match=rf"^{path}: larger than 2 MiB: split it into smaller files$"):
        read_text(str(path))
    path.write_bytes(b"kind: \xff\n")
    with pytest.raises(InputError, match=rf"^{path}: not UTF-8 text$"):
        read_text(str(path))
