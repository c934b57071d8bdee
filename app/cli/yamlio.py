"""Reading manifests for the ``mpijob`` command: files or standard input, every YAML document, line numbers.

Errors become ``InputError`` with ``FILE:LINE:COLUMN`` and YAML's own short description, never a traceback.
A key written twice in one mapping is an error too (PyYAML would keep the last silently; kubectl refuses it),
which also catches manifests concatenated without ``---``. A ``kind: List`` document is unpacked into its
items, as ``kubectl`` does.

Every input is bounded before anything walks it, so hostile input is exit code 2, not a ``RecursionError``
or a process that fills memory: at most ``MAX_BYTES`` are read (standard input too); no container may open
deeper than the hook's own ``MAX_DEPTH`` (counted while composing, so the composer never recurses further);
aliases may add at most ``MAX_ALIASED_NODES`` nodes in all (a "billion laughs" document is a few lines that
expand to billions), and an alias inside its own anchor (a document that contains itself) is refused.
Events come from libyaml when PyYAML has it (about seven times faster), else from PyYAML's own parser; both
are loops, not recursion.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from app.kube.depth import MAX_DEPTH

# A manifest, kubeconfig or doctor snapshot is far smaller: the API server stores at most 1.5 MiB per object.
MAX_BYTES = 16 * 1024 * 1024
# Nodes that aliases may add to a file, all documents together: a container reused a thousand times.
MAX_ALIASED_NODES = 100_000
TOO_DEEP = f"nests deeper than {MAX_DEPTH} levels (the hook's limit)"


class InputError(ValueError):
    """The input cannot be used at all (unreadable, not YAML, not an object): exit code 2. A ``ValueError``,
    which the doctor reports as unusable input too."""


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping names the same key twice: which key, and both lines."""


class _UniqueKeys(SafeConstructor):
    """``yaml.SafeLoader``'s constructor, refusing a key written twice in one mapping (merge keys ``<<``
    may still be overridden, as YAML intends)."""

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
        if any(key.tag == "tag:yaml.org,2002:merge" for key, _ in node.value):
            # Merging rewrites the node's entries; a copy keeps them as written, for ``Document.line_of``.
            node = yaml.MappingNode(
                node.tag, list(node.value), node.start_mark, node.end_mark, node.flow_style
            )
        return super().construct_mapping(node, deep=deep)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class _BoundedComposer(Composer):
    """PyYAML's composer, measuring as it goes: each open container's nodes and height (itself included)
    and, once composed, each anchored node's, so an alias costs what it would expand to."""

    def __init__(self) -> None:
        super().__init__()
        self._frames: list[list[int]] = [[0, 0]]  # [nodes, height] per open container, a root first
        self._anchored: dict[str, tuple[int, int]] = {}
        self._aliased = 0

    if TYPE_CHECKING:  # the parser's, later in the loaders' bases

        def peek_event(self) -> yaml.NodeEvent: ...

    def compose_document(self) -> yaml.Node | None:
        self._frames, self._anchored = [[0, 0]], {}
        return super().compose_document()

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)  # an undefined alias is refused there
            nodes, height = self._alias(event)
        else:
            container = isinstance(event, yaml.CollectionStartEvent)
            if container:
                self._frames.append([1, 1])
                if len(self._frames) - 1 > MAX_DEPTH:
                    raise ComposerError(problem=TOO_DEEP, problem_mark=_mark(event))
            node = super().compose_node(parent, index)
            nodes, height = self._frames.pop() if container else (1, 0)
            if event.anchor is not None:
                self._anchored[event.anchor] = (nodes, height)
        frame = self._frames[-1]
        frame[0] += nodes
        frame[1] = max(frame[1], height + 1)
        return node

    def _alias(self, event: yaml.AliasEvent) -> tuple[int, int]:
        found = self._anchored.get(str(event.anchor))
        if found is None:
            problem = f"alias *{event.anchor} is inside its own anchor (a document that contains itself)"
            raise ComposerError(problem=problem, problem_mark=_mark(event))
        nodes, height = found
        if len(self._frames) - 1 + height > MAX_DEPTH:
            raise ComposerError(problem=TOO_DEEP, problem_mark=_mark(event))
        self._aliased += nodes
        if self._aliased > MAX_ALIASED_NODES:
            problem = f"aliases expand to more than {MAX_ALIASED_NODES:,} nodes"
            raise ComposerError(problem=problem, problem_mark=_mark(event))
        return nodes, height


def _mark(event: yaml.Event) -> Any:
    """Where an event starts: PyYAML's mark, or libyaml's (the same fields)."""
    return event.start_mark


class _Bounded(_UniqueKeys, _BoundedComposer):
    """What the loaders below share: unique keys, bounded composing."""

    if TYPE_CHECKING:  # the parser's, later in the loaders' bases

        def dispose(self) -> None: ...


class _PythonLoader(_Bounded, Reader, Scanner, Parser, Resolver):
    """PyYAML's own parser: where PyYAML was built without libyaml."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _BoundedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


_Loader: Callable[[str], _Bounded] = _PythonLoader
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _LibyamlLoader(_Bounded, CParser, Resolver):
        """libyaml's parser (its events only: composing stays ours, bounded)."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _Loader = _LibyamlLoader


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
        raise InputError(f"{source_name(path)}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return raw


def read_text(path: str) -> str:
    """A file's text, or standard input's for ``-``."""
    try:
        return read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{source_name(path)}: not UTF-8 text") from None


def load_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document; ``kind: List`` items become documents of their own."""
    documents: list[Document] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            _add(documents, loader.construct_document(node), node, source)
    except yaml.YAMLError as err:
        raise InputError(_yaml_error(err, source)) from None
    finally:
        loader.dispose()
    return documents


def _add(documents: list[Document], data: Any, node: yaml.Node | None, source: str) -> None:
    if data is None:
        return
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        items = _child(node, "items")
        for i, item in enumerate(data["items"]):
            documents.append(Document(source, len(documents), item, _child(items, i)))
    else:
        documents.append(Document(source, len(documents), data, node))


def load_one_text(text: str, source: str) -> Any:
    """The one YAML (or JSON) document in ``text``, e.g. a kubeconfig: ``None`` when empty."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_document(node)
    except yaml.YAMLError as err:
        raise InputError(_yaml_error(err, source)) from None
    finally:
        loader.dispose()


def _yaml_error(err: yaml.YAMLError, source: str) -> str:
    if not isinstance(err, yaml.MarkedYAMLError):
        return f"{source}: not valid YAML ({type(err).__name__})"
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
