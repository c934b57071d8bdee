"""``dump_all``: multi-line strings print as blocks (``|``), and every string still reads back as written."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from app.cli.yamlio import dump_all

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
