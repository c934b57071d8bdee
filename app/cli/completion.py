"""``mpijob completion bash|zsh|fish``: shell completion written from the parser's own definitions, so a new
command, option or choice completes without anyone editing a script.

Ours, no library: shtab writes bash and zsh but not fish, and argcomplete runs the program on every Tab (this
one imports pydantic and the API models: a noticeable pause). The scripts here are static, generated once:
commands, their options, an option's choices (``-o json``, ``--fail-on``), and files where an argument or
an option's value is a file (``FILE``, ``DIR``). zsh runs the bash function through its ``bashcompinit``.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass

SHELLS = ("bash", "zsh", "fish")
# Values that are paths: complete files there, nothing (the shell's default) elsewhere.
_PATH_METAVARS = {"FILE", "DIR", "FILE|NAME"}


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...]
    path: bool  # its value is a file or folder


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: tuple[Option, ...]
    paths: bool  # a positional argument is a file or folder
    choices: tuple[str, ...] = ()  # a positional argument's choices (``completion SHELL``)


def _help(text: str | None) -> str:
    """The first clause of a help text, on one line, free of what the shells' syntax would take."""
    first = re.split(r"[;(]", (text or "").replace("\n", " "), maxsplit=1)[0].strip().rstrip(":,.")
    return re.sub(r"[^\w ./,=+-]", "", first)[:70]


def _options(parser: argparse.ArgumentParser) -> tuple[Option, ...]:
    found = []
    for action in parser._actions:  # argparse's definitions; stable since Python 3.2
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        choices = tuple(str(c) for c in action.choices) if action.choices else ()
        path = str(action.metavar or action.dest.upper()) in _PATH_METAVARS or action.dest == "kubeconfig"
        flags = tuple(action.option_strings)
        found.append(Option(flags, _help(action.help), action.nargs != 0, choices, path and not choices))
    return tuple(found)


def commands_of(parser: argparse.ArgumentParser) -> tuple[Command, ...]:
    """The top level (named ``""``) and each subcommand, as completion needs them."""
    found = [Command("", "", _options(parser), False)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                positional = [a for a in sub._actions if not a.option_strings]
                paths = any(str(a.metavar) in _PATH_METAVARS for a in positional)
                choices = tuple(str(c) for a in positional if a.choices for c in a.choices)
                found.append(Command(name, _help(helps.get(name)), _options(sub), paths, choices))
    return tuple(found)


def script(shell: str, parser: argparse.ArgumentParser, program: str = "mpijob") -> str:
    commands = commands_of(parser)
    if shell == "fish":
        return _fish(commands, program)
    bash = _bash(commands, program)
    if shell == "zsh":
        return f"# zsh (compinit loaded): the bash function, through zsh's bashcompinit\n{_ZSH}\n{bash}"
    return bash


_ZSH = "autoload -U +X bashcompinit && bashcompinit"


def _words(*groups: tuple[str, ...]) -> str:
    return shlex.quote(" ".join(word for group in groups for word in group))


def _bash(commands: tuple[Command, ...], program: str) -> str:
    top, subs = commands[0], commands[1:]
    names = "|".join(c.name for c in subs)
    lines = [
        f"# {program} completion for bash: source <({program} completion bash)",
        "_mpijob() {",
        '  [[ -n "${ZSH_VERSION-}" ]] && setopt localoptions ksharrays  # zsh: arrays from 0, as in bash',
        '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i',
        "  for ((i = 1; i < COMP_CWORD; i++)); do",
        f'    case "${{COMP_WORDS[i]}}" in {names}) cmd="${{COMP_WORDS[i]}}"; break ;; esac',
        "  done",
        '  local words="" paths=""',
        '  case "$cmd" in',
    ]
    for command in commands:
        lines += _bash_case(command, tuple(c.name for c in subs) if command is top else ())
    lines += [
        "  esac",
        '  if [[ "$cur" == -* || -z "$paths" ]]; then',
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "  else",
        '    COMPREPLY=($(compgen -f -- "$cur"))',
        "  fi",
        "}",
        f"complete -o default -F _mpijob {program}",
        "",
    ]
    return "\n".join(lines)


def _bash_case(command: Command, subcommands: tuple[str, ...]) -> list[str]:
    """The ``case`` branch of one command: its options' values, then the words it offers."""
    lines = [f'    "{command.name}")']
    flags = tuple(flag for option in command.options for flag in option.flags)
    free = [flag for option in command.options if option.takes_value for flag in option.flags]
    for option in command.options:
        if option.choices or option.path:
            action = (
                f'COMPREPLY=($(compgen -W {_words(option.choices)} -- "$cur"))'
                if option.choices
                else 'COMPREPLY=($(compgen -f -- "$cur"))'
            )
            lines.append(f'      case "$prev" in {"|".join(option.flags)}) {action}; return ;; esac')
            free = [flag for flag in free if flag not in option.flags]
    if free:  # a value nothing can guess (a port, a URL): offer nothing rather than the options
        lines.append(f'      case "$prev" in {"|".join(free)}) return ;; esac')
    words = _words(flags, subcommands, command.choices)
    lines.append(f"      words={words}; paths={'yes' if command.paths else ''} ;;")
    return lines


def _fish(commands: tuple[Command, ...], program: str) -> str:
    top = commands[0]
    lines = [f"# {program} completion for fish: {program} completion fish | source"]
    lines.append(f"complete -c {program} -f")
    for command in commands:
        when = "__fish_use_subcommand" if command is top else f"__fish_seen_subcommand_from {command.name}"
        if command is not top:
            describe = f"-a {command.name} -d '{command.help}'"
            lines.append(f"complete -c {program} -n '__fish_use_subcommand' {describe}")
        if command.paths:
            lines.append(f"complete -c {program} -n '{when}' -F")
        if command.choices:
            lines.append(f"complete -c {program} -n '{when}' -a {shlex.quote(' '.join(command.choices))}")
        for option in command.options:
            spec = " ".join(
                f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}" for flag in option.flags
            )
            value = ""
            if option.choices:
                value = f" -x -a {shlex.quote(' '.join(option.choices))}"
            elif option.path:
                value = " -r -F"
            elif option.takes_value:
                value = " -x"
            lines.append(f"complete -c {program} -n '{when}' {spec}{value} -d '{option.help}'")
    return "\n".join(lines) + "\n"
