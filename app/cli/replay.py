"""``mpijob replay DIR --url URL``: send recorded hook requests to a hook and compare its answers.

What an operator runs before upgrading the hook: record requests in the cluster (``MPI_OPERATOR_RECORD_DIR``)
or take ``examples/requests/``, start the new version, replay. DIR is one record (a folder holding
``request.json``) or a folder of them, in the recorder's layout (``app.server.record``). Each answer is
compared with ``response.json`` (and the status with ``case.json``'s) after the volatile parts are left out:
SSH key material and times (``VOLATILE``), plus any pattern a case adds. Children are matched by kind and
name, as Metacontroller matches them, so a new order is no difference.

Settings: a case lists the ``MPI_OPERATOR_*`` settings its answer depends on. The hook at URL is taken to run
with the defaults, or with what ``--setting NAME=VALUE`` says; a case recorded under other settings is
skipped with a note (``--all`` sends it anyway).

Neither DIR nor URL is trusted (``app.cli.replay_io`` bounds what is read from both): a case that cannot be
read, or whose answer cannot be used, is reported ``broken`` on its own line and the others are still
compared; the exit code is then 2, as when the hook cannot be reached or no case could be compared (the
user guide's ``mpijob`` table). What is printed, as text or ``-o json``: ``app.cli.replay_report``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE
from app.cli.replay_compare import VALUE_CHARS, diff, without_volatile
from app.cli.replay_report import BROKEN, DIFFERS, SAME, SKIPPED, Report, Verdict, plural, say_error

# The recorder's layout (app.server.record), and the settings (app.settings) are imported when replay runs:
# building the parser for every `mpijob` command must stay cheap.

# --timeout's bound: one call to the hook, start to end.
MAX_TIMEOUT = 3600.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = commands.add_parser(
        "replay",
        help="send recorded hook requests to a hook and compare its answers",
        description="Send each recorded request in DIR (the layout of MPI_OPERATOR_RECORD_DIR and"
        " examples/requests) to the hook at URL and compare each answer with the recorded one, ignoring SSH"
        " key material, times and each case's other volatile parts. One line per case.",
        epilog="Exit codes: 0 all the same, 1 some differ, 2 unreadable DIR, a broken case (the others are"
        " still compared), unreachable URL or nothing compared.",
    )
    replay.add_argument("dir", metavar="DIR", help="a recorded request's folder, or a folder of them")
    replay.add_argument("--url", required=True, help="the hook's base URL, e.g. http://127.0.0.1:8080")
    replay.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting the hook at URL runs with, e.g. MPI_OPERATOR_GANG_SCHEDULING=volcano (repeat for"
        " more); default: the hook runs with the defaults",
    )
    replay.add_argument(
        "--all", action="store_true", help="also send cases recorded under other settings than the hook's"
    )
    replay.add_argument(
        "--token-file",
        metavar="FILE",
        help="a file holding the hook's caller token (its MPI_OPERATOR_CALLER_TOKEN_FILE), sent as"
        " 'Authorization: Bearer'; needed unless the hook runs with MPI_OPERATOR_CALLER_AUTH=off",
    )
    replay.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="text (default), or json: one object"
    )
    replay.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        help=f"seconds for each request, start to end of its answer (default 30, at most {MAX_TIMEOUT:g})",
    )


class Unusable(Exception):
    """DIR or URL cannot be used at all: exit 2 with an error line of what is wrong and what to do."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


@dataclass(frozen=True)
class Case:
    name: str
    hook: str
    request: bytes
    response: Any
    status: int
    settings: dict[str, str]
    volatile: tuple[str, ...]


@dataclass(frozen=True)
class Broken:
    """A case that cannot be read, or whose answer cannot be compared: reported, and the others go on."""

    name: str
    why: str


# What to do when DIR is not a folder of recorded requests.
_GIVE_A_FOLDER = (
    "give a folder of recorded requests (examples/requests, or the hook's MPI_OPERATOR_RECORD_DIR)"
)


def run(args: argparse.Namespace) -> int:
    from app.cli.replay_io import Unreachable, connect

    try:
        target = _target_settings(args.setting)
        headers = _headers(args.token_file)
        names, cases = load_cases(Path(args.dir))
        with connect(args.url.rstrip("/"), headers, args.timeout) as client:
            counts = _replay(names, cases, args, target, client)
    except Unreachable as err:
        say_error(f"cannot reach {args.url}: {err}", "start the hook, or give its address with --url")
        return EXIT_UNUSABLE
    except Unusable as err:
        say_error(err.problem, err.fix)
        return EXIT_UNUSABLE
    if counts[BROKEN]:
        say_error(
            f"{plural(counts[BROKEN], 'case')} could not be compared (see the cases marked broken)",
            "correct or remove them; the others were compared",
        )
        return EXIT_UNUSABLE
    if counts[SAME] + counts[DIFFERS] == 0:
        say_error(
            "no case was compared (see the cases marked skipped)",
            "give the hook's settings with --setting, or --all to send them anyway",
        )
        return EXIT_UNUSABLE
    return EXIT_FINDINGS if counts[DIFFERS] else EXIT_OK


def seconds(text: str) -> float:
    """``--timeout``: a positive number of seconds, at most ``MAX_TIMEOUT``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
    if not 0 < value <= MAX_TIMEOUT:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{text[:40]} is not more than 0 and at most {MAX_TIMEOUT} seconds")
    return value


def _target_settings(given: list[str]) -> dict[str, str]:
    from app.settings import answer_setting_defaults

    defaults = answer_setting_defaults()
    target = dict(defaults)
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or name not in defaults:
            raise Unusable(
                f"--setting {item!r} is not NAME=VALUE",
                f"give NAME=VALUE with NAME one of {', '.join(defaults)}",
            )
        target[name] = value.strip()
    return target


def _headers(token_file: str | None) -> dict[str, str]:
    """Each request's headers: JSON, no compression (the answer is counted as sent), the caller token."""
    from app.cluster.tokens import read_token

    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    if token_file is not None:
        try:
            # A pipe such as <(...) is fine: the user named it.
            headers["Authorization"] = f"Bearer {read_token(Path(token_file), '--token-file', pipes=True)}"
        except ValueError as err:  # names the file and the problem, never the content
            raise Unusable(str(err), "give the file that holds the hook's caller token") from None
    return headers


# --- reading cases ---------------------------------------------------------------------------------------


def load_cases(directory: Path) -> tuple[list[str], Iterator[Case | Broken]]:
    """The cases' names, and the cases, each read when its turn comes (only one is held at a time)."""
    from app.cli.replay_io import Refused, open_folder
    from app.server.record import REQUEST

    if str(directory) == "-":
        raise Unusable("DIR is a folder, so replay does not read standard input", _GIVE_A_FOLDER)
    try:
        top = open_folder(directory)
    except Refused as err:
        raise Unusable(f"{directory}: {err}", _GIVE_A_FOLDER) from None
    if _exists(top, REQUEST):  # DIR is one case's own folder
        return [directory.absolute().name], _cases(top, [None], directory.absolute().name)
    try:
        with os.scandir(top) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith(".") and _may_be_case(top, e))
    except OSError as err:
        os.close(top)
        raise Unusable(f"{directory}: cannot list it: {err.strerror}", _GIVE_A_FOLDER) from None
    if not names:
        os.close(top)
        raise Unusable(f"{directory}: no recorded request in it (a folder with {REQUEST})", _GIVE_A_FOLDER)
    return names, _cases(top, names, "")


def _exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    return True


def _may_be_case(top: int, entry: os.DirEntry[str]) -> bool:
    """A folder holding a request, or a link to a folder (which is then refused, not silently left out)."""
    from app.server.record import REQUEST

    if entry.is_symlink():
        return entry.is_dir()
    return entry.is_dir(follow_symlinks=False) and _exists(top, f"{entry.name}/{REQUEST}")


def _cases(top: int, names: Sequence[str | None], own_name: str) -> Iterator[Case | Broken]:
    from app.cli.replay_io import Refused, open_folder

    try:
        for name in names:
            try:
                folder = top if name is None else open_folder(name, top)
            except Refused as err:
                yield Broken(name or own_name, str(err))
                continue
            try:
                yield load_case(folder, name or own_name)
            finally:
                if folder != top:
                    os.close(folder)
    finally:
        os.close(top)


def load_case(folder: int, name: str) -> Case | Broken:
    from app.cli.replay_io import Refused, parse_json, read_case_file
    from app.server.record import CASE, REQUEST, RESPONSE

    try:
        request, response = (read_case_file(folder, file) for file in (REQUEST, RESPONSE))
        if request is None or response is None:
            raise Refused(f"cannot read {RESPONSE if request else REQUEST}: no such file")
        meta_bytes = read_case_file(folder, CASE)
        meta = parse_json(meta_bytes, CASE) if meta_bytes is not None else {}
        return _case(name, request, parse_json(response, RESPONSE), meta)
    except Refused as err:
        return Broken(name, str(err))


def _case(name: str, request: bytes, response: Any, meta: Any) -> Case:
    from app.cli.replay_io import Refused
    from app.server.record import CASE, HOOK_PATHS, VOLATILE

    if not isinstance(meta, dict):
        raise Refused(f"{CASE}: expected a JSON object")
    hook = meta.get("hook", "sync")
    settings = meta.get("settings", {})
    volatile = meta.get("volatile", [])
    status = meta.get("status", 200)
    if not isinstance(hook, str) or hook not in HOOK_PATHS:
        raise Refused(f"{CASE}: 'hook' must be sync or customize")
    if not isinstance(status, int) or not isinstance(settings, dict):
        raise Refused(f"{CASE}: 'status' must be a number and 'settings' a map")
    if not isinstance(volatile, list) or not all(isinstance(v, str) for v in volatile):
        raise Refused(f"{CASE}: 'volatile' must be a list of patterns")
    settings_text = {str(k): str(v) for k, v in settings.items()}
    return Case(
        name, hook, request, response, status, settings_text, tuple(dict.fromkeys((*VOLATILE, *volatile)))
    )


# --- sending and comparing -----------------------------------------------------------------------------


def _replay(
    names: list[str],
    cases: Iterator[Case | Broken],
    args: argparse.Namespace,
    target: dict[str, str],
    client: Any,
) -> dict[str, int]:
    """Each case's verdict, reported as it comes; the count of each verdict."""
    report = Report(args.output, max(len(name) for name in names))
    for case in cases:
        report.add(_verdict(case, args, target, client))
    report.finish()
    return report.counts


def _verdict(case: Case | Broken, args: argparse.Namespace, target: dict[str, str], client: Any) -> Verdict:
    if isinstance(case, Broken):
        return Verdict(case.name, BROKEN, why=case.why)
    if (needs := _unmet(case.settings, target)) and not args.all:
        why = (
            f"needs {needs}; the hook runs with other settings (--setting if it runs with these, --all to"
            " send it anyway)"
        )
        return Verdict(case.name, SKIPPED, why=why)
    outcome = _compare(case, args, client)
    if isinstance(outcome, Broken):
        return Verdict(case.name, BROKEN, why=outcome.why)
    return Verdict(case.name, DIFFERS, tuple(outcome)) if outcome else Verdict(case.name, SAME)


def _compare(case: Case, args: argparse.Namespace, client: Any) -> list[str] | Broken:
    """The differences between the recorded answer and the hook's, or why there is no answer to compare."""
    from app.cli.replay_io import Refused

    try:
        status, answer = _send(case, args, client)
    except Refused as err:
        return Broken(case.name, str(err))
    differences = diff(
        without_volatile(case.response, case.volatile), without_volatile(answer, case.volatile)
    )
    if status != case.status:
        differences.insert(0, f"HTTP status: {case.status} -> {status}")
    return differences


def _unmet(needed: dict[str, str], target: dict[str, str]) -> str:
    """The case's settings the target does not run with, as NAME=VALUE (empty when none)."""
    from app.settings import answer_setting_defaults

    defaults = answer_setting_defaults()
    wanted = {**defaults, **needed}
    unmet = sorted((name, value) for name, value in wanted.items() if target.get(name, "") != value)
    return " ".join(f"{name}={value or '(empty)'}" for name, value in unmet)


def _send(case: Case, args: argparse.Namespace, client: Any) -> tuple[int, Any]:
    """The hook's status and answer; ``Unusable`` when the hook cannot be used for any case."""
    from app.cli.replay_io import Refused, TooDeep, parse_json, post
    from app.server.record import HOOK_PATHS

    url, path = args.url.rstrip("/"), HOOK_PATHS[case.hook]
    status, raw = post(client, path, case.request, args.timeout)  # Unreachable: run() stops
    if status == 401:
        raise _refused(f"{url}{path} answered 401", args.token_file)
    if status in (404, 405):
        raise Unusable(
            f"{url}{path} answered {status}, as a server that is not the hook would",
            "give --url the hook's base URL, without /sync (e.g. http://127.0.0.1:8080)",
        )
    try:
        return status, parse_json(raw, "the answer")
    except TooDeep:
        raise
    except Refused:
        return status, {"(not JSON)": raw[:VALUE_CHARS].decode("utf-8", "replace")}


def _refused(answered: str, token_file: str | None) -> Unusable:
    """A 401: the hook refused the token sent (named by its file, never shown), or wants one."""
    if token_file is None:
        return Unusable(
            f"{answered}: the hook takes only callers with its token",
            "give the file of its MPI_OPERATOR_CALLER_TOKEN_FILE with --token-file FILE",
        )
    return Unusable(
        f"{answered}: the hook refused the token in {token_file}",
        "check that the file holds the token the hook reads from its MPI_OPERATOR_CALLER_TOKEN_FILE (the"
        " current one, if it was rotated) and that --url is that hook",
    )
