"""Reading manifests for the ``mpijob`` command: files or standard input, every YAML document, line numbers.

Errors become ``InputError`` with ``FILE:LINE:COLUMN`` and YAML's own short description, never a traceback.
A key written twice in one mapping is an error too (PyYAML would keep the last silently; kubectl refuses it),
which also catches manifests concatenated without ``---``. A ``kind: List`` document is unpacked into its
items, as ``kubectl`` does.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

import yaml

MAX_BYTES = 64 * 1024 * 1024


class InputError(Exception):
    """The input cannot be used at all (unreadable, not YAML, not an object): exit code 2."""


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping names the same key twice: which key, and both lines."""


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping (merge keys ``<<`` may still be
    overridden, as YAML intends)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            first = seen.setdefault(key, key_node) if _hashable(key) else key_node
            if first is not key_node:
                raise DuplicateKeyError(
                    problem=f'duplicate key "{str(key)[:64]}": first at line {first.start_mark.line + 1},'
                    f" again at line {key_node.start_mark.line + 1}",
                    problem_mark=key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@dataclass(frozen=True)
class Document:
    source: str  # file name, or "<stdin>"
    index: int  # position in the file, from 0
    data: Any
    node: yaml.Node | None  # for line numbers

    def line_of(self, path: str) -> int | None:
        """The line of the deepest existing field on ``path`` (``a.b[0].c``), from 1: a key's own line."""
        node = self.node
        line = node.start_mark.line + 1 if node is not None else None
        for key in _path_keys(path):
            found = _entry(node, key)
            if found is None:
                break
            marker, node = found
            line = marker.start_mark.line + 1
        return line


def _path_keys(path: str) -> list[str | int]:
    return [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]


def _entry(node: yaml.Node | None, key: str | int) -> tuple[yaml.Node, yaml.Node] | None:
    """(where it is written, its value): the key node for a mapping entry, the item for a list."""
    if isinstance(node, yaml.MappingNode):
        return next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(key)), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        item: yaml.Node = node.value[key]
        return item, item
    return None


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    found = _entry(node, key)
    return found[1] if found is not None else None


def source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def read_text(path: str) -> str:
    """A file's text, or standard input's for ``-``."""
    try:
        if path == "-":
            text = sys.stdin.read(MAX_BYTES + 1)
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read(MAX_BYTES + 1)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{source_name(path)}: not UTF-8 text") from None
    if len(text) > MAX_BYTES:
        raise InputError(f"{source_name(path)}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return text


def load_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document; ``kind: List`` items become documents of their own."""
    try:
        datas = list(yaml.load_all(text, Loader=UniqueKeyLoader))
        nodes = list(yaml.compose_all(text, Loader=UniqueKeyLoader))
    except yaml.MarkedYAMLError as err:
        raise InputError(_yaml_error(err, source)) from None
    except yaml.YAMLError as err:
        raise InputError(f"{source}: not valid YAML ({type(err).__name__})") from None
    documents: list[Document] = []
    for data, node in zip(datas, nodes, strict=False):
        if data is None:
            continue
        if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
            items = _child(node, "items")
            for i, item in enumerate(data["items"]):
                documents.append(Document(source, len(documents), item, _child(items, i)))
        else:
            documents.append(Document(source, len(documents), data, node))
    return documents


def _yaml_error(err: yaml.MarkedYAMLError, source: str) -> str:
    mark = err.problem_mark or err.context_mark
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    problem = err.problem or err.context or "not valid YAML"
    return f"{where}: {problem}"


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
