"""YAML text to documents, bounded: manifests, kubeconfigs and doctor snapshots, as ``kubectl`` reads them.

Errors become ``InputError`` with ``SOURCE:LINE:COLUMN`` and YAML's own short description, never a traceback.
A key written twice in one mapping is an error too (PyYAML would keep the last silently; kubectl refuses it),
which also catches manifests concatenated without ``---``. A ``kind: List`` document is unpacked into its
items, as ``kubectl`` does.

Every text is bounded before anything walks it, so hostile input is an ``InputError``, not a
``RecursionError`` or a process that fills memory: no container may open deeper than the hook's own
``MPIJOB_MAX_DEPTH``; aliases may add at most ``MAX_ALIASED_NODES`` nodes in all (a "billion laughs" document
is a few lines that expand to billions), and an alias inside its own anchor (a document that contains itself)
is refused. How many bytes may be read is the reader's bound (``app.cli.yamlio``, ``app.cluster.untrusted``).

Speed (bench/lint_bench.py): where PyYAML has libyaml, libyaml parses and composes in C and ``_build``
turns nodes into data, checking depth as it goes; the events are walked first (``_Bounds``, a loop) only
when the text has an anchor, or where PyYAML's Python parser composes (it has no depth limit of its own).
``iter_documents`` hands out one document at a time, so a caller keeps only what it needs of each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from app.kube.depth import MPIJOB_MAX_DEPTH
from app.kube.yamlbounds import TOO_DEEP, AliasAndDepthBounds, within_depth


class InputError(ValueError):
    """The input cannot be used at all (unreadable, not YAML, not an object): the CLI's exit code 2. A
    ``ValueError``, which the doctor reports as unusable input too."""


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping names the same key twice: which key, and both lines."""


class _UniqueKeys(SafeConstructor):
    """``yaml.SafeLoader``'s constructor, refusing a key written twice in one mapping (merge keys ``<<``
    may still be overridden, as YAML intends).

    What manifests are made of (mappings with distinct string keys, lists, strings) is built by
    ``_build`` in one short recursive function, about three times faster than PyYAML's general machinery
    (generators, state per node); anything else (numbers, booleans, merges, other tags, a key written
    twice) goes to that machinery, which decides as ``yaml.safe_load`` does."""

    def construct_document(self, node: yaml.Node) -> Any:
        try:
            return self._build(node, {}, 0)
        finally:
            self.constructed_objects, self.recursive_objects, self.state_generators = {}, {}, []

    def _build(self, node: yaml.Node, built: dict[int, Any], depth: int) -> Any:
        """``node`` as data; ``built`` holds each container already built, so an alias (a node met twice)
        is the same object, as PyYAML makes it. ``depth``: the containers around ``node``; one deeper than
        ``MPIJOB_MAX_DEPTH`` is refused here, where no bounds check ran before composing."""
        kind, tag = type(node), node.tag
        if kind is yaml.ScalarNode:
            return node.value if tag == _STR else self.construct_object(node, deep=True)
        key = id(node)
        if key in built:
            return built[key]
        if depth >= MPIJOB_MAX_DEPTH:
            raise ComposerError(problem=TOO_DEEP, problem_mark=node.start_mark)
        data: Any
        if kind is yaml.MappingNode and tag == _MAP and _plain_distinct_keys(node):  # type: ignore[arg-type]
            data = built[key] = {}
            for key_node, value_node in node.value:
                data[key_node.value] = self._build(value_node, built, depth + 1)
        elif kind is yaml.SequenceNode and tag == _SEQ:
            data = built[key] = []
            data.extend(self._build(item, built, depth + 1) for item in node.value)
        else:
            within_depth(node, depth)  # PyYAML's machinery recurses: it gets bounded trees only
            data = built[key] = self.construct_object(node, deep=True)
        return data

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


def _plain_distinct_keys(node: yaml.MappingNode) -> bool:
    """Every key a string scalar (so written as it is constructed, and no merge key) and no two the same."""
    keys = {key.value for key, _ in node.value if type(key) is yaml.ScalarNode and key.tag == _STR}
    return len(keys) == len(node.value)


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class _CachedResolver(Resolver):
    """PyYAML's resolver, remembering each plain scalar's tag: a file of many jobs writes the same values
    (images, ``mpirun``, ``500m``) over and over, and each costs a few regular expressions to resolve. This
    loader has no path resolvers, so a scalar's tag depends on its text alone."""

    _tags: dict[str, str] = {}  # noqa: RUF012 (shared on purpose: per process, bounded)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        if kind is not yaml.ScalarNode or not implicit[0]:
            return str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]
        tag = self._tags.get(value)
        if tag is None:
            tag = str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]
            if len(self._tags) < _RESOLVED_TAGS_KEPT and len(value) <= 256:
                self._tags[value] = tag
        return tag


_RESOLVED_TAGS_KEPT = 65_536


class _PythonLoader(_UniqueKeys, Reader, Scanner, Parser, Composer, _CachedResolver):
    """PyYAML's own parser and composer: where PyYAML was built without libyaml."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


class _PythonEvents(Reader, Scanner, Parser):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


_Loader: Callable[[str], Any] = _PythonLoader
_EventParser: Callable[[str], Any] = _PythonEvents
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _LibyamlLoader(_UniqueKeys, CParser, _CachedResolver):
        """libyaml's parser and composer, in C: about ten times PyYAML's speed."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _Loader = _LibyamlLoader
    _EventParser = CParser


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


def load_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document; ``kind: List`` items become documents of their own."""
    return list(iter_documents(text, source))


def iter_documents(text: str, source: str) -> Iterator[Document]:
    """``load_documents`` one document at a time, so a caller that is done with a document lets it go (a
    file of thousands of jobs then never holds all their node trees at once). An error in a later document
    ends the iteration with ``InputError`` after the earlier ones were handed out: a caller that must not
    print a verdict on half a file keeps what it prints until the end (``lint`` does)."""
    _check_bounds(text, source)
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            for data, item_node in _unpacked(loader.construct_document(node), node):
                yield Document(source, index, data, item_node)
                index += 1
    except yaml.YAMLError as err:
        _check_bounds(text, source, always=True)  # a bound's own message first (libyaml's depth is 1,000)
        raise InputError(_yaml_error(err, source)) from None
    finally:
        loader.dispose()


def _check_bounds(text: str, source: str, *, always: bool = False) -> None:
    """Where libyaml composes and no anchor is written (``&``; without one there is no alias), composing is
    safe as it is (libyaml stops at 1,000 levels) and ``_build`` keeps ``MPIJOB_MAX_DEPTH``: the events need
    no walk of their own, which would cost a third of reading a file."""
    python = _Loader is _PythonLoader
    if not python and "&" not in text and not always:
        return
    parser = _PythonEvents(text) if python else _EventParser(text)
    try:
        AliasAndDepthBounds().check(parser)
    except yaml.YAMLError as err:
        raise InputError(_yaml_error(err, source)) from None
    finally:
        parser.dispose()


def _unpacked(data: Any, node: yaml.Node | None) -> Iterator[tuple[Any, yaml.Node | None]]:
    if data is None:
        return
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        items = _child(node, "items")
        for i, item in enumerate(data["items"]):
            yield item, _child(items, i)
    else:
        yield data, node


def load_one_text(text: str, source: str) -> Any:
    """The one YAML (or JSON) document in ``text``, e.g. a kubeconfig: ``None`` when empty."""
    _check_bounds(text, source)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_document(node)
    except yaml.YAMLError as err:
        _check_bounds(text, source, always=True)
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
