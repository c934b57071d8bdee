"""How tests/golden keeps its expected files: whole, or as a JSON Patch onto the case they repeat.

Most cases repeat another with a few changes (a gang backend's case is the plain case with a PodGroup; a
running job's request holds the same observed children in many cases), so ``BASES`` names, per case folder,
the folder it is patched onto. Its ``request.json``, ``response.json`` or ``steps.yaml`` is then stored as
``request.patch.json`` (``steps.patch.yaml``): the base file, the SHA-256 of the base's content, and the
RFC 6902 operations that turn the base into this case's file; a reviewer reads exactly what differs. A patch
is kept only where it is smaller than the whole file.

Tests read every expected file through ``load`` or ``text``, which rebuild a patched one and fail loudly on
a missing base, a base whose content moved since the patch was made, or a patch that does not apply; the
comparisons stay whole-document. ``--update-golden`` (tests/conftest.py) first turns every patched file back
into its whole file (``expand``), lets the tests rewrite whole files, and at the end of the session makes the
patches again against the final bases (``compact``), so the order the tests ran in does not matter.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.json_patch import PatchError, apply, canonical, diff
from tests.support.paths import GOLDEN

SHARED_FILES = ("request.json", "response.json", "steps.yaml")
PLAIN_FIRST_SYNC, PLAIN_RUNNING = "openmpi-first-sync", "running-steady"

# A case folder -> the folder it repeats (both relative to tests/golden). A case is patched onto the plain
# case it changes; a gang backend's case onto the plain case it repeats under that backend (the one without
# its PodGroup declared onto Volcano's first sync, which has it); a gang lifecycle scenario onto Volcano's.
BASES: dict[str, str] = {
    **dict.fromkeys(
        (
            "intel-first-sync",
            "mpich-first-sync",
            "launcher-as-worker",
            "root-ssh-path-defaults",
            "suspended-at-creation",
            "invalid-new-job",
            "resumed",
            "volcano-first-sync",
            "scheduler-plugins-first-sync",
            "kubernetes-first-sync",
            "wire-sync-request-01-first-sync-no-children",
        ),
        PLAIN_FIRST_SYNC,
    ),
    **dict.fromkeys(
        (
            "worker-evicted",
            "managed-by-multikueue",
            "invalid-edit-running-job",
            "launcher-succeeded",
            "hook-v1-keys-no-customize",
            "launcher-backoff-limit",
            "scale-down",
            "scheduler-plugins-running-steady",
            "kubernetes-running-steady",
            "volcano-suspended",
            "wire-sync-request-02-running-all-children-exist",
        ),
        PLAIN_RUNNING,
    ),
    **dict.fromkeys(
        (
            "scheduler-plugins-finished-clean-running",
            "volcano-finished-clean-none",
            "wire-sync-request-03-launcher-succeeded-workers-terminating",
        ),
        "launcher-succeeded",
    ),
    "cluster-domain": "intel-first-sync",
    "wait-for-workers-ready": "wait-for-workers-pending",
    "volcano-wait-for-workers-pending": "wait-for-workers-pending",
    "volcano-wait-for-workers-ready": "wait-for-workers-ready",
    "volcano-podgroup-not-declared": "volcano-first-sync",
    "wire-sync-request-01-first-sync-no-children-volcano": "wire-sync-request-01-first-sync-no-children",
    **{
        f"lifecycle/gang-{backend}-{scenario}": f"lifecycle/gang-volcano-{scenario}"
        for backend, scenarios in {
            "scheduler-plugins": (
                "finish-all",
                "finish-none",
                "finish-running",
                "policy-edit",
                "suspend-resume",
                "wait-for-workers-ready",
            ),
            "kubernetes": ("finish-none", "finish-running", "suspend-resume", "wait-for-workers-ready"),
        }.items()
        for scenario in scenarios
    },
}
PATCH_KEYS = ("base", "base_sha256", "patch")
# What ``du -sb`` counts for a folder on ext4 (one block), so the budget reads the same on every filesystem.
FOLDER_BYTES = 4096


class GoldenError(AssertionError):
    """An expected file that cannot be read as stored: a failed test, with what to do about it."""


def patch_path(path: Path) -> Path:
    """Where ``path`` is stored as a patch: ``request.json`` -> ``request.patch.json``."""
    return path.with_name(f"{path.stem}.patch{path.suffix}")


def whole_path(patch: Path) -> Path:
    return patch.with_name(patch.name.replace(".patch.", ".", 1))


def _name(path: Path) -> str:
    root = GOLDEN.parent.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def parse(path: Path, text: str) -> Any:
    return yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)


def render(path: Path, value: Any) -> str:
    """The text a test writes for ``value`` (as tests/hook/test_golden.py and ``Golden`` always have)."""
    if path.suffix == ".yaml":
        return yaml.safe_dump(value, sort_keys=True, width=120)
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def digest(value: Any) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()


# --- reading ---------------------------------------------------------------------------------------------


def load(path: Path) -> Any:
    """The expected document at ``path``: the whole file, or its base with its patch applied."""
    return _resolve(path.resolve(), ())


def text(path: Path) -> str:
    """The text of ``path`` as a test writes it (a patched file rebuilt and rendered)."""
    return path.read_text() if path.is_file() else render(path, load(path))


def read_bytes(path: Path) -> bytes:
    """The bytes to post for a request file (tests/fixtures/wire or tests/golden, whole or patched)."""
    return path.read_bytes() if path.is_file() else text(path).encode()


def stored_as(path: Path) -> Path:
    """The file that holds ``path``'s content, to name in a failure: the whole file or its patch."""
    return patch_path(path) if not path.is_file() and patch_path(path).is_file() else path


def stored(name: str, root: Path = GOLDEN) -> list[Path]:
    """Every expected file called ``name`` under ``root``, whole or patched, by the path a test reads."""
    found = {*root.rglob(name), *(whole_path(p) for p in root.rglob(patch_path(Path(name)).name))}
    return sorted(found)


def _resolve(path: Path, seen: tuple[Path, ...]) -> Any:
    patch = patch_path(path)
    if path.is_file() and patch.is_file():
        raise GoldenError(f"{_name(path)} is stored twice, whole and as {patch.name}: run --update-golden")
    if path.is_file():
        return parse(path, path.read_text())
    if not patch.is_file():
        raise GoldenError(f"{_name(path)} is missing: run pytest --update-golden and review it")
    if path in seen:
        raise GoldenError(f"{_name(path)}: its bases go round in a circle: {[_name(p) for p in seen]}")
    stored_patch = parse(patch, patch.read_text())
    if not isinstance(stored_patch, dict) or sorted(stored_patch) != sorted(PATCH_KEYS):
        raise GoldenError(f"{_name(patch)}: not a golden patch (keys {', '.join(PATCH_KEYS)})")
    base = (patch.parent / str(stored_patch["base"])).resolve()
    if not base.is_relative_to(GOLDEN) or not (base.is_file() or patch_path(base).is_file()):
        raise GoldenError(f"{_name(patch)}: its base {stored_patch['base']} is missing")
    base_value = _resolve(base, (*seen, path))
    if digest(base_value) != stored_patch["base_sha256"]:
        raise GoldenError(
            f"{_name(patch)}: its base {_name(base)} changed since the patch was made: run --update-golden"
            " and review the diff"
        )
    try:
        return apply(base_value, stored_patch["patch"])
    except PatchError as error:
        raise GoldenError(f"{_name(patch)} does not apply to {_name(base)}: {error}") from None


# --- writing (--update-golden) ---------------------------------------------------------------------------


def write(path: Path, value: Any) -> None:
    """Store ``value`` whole at ``path`` (a test under --update-golden); ``compact`` shares it afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(path, value))
    patch_path(path).unlink(missing_ok=True)


def expand(root: Path = GOLDEN) -> None:
    """Every patched file back to its whole file: what the tests of an --update-golden run rewrite."""
    patched = {whole_path(p): load(whole_path(p)) for p in sorted(root.rglob("*.patch.*"))}
    for path, value in patched.items():
        write(path, value)


def compact(root: Path = GOLDEN, bases: dict[str, str] = BASES) -> None:
    """Patch every shared file onto its final base (the end of an --update-golden run)."""
    for path, content in plan(root, bases).items():
        if content is None:
            path.unlink()
        else:
            path.write_text(content)


def plan(root: Path = GOLDEN, bases: dict[str, str] = BASES) -> dict[Path, str | None]:
    """The files ``compact`` would write (their text) or delete (``None``): none in a tree it left."""
    changes: dict[Path, str | None] = {}
    for folder, base_folder in sorted(bases.items()):
        for name in SHARED_FILES:
            path = root / folder / name
            if path.is_file() or patch_path(path).is_file():
                changes |= _store(path, load(path), root / base_folder / name)
    for patch in sorted(root.rglob("*.patch.*")):
        path = whole_path(patch)
        if str(path.parent.relative_to(root)) not in bases:
            changes |= {path: render(path, load(path)), patch: None}
    return changes


def _store(path: Path, value: Any, base: Path) -> dict[Path, str | None]:
    """How ``path`` is kept: as its patch onto ``base`` where that is smaller, else whole."""
    base_value = load(base)
    relative = Path("..") / base.parent.name / base.name
    if base.parent.parent != path.parent.parent:
        raise GoldenError(f"{_name(path)}: its base {_name(base)} is not a sibling folder")
    stored_patch = {
        "base": relative.as_posix(),
        "base_sha256": digest(base_value),
        "patch": diff(base_value, value),
    }
    as_patch, whole = render(path, stored_patch), render(path, value)
    smaller = len(as_patch.encode()) < len(whole.encode())
    keep, drop = (patch_path(path), path) if smaller else (path, patch_path(path))
    content = as_patch if keep != path else whole
    changes: dict[Path, str | None] = {}
    if not keep.is_file() or keep.read_text() != content:
        changes[keep] = content
    if drop.is_file():
        changes[drop] = None
    return changes


def tree_bytes(root: Path = GOLDEN) -> int:
    """The tree's size as ``du -sb`` reports it on ext4: every file's bytes and a block per folder."""
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) + FOLDER_BYTES * len(folders)
