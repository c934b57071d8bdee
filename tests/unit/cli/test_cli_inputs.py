"""Hostile input to every ``mpijob`` command that reads a file (``replay``'s recorded answers too), and a
bad name in every flag that names something in a cluster: each is exit code 2 with one line on stderr
(naming the file and line, or the flag), nothing on stdout and no traceback, as a user runs the installed
command (``tests.unit.cli.test_cli.mpijob``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from app.cli import arguments
from app.cli.program import build_parser
from tests.unit.cli.test_cli import PI, mpijob

MIB = 1024 * 1024
DEPTH = 1000
LAUGHS = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]\n" for level in range(1, 10)
)
HOSTILE = {
    "deep-flow.yaml": "kind: MPIJob\nspec: " + "[" * DEPTH + "]" * DEPTH + "\n",
    "deep-block.yaml": "kind: MPIJob\n" + "".join("  " * level + f"k{level}:\n" for level in range(DEPTH)),
    "deep.json": '{"kind": "MPIJob", "spec": ' + '{"a": ' * DEPTH + "1" + "}" * (DEPTH + 1),
    "laughs.yaml": "kind: MPIJob\n" + LAUGHS,
    "itself.yaml": "kind: MPIJob\nspec: &spec {a: [*spec]}\n",
    "oversized.yaml": "kind: MPIJob\n" + "#" * (16 * MIB),
}
# What each command reads the file as: (arguments, the file's place among them, what stderr starts with).
READERS = {
    "lint": (["lint", "{}"], "mpijob lint: "),
    "render": (["render", "{}"], "mpijob render: "),
    "render --nodes": (["render", str(PI), "--nodes", "{}"], "mpijob render: "),
    "convert": (["convert", "{}"], "mpijob convert: "),
    "convert --runtime": (["convert", "--to", "trainjob", "--runtime", "{}", str(PI)], "mpijob convert: "),
    "doctor --kubeconfig": (["doctor", "pi", "--kubeconfig", "{}"], "mpijob doctor: "),
    "doctor --load": (["doctor", "--load", "{}"], "mpijob doctor: "),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    for name, text in HOSTILE.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_files_are_exit_2_with_one_line_naming_file_and_line(
    hostile: Path, reader: str, name: str
) -> None:
    arguments, prefix = READERS[reader]
    path = hostile / name
    done = mpijob(*[a.format(path) for a in arguments], env={"KUBECONFIG": str(hostile / "none")})
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [line] = done.stderr.splitlines()
    where = re.escape(f"{prefix}{path}:")
    if reader == "doctor --load":  # a snapshot is JSON, read as the doctor reads an API server's answers
        where = re.escape(f"{prefix}--load {path}:")
        assert re.fullmatch(rf"{where} (JSON nested deeper than 65 levels|not JSON)", line), line
    elif name == "oversized.yaml":
        size = "16777216 bytes" if reader == "doctor --kubeconfig" else "16 MiB: split it into smaller files"
        assert re.fullmatch(f"{prefix}(kubeconfig )?{re.escape(str(path))}: larger than {size}", line), line
    else:
        problem = {"laughs.yaml": "aliases expand to more than 100,000 nodes", "itself.yaml": "alias .*"}
        default = (
            "nests deeper than 64 levels .*|exceeded maximum nesting depth"  # libyaml's own limit, at 1,000
        )
        assert re.fullmatch(rf"{where}\d+:\d+: ({problem.get(name, default)})", line), line


def test_standard_input_is_bounded_too() -> None:
    done = mpijob("lint", "-", stdin="#" * (16 * MIB + 1))
    too_large = "mpijob lint: <stdin>: larger than 16 MiB: split it into smaller files\n"
    assert (done.returncode, done.stdout, done.stderr) == (2, "", too_large)
    done = mpijob("render", "-", stdin=HOSTILE["deep-block.yaml"])
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "mpijob render: <stdin>:66:129: nests deeper than 64 levels (the hook's limit)\n"


# --- names ---------------------------------------------------------------------------------------------

NAMESPACE = ("-n", "--namespace")
# Every flag that names something in a cluster, per command: (arguments before the flag, flag, after it).
FLAGS: list[tuple[str, list[str], tuple[str, ...], list[str]]] = [
    ("render", [], NAMESPACE, [str(PI)]),
    ("render", [], ("--gang-scheduling",), [str(PI)]),
    ("render", [], ("--cluster-domain",), [str(PI)]),
    ("convert", ["--to", "trainjob"], ("--gang-scheduling",), [str(PI)]),
    ("convert", ["--to", "trainjob", "--runtime", "pi"], NAMESPACE, [str(PI)]),
    ("convert", ["--to", "trainjob"], ("--runtime",), [str(PI)]),
    ("doctor", ["pi"], NAMESPACE, []),
]
# 254 characters: longer than any DNS name; 300: longer than a file name may be (is_file cannot answer).
BAD = ["Bad Name", "Bad_NS/x", "UPPER", "-leading-dash", "trailing-dash-", "dot..dot", "a" * 254, "a" * 300]


@pytest.mark.parametrize("bad", BAD, ids=lambda bad: bad[:16])
@pytest.mark.parametrize(
    ("command", "before", "flags", "after"),
    FLAGS,
    ids=[f"{c} {' '.join(b[:2])} {f[-1]}" for c, b, f, _ in FLAGS],
)
def test_a_bad_name_is_a_usage_error_naming_the_flag(
    tmp_path: Path, command: str, before: list[str], flags: tuple[str, ...], after: list[str], bad: str
) -> None:
    nowhere = {"KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    done = mpijob(command, *before, f"{flags[-1]}={bad}", *after, env=nowhere, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"mpijob {command}: argument {'/'.join(flags)}: {bad[:80]!r}"), line
    assert line.endswith(f": see mpijob {command} --help"), line


def test_the_table_has_every_flag_that_names_something_and_each_is_checked() -> None:
    """A command or flag added later without its argparse type fails here, not in a user's cluster."""
    named = {"namespace", "gang_scheduling", "cluster_domain", "runtime"}
    found = set()
    subcommands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command, parser in subcommands.choices.items():
        for action in parser._actions:
            if action.dest in named:
                assert getattr(action.type, "__module__", None) == arguments.__name__, (command, action.dest)
                found.add((command, tuple(action.option_strings)))
    assert found == {(command, flags) for command, _, flags, _ in FLAGS}


def test_a_namespace_may_be_as_long_as_a_label_and_no_longer() -> None:
    done = mpijob("render", "-n", "a" * 63, str(PI))
    assert done.returncode == 0, done.stderr
    assert f"# MPIJob {'a' * 63}/pi:" in done.stdout
    assert mpijob("render", "-n", "a" * 64, str(PI)).returncode == 2


def test_good_names_are_taken_as_the_hook_takes_them() -> None:
    done = mpijob("render", "--gang-scheduling", " volcano ", "--cluster-domain", "cluster.local.", str(PI))
    assert done.returncode == 0, done.stderr
    assert "kind: PodGroup" in done.stdout and ".svc.cluster.local slots=" in done.stdout
    done = mpijob("convert", "--to", "trainjob", "--gang-scheduling", "scheduler-plugins-scheduler", str(PI))
    assert done.returncode == 0, done.stderr
    assert "podGroupPolicy" in done.stdout
