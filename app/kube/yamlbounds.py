"""The bounds on what the YAML reader (``app.kube.yamltext``) builds: nesting (the hook's
``MPIJOB_MAX_DEPTH``) and aliases (``MAX_ALIASED_NODES``, no alias inside its own anchor), checked with
loops, never recursion, so a hostile file is an error with its line, not a ``RecursionError`` or a process
that fills memory."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError

from app.kube.depth import MPIJOB_MAX_DEPTH

# Nodes that aliases may add to a file, all documents together: a container reused a thousand times.
MAX_ALIASED_NODES = 100_000
TOO_DEEP = f"nests deeper than {MPIJOB_MAX_DEPTH} levels (the hook's limit)"


class AliasAndDepthBounds:
    """Walks a file's events once, before anything is composed (where ``_check_bounds`` needs it),
    measuring what composing would build: each open container's nodes and height (itself included) and,
    once closed, each anchored node's, so an alias costs what it would expand to. A loop over events, not
    recursion, so a hostile file cannot exhaust the stack here; the composers that run afterwards (libyaml's
    in C, PyYAML's in Python) see only files within ``MPIJOB_MAX_DEPTH``."""

    def __init__(self) -> None:
        self._aliased = 0

    def check(self, parser: Any) -> None:
        """Every event of ``parser`` (libyaml's or PyYAML's), to the end of its stream."""
        frames: list[list[Any]] = [[0, 0, None]]  # [nodes, height, anchor] per open container, a root first
        anchored: dict[str, tuple[int, int]] = {}
        next_event = parser.get_event
        while True:
            event = next_event()
            kind = type(event)
            if kind is yaml.ScalarEvent:
                nodes, height = 1, 0
                if event.anchor is not None:
                    anchored[event.anchor] = (1, 0)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                frames.append([1, 1, event.anchor])
                if len(frames) - 1 > MPIJOB_MAX_DEPTH:
                    raise ComposerError(problem=TOO_DEEP, problem_mark=_mark(event))
                continue
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                nodes, height, anchor = frames.pop()
                if anchor is not None:
                    anchored[anchor] = (nodes, height)
            elif kind is yaml.AliasEvent:
                nodes, height = self._alias(event, frames, anchored)
            elif kind is yaml.DocumentStartEvent:
                frames, anchored = [[0, 0, None]], {}
                continue
            elif kind is yaml.StreamEndEvent or event is None:
                return
            else:
                continue
            frame = frames[-1]
            frame[0] += nodes
            if height >= frame[1]:
                frame[1] = height + 1

    def _alias(
        self, event: yaml.AliasEvent, frames: list[list[Any]], anchored: dict[str, tuple[int, int]]
    ) -> tuple[int, int]:
        name = str(event.anchor)
        found = anchored.get(name)
        if found is None:
            if any(frame[2] == name for frame in frames):
                problem = f"alias *{name} is inside its own anchor (a document that contains itself)"
            else:
                problem = f"found undefined alias {name!r}"
            raise ComposerError(problem=problem, problem_mark=_mark(event))
        nodes, height = found
        if len(frames) - 1 + height > MPIJOB_MAX_DEPTH:
            raise ComposerError(problem=TOO_DEEP, problem_mark=_mark(event))
        self._aliased += nodes
        if self._aliased > MAX_ALIASED_NODES:
            problem = f"aliases expand to more than {MAX_ALIASED_NODES:,} nodes"
            raise ComposerError(problem=problem, problem_mark=_mark(event))
        return nodes, height


def within_depth(node: yaml.Node, depth: int) -> None:
    """Refuses a tree under ``node`` (itself ``depth`` containers deep) that nests deeper than
    ``MPIJOB_MAX_DEPTH``, walking it with a list, not recursion."""
    pending = [(node, depth)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, yaml.CollectionNode):
            if depth >= MPIJOB_MAX_DEPTH:
                raise ComposerError(problem=TOO_DEEP, problem_mark=node.start_mark)
            items = (
                node.value if isinstance(node, yaml.SequenceNode) else (n for kv in node.value for n in kv)
            )
            pending += ((item, depth + 1) for item in items)


def _mark(event: yaml.Event) -> Any:
    """Where an event starts: PyYAML's mark, or libyaml's (the same fields)."""
    return event.start_mark
