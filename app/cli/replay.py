"""``mpijob replay DIR --url URL``: send recorded hook requests to a hook and compare its answers.

What an operator runs before upgrading the hook: record requests in the cluster (``MPI_OPERATOR_RECORD_DIR``)
or take ``examples/requests/``, start the new version, replay. DIR is one record (a folder holding
``request.json``) or a folder of them, in the recorder's layout (``app.server.record``). Each answer is
compared with ``response.json`` (and the status with ``case.json``'s) after the volatile parts are left out:
SSH key material and times (``VOLATILE``), plus any pattern a case adds. Children are matched by kind and
name, as Metacontroller matches them, so a new order is no difference.

Settings: a case lists the ``MPI_OPERATOR_*`` settings its answer depends on. The hook at URL is taken to run
with the defaults, or with what ``--setting NAME=VALUE`` says; a case recorded under other settings is
skipped with a note (``--all`` sends it anyway). Exit codes: 0 every case compared is the same, 1 some
differ, 2 DIR or a case cannot be read, URL cannot be reached, or no case could be compared.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from app.cli.exits import EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE

# The recorder's layout (app.server.record), and the settings (app.settings) are imported when replay runs:
# building the parser for every `mpijob` command must stay cheap.

MAX_DIFF_LINES = 10
VALUE_CHARS = 60
ABSENT = object()


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = commands.add_parser(
        "replay",
        help="send recorded hook requests to a hook and compare its answers",
        description="Send each recorded request in DIR (the layout of MPI_OPERATOR_RECORD_DIR and"
        " examples/requests) to the hook at URL and compare each answer with the recorded one, ignoring SSH"
        " key material, times and each case's other volatile parts. One line per case.",
        epilog="Exit codes: 0 all the same, 1 some differ, 2 unreadable DIR, unreachable URL or nothing"
        " compared.",
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
    replay.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")


class Unusable(Exception):
    """DIR, a case or URL cannot be used: exit 2 with this message."""


@dataclass(frozen=True)
class Case:
    name: str
    hook: str
    request: bytes
    response: Any
    status: int
    settings: dict[str, str]
    volatile: tuple[str, ...]


@dataclass
class Tally:
    same: int = 0
    differ: int = 0
    skipped: int = 0
    lines: list[str] = field(default_factory=list)


def run(args: argparse.Namespace) -> int:
    try:
        target = _target_settings(args.setting)
        headers = _headers(args.token_file)
        cases = list(load_cases(Path(args.dir)))
        tally = _replay(cases, args, target, headers)
    except Unusable as err:
        print(f"mpijob: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(f"{tally.same} same, {tally.differ} differ, {tally.skipped} skipped")
    if tally.same + tally.differ == 0:
        print("mpijob: no case was compared (see the skipped cases above)", file=sys.stderr)
        return EXIT_UNUSABLE
    return EXIT_FINDINGS if tally.differ else EXIT_OK


def _target_settings(given: list[str]) -> dict[str, str]:
    from app.settings import answer_setting_defaults

    defaults = answer_setting_defaults()
    target = dict(defaults)
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or name not in defaults:
            raise Unusable(f"--setting {item!r}: expected NAME=VALUE with NAME one of {', '.join(defaults)}")
        target[name] = value.strip()
    return target


def _headers(token_file: str | None) -> dict[str, str]:
    """Each request's headers: JSON, and the caller token when one is given."""
    from app.settings import read_caller_token

    headers = {"Content-Type": "application/json"}
    if token_file is not None:
        try:
            token = read_caller_token(Path(token_file))
        except ValueError as err:
            raise Unusable(f"--token-file: {err}") from None
        headers["Authorization"] = f"Bearer {token.decode('latin-1')}"
    return headers


# --- reading cases ---------------------------------------------------------------------------------------


def load_cases(directory: Path) -> Iterator[Case]:
    from app.server.record import REQUEST

    if (directory / REQUEST).is_file():
        yield load_case(directory)
        return
    try:
        folders = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as err:
        raise Unusable(f"cannot read {directory}: {err.strerror or err}") from None
    found = [folder for folder in folders if (folder / REQUEST).is_file()]
    if not found:
        raise Unusable(f"{directory}: no recorded request in it (a folder with {REQUEST})")
    for folder in found:
        yield load_case(folder)


def load_case(folder: Path) -> Case:
    from app.server.record import CASE, HOOK_PATHS, REQUEST, RESPONSE, VOLATILE

    try:
        request = (folder / REQUEST).read_bytes()
        response = _json(folder / RESPONSE)
        meta = _json(folder / CASE) if (folder / CASE).is_file() else {}
    except OSError as err:
        raise Unusable(f"{folder}: cannot read {Path(err.filename or '').name}: {err.strerror}") from None
    except orjson.JSONDecodeError as err:
        raise Unusable(f"{folder}: not JSON: {err}") from None
    if not isinstance(meta, dict):
        raise Unusable(f"{folder / CASE}: expected a JSON object")
    hook = meta.get("hook", "sync")
    settings = meta.get("settings", {})
    volatile = meta.get("volatile", [])
    status = meta.get("status", 200)
    if not isinstance(hook, str) or hook not in HOOK_PATHS:
        raise Unusable(f"{folder / CASE}: 'hook' must be sync or customize")
    if not isinstance(status, int) or not isinstance(settings, dict):
        raise Unusable(f"{folder / CASE}: 'status' must be a number and 'settings' a map")
    if not isinstance(volatile, list) or not all(isinstance(v, str) for v in volatile):
        raise Unusable(f"{folder / CASE}: 'volatile' must be a list of patterns")
    return Case(
        folder.name,
        hook,
        request,
        response,
        status,
        {str(k): str(v) for k, v in settings.items()},
        tuple(dict.fromkeys((*VOLATILE, *volatile))),
    )


def _json(path: Path) -> Any:
    """A recorded answer or case, refused past the hook's nesting limit (no answer of the hook nests
    deeper than its parent may): comparing walks it, and orjson writes only 254 levels. No size limit:
    the answer to a sync of thousands of workers is tens of MB."""
    from app.cli.yamlio import TOO_DEEP
    from app.kube.depth import deeper_than

    raw = path.read_bytes()
    if deeper_than(raw):
        raise Unusable(f"{path}: {TOO_DEEP}")
    return orjson.loads(raw)


# --- sending and comparing -----------------------------------------------------------------------------


def _replay(
    cases: list[Case], args: argparse.Namespace, target: dict[str, str], headers: dict[str, str]
) -> Tally:
    import httpx

    tally = Tally()
    width = max(len(case.name) for case in cases)
    base = args.url.rstrip("/")
    with httpx.Client(base_url=base, timeout=args.timeout, headers=headers) as client:
        for case in cases:
            needs = _unmet(case.settings, target)
            if needs and not args.all:
                tally.skipped += 1
                print(f"skipped  {case.name:<{width}}  needs {needs}; the hook runs with other settings"
                      " (--setting if it runs with these, --all to send it anyway)")  # fmt: skip
                continue
            status, answer = _send(client, case, args.url)
            differences = diff(
                without_volatile(case.response, case.volatile), without_volatile(answer, case.volatile)
            )
            if status != case.status:
                differences.insert(0, f"HTTP status: {case.status} -> {status}")
            if differences:
                tally.differ += 1
                print(f"differs  {case.name:<{width}}  ({len(differences)} differences)")
                for line in differences[:MAX_DIFF_LINES]:
                    print(f"  {line}")
                if len(differences) > MAX_DIFF_LINES:
                    print(f"  ... and {len(differences) - MAX_DIFF_LINES} more")
            else:
                tally.same += 1
                print(f"same     {case.name}")
    return tally


def _unmet(needed: dict[str, str], target: dict[str, str]) -> str:
    """The case's settings the target does not run with, as NAME=VALUE (empty when none)."""
    from app.settings import answer_setting_defaults

    defaults = answer_setting_defaults()
    wanted = {**defaults, **needed}
    unmet = sorted((name, value) for name, value in wanted.items() if target.get(name, "") != value)
    return " ".join(f"{name}={value or '(empty)'}" for name, value in unmet)


def _send(client: Any, case: Case, url: str) -> tuple[int, Any]:
    import httpx

    from app.server.record import HOOK_PATHS

    path = HOOK_PATHS[case.hook]
    try:
        reply = client.post(path, content=case.request)
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        raise Unusable(f"cannot reach {url}: {type(err).__name__}: {err}") from None
    if reply.status_code == 401:
        raise Unusable(f"{url}{path} answered 401: pass the hook's caller token with --token-file FILE")
    if reply.status_code in (404, 405):
        raise Unusable(f"{url}{path} answered {reply.status_code}: is --url the hook's base URL?")
    try:
        return reply.status_code, orjson.loads(reply.content)
    except orjson.JSONDecodeError:
        return reply.status_code, {"(not JSON)": reply.text[:VALUE_CHARS]}


def without_volatile(value: Any, patterns: tuple[str, ...]) -> Any:
    """``value`` without the parts the patterns name (a copy)."""
    value = orjson.loads(orjson.dumps(value))
    for pattern in patterns:
        _drop(value, pattern.split("."))
    return value


def _drop(value: Any, segments: list[str]) -> None:
    head, rest = segments[0], segments[1:]
    if isinstance(value, dict):
        keys = [k for k in value if _matches(head, k, value[k])]
        for key in keys:
            if rest:
                _drop(value[key], rest)
            else:
                del value[key]
    elif isinstance(value, list):
        for index in reversed(range(len(value))):
            if _matches(head, str(index), value[index]):
                if rest:
                    _drop(value[index], rest)
                else:
                    del value[index]


def _matches(segment: str, key: str, item: Any) -> bool:
    if segment == "*":
        return True
    if segment.startswith("[") and segment.endswith("]") and "=" in segment:
        field_name, _, wanted = segment[1:-1].partition("=")
        return isinstance(item, dict) and str(item.get(field_name)) == wanted
    return segment == key


def diff(recorded: Any, replayed: Any, path: str = "") -> list[str]:
    """Each difference as ``path: recorded -> replayed``; children are matched by kind and name."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out = []
        for key in sorted(set(recorded) | set(replayed), key=str):
            where = f"{path}.{key}" if path and not str(key).startswith("[") else f"{path}{key}"
            old, new = recorded.get(key, ABSENT), replayed.get(key, ABSENT)
            if where == "children" and isinstance(old, list) and isinstance(new, list):
                out += diff(_by_identity(old), _by_identity(new), "children")
            else:
                out += diff(old, new, where)
        return out
    if isinstance(recorded, list) and isinstance(replayed, list):
        out = []
        for index in range(max(len(recorded), len(replayed))):
            out += diff(
                recorded[index] if index < len(recorded) else ABSENT,
                replayed[index] if index < len(replayed) else ABSENT,
                f"{path}[{index}]",
            )
        return out
    if recorded == replayed and type(recorded) is type(replayed):
        return []
    return [f"{path or '(answer)'}: {_show(recorded)} -> {_show(replayed)}"]


def _by_identity(children: list[Any]) -> dict[str, Any]:
    out = {}
    for index, child in enumerate(children):
        meta = child.get("metadata", {}) if isinstance(child, dict) else {}
        kind = child.get("kind", "?") if isinstance(child, dict) else "?"
        name = meta.get("name", f"#{index}") if isinstance(meta, dict) else f"#{index}"
        out[f"[{kind} {name}]"] = child
    return out


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = orjson.dumps(value).decode()
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 3] + "..."
