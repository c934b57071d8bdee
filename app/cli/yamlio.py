"""Reading manifests for the ``mpijob`` command (files or standard input, bounded) and writing YAML.

At most ``MAX_BYTES`` are read (standard input too; a file of more jobs is split, and ``lint`` takes many
files); ``app.kube.yamltext`` turns the text into documents with line numbers.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from app.kube.yamltext import InputError

# A manifest, kubeconfig or doctor snapshot is far smaller: the API server stores at most 1.5 MiB per object.
MAX_BYTES = 16 * 1024 * 1024


def source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def read_bytes(path: str) -> bytes:
    """A file's bytes, or standard input's for ``-``: at most ``MAX_BYTES``, else an ``InputError``."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror}") from None
    if len(raw) > MAX_BYTES:
        limit = MAX_BYTES // (1024 * 1024)
        raise InputError(f"{source_name(path)}: larger than {limit} MiB: split it into smaller files")
    return raw


def read_text(path: str) -> str:
    """A file's text, or standard input's for ``-``."""
    try:
        return read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source_name(path)}: not UTF-8 text") from None


class BlockDumper(yaml.SafeDumper):
    """Writes a multi-line string as a block (``|``), so a hostfile or script reads as the file it is, and
    an object the children share (the launcher's env in its init container) in full each time, no anchors.
    Also the dumper of the generated CRD (tools/gen_crd.py)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted scalar where a block cannot hold the string exactly (trailing spaces).
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


BlockDumper.add_representer(str, _represent_str)


def dump_all(documents: list[dict[str, Any]]) -> str:
    if not documents:
        return ""
    return yaml.dump_all(documents, Dumper=BlockDumper, sort_keys=False, explicit_start=True)
