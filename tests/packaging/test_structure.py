"""An AST census of ``app/``: the structural rules of the developers' guide, kept true by the build.

- No module over 400 lines, no function over 40 (its ``def`` line to its last, docstring included), none
  with more than 6 parameters (``self`` and ``cls`` not counted).
- One name per meaning: no two classes and no two modules of the same name (``__init__`` aside).
- No import circle between the modules of ``app/``, ``TYPE_CHECKING`` and function-level imports included
  (import-linter's layers cannot see one inside a layer).
- The builders (``app/children``) build from what the plan decided: they never read a ``status``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import ROOT

APP = ROOT / "app"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40
MAX_PARAMETERS = 6
SHARED_MODULE_NAMES = {"__init__"}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``app``."""
    found = {}
    for path in sorted(APP.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    rest = [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return [name for name in (*named, *rest) if name not in ("self", "cls")]


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}


def test_no_function_is_over_40_lines_or_takes_more_than_6_parameters() -> None:
    found = []
    for name, tree in TREES.items():
        for function in _functions(tree):
            assert function.end_lineno is not None
            lines = function.end_lineno - function.lineno + 1
            parameters = len(_parameters(function))
            if lines > MAX_FUNCTION_LINES or parameters > MAX_PARAMETERS:
                found.append(f"{name}.{function.name}: {lines} lines, {parameters} parameters")
    assert found == []


def test_no_two_classes_or_modules_share_a_name() -> None:
    classes: dict[str, list[str]] = defaultdict(list)
    modules: dict[str, list[str]] = defaultdict(list)
    for name, tree in TREES.items():
        stem = MODULES[name].stem
        if stem not in SHARED_MODULE_NAMES:
            modules[stem].append(name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes[node.name].append(name)
    assert {k: v for k, v in modules.items() if len(v) > 1} == {}
    assert {k: v for k, v in classes.items() if len(v) > 1} == {}


def _imports(name: str, tree: ast.AST) -> set[str]:
    """The ``app`` modules ``name`` imports: ``from a import b`` is module ``a.b`` when there is one."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in MODULES else base)
    return {target for target in out if target in MODULES and target != name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    graph = {name: _imports(name, tree) for name, tree in TREES.items()}
    assert _circles(graph) == []


def test_the_census_sees_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


CHILDREN = sorted(name for name in MODULES if name.startswith("app.children."))


def _reads_status(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if (
            (isinstance(node, ast.Attribute) and node.attr == "status")
            or (isinstance(node, ast.Name) and node.id == "status")
            or (isinstance(node, ast.Constant) and node.value == "status")
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("name", CHILDREN)
def test_the_builders_never_read_a_status(name: str) -> None:
    assert _reads_status(TREES[name]) == []


def test_the_census_sees_a_status_read() -> None:
    assert _reads_status(ast.parse("attempt = job.status.restarts[0]")) == [1]
    assert _reads_status(ast.parse("phase = pod.get('status')")) == [1]
