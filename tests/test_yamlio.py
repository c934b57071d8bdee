"""``dump_all``: multi-line strings print as blocks (``|``), and every string still reads back as written."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from app.cli.yamlio import InputError, dump_all, load_documents

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
