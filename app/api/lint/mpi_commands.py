"""Reading container command lines for the lint rules: which MPI launcher runs, with how many processes.

Handles ``command``/``args`` as written and a shell wrapping them (``sh -c "... mpirun -np 4 ..."``). A
process count that is not a literal number (``-np $N``) is "unknown", never a guess.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

LAUNCHERS = {"mpirun", "mpiexec", "mpiexec.hydra", "mpirun.openmpi", "mpiexec.openmpi", "horovodrun"}
SHELLS = {"sh", "bash", "dash", "zsh", "ash"}
PROCESS_FLAGS = {"-np", "-n", "--np", "--n", "-c"}
# Where one command of a shell script ends.
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})


@dataclass(frozen=True, slots=True)
class Launch:
    program: str  # e.g. "mpirun"
    flag: str  # the flag that set the process count, e.g. "-np"
    processes: int | None  # None: not set, or not a literal number
    oversubscribe: bool
    field: str  # "command" or "args": where the launcher word sits


@lru_cache(maxsize=4096)
def program_name(word: str) -> str:
    """``/usr/bin/mpirun`` → ``mpirun``: remembered, as every job of a file names the same few programs."""
    return PurePosixPath(word).name


def strings(value: Any) -> list[str]:
    """A list of words as written, or none if it is not a list (files are user input of any shape)."""
    return [str(w) for w in value if w is not None] if isinstance(value, list) else []


def _words(container: Mapping[str, Any]) -> tuple[list[str], int]:
    """command + args as strings, and how many of them came from ``command``."""
    command, args = strings(container.get("command")), strings(container.get("args"))
    return [*command, *args], len(command)


def _shell_script(words: list[str]) -> str | None:
    if not words or program_name(words[0]) not in SHELLS:
        return None
    for index, word in enumerate(words[1:-1], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word:
            return words[index + 1]
    return None


def _split(script: str) -> list[str]:
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return script.split()


def find_launch(container: Mapping[str, Any]) -> Launch | None:
    """The MPI launcher this container runs, directly or through a shell; None if none."""
    found = _launcher(container)
    return _launch(*found) if found is not None else None


def launch_line(container: Mapping[str, Any]) -> tuple[list[str], list[str]] | None:
    """The MPI launcher's command line (from the program to the first ``;``, ``&&``, ``|``...) and the
    words before it (a shell's ``VAR=value`` and ``export`` lines); None if the container runs none."""
    found = _launcher(container)
    if found is None:
        return None
    _, words, start, _ = found
    end = next((i for i in range(start + 1, len(words)) if words[i] in _SEPARATORS), len(words))
    return words[start:end], words[:start]


def _launcher(container: Mapping[str, Any]) -> tuple[str, list[str], int, int] | None:
    """(program, every word, the program's index, how many words came from ``command``)."""
    words, from_command = _words(container)
    script = _shell_script(words)
    if script is not None:
        # Everything sits in the script: point at the field that holds it.
        in_command = from_command > words.index(script)
        words = _split(script)
        from_command = len(words) + 1 if in_command else -1
    for index, word in enumerate(words):
        program = program_name(word)
        if program in LAUNCHERS:
            return program, words, index, from_command
    return None


def _field(index: int, from_command: int) -> str:
    return "command" if index < from_command else "args"


def _launch(program: str, words: list[str], start: int, from_command: int) -> Launch:
    """Read the process count after ``words[start]``; ``field`` is where it (or the launcher) is written."""
    flag, processes, where = "-np", None, start
    rest = words[start + 1 :]
    oversubscribe = any(w in ("--oversubscribe", "-oversubscribe") for w in rest)
    for offset, word in enumerate(rest):
        if word in _SEPARATORS:
            break
        name, _, inline = word.partition("=")
        if name in PROCESS_FLAGS and (program != "horovodrun" or name == "-np"):
            value = inline or (rest[offset + 1] if offset + 1 < len(rest) else "")
            flag, processes = name, int(value) if value.isdigit() else None
            where = start + 1 + offset
            break
    return Launch(program, flag, processes, oversubscribe, _field(where, from_command))


def mca_settings(container: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """MCA parameter names the container sets: env names (``env[i]``) and ``--mca`` / ``--prtemca``."""
    env_list = container.get("env")
    for index, env in enumerate(env_list if isinstance(env_list, list) else []):
        name = env.get("name") if isinstance(env, Mapping) else None
        if isinstance(name, str) and name.startswith(("OMPI_MCA_", "PRTE_MCA_")):
            yield name, f"env[{index}]"
    words, _ = _words(container)
    script = _shell_script(words)
    words = _split(script) if script is not None else words
    for index, word in enumerate(words[:-1]):
        if word in ("-mca", "--mca", "-gmca", "--gmca"):
            yield words[index + 1], "command"
        elif word in ("--prtemca", "-prtemca"):
            yield words[index + 1], "prtemca"


def mentions_sshd(container: Mapping[str, Any]) -> bool:
    words, _ = _words(container)
    return any("sshd" in word for word in words)
