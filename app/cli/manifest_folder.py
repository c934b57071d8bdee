"""The files ``mpijob lint`` reads for one argument: a file as it is given, a folder as ``kubectl apply -f``
takes one: its ``.yaml``, ``.yml`` and ``.json`` files in name order, its subfolders too with ``-R``, in the
same walk (a subfolder's files where its name sorts). Hidden files and folders are left out.

What a folder holds is hostile: a symbolic link is followed only to a file inside the folder given (never
out of it), a linked folder is never entered (so no loop either), and only regular files are read (a FIFO
named ``job.yaml`` would block forever); each file is then read bounded (``yamlio.read_text``). An entry
refused, or a folder with no file to read, comes back as a problem with its fix, for the caller's error line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

EXTENSIONS = (".yaml", ".yml", ".json")  # kubectl's, compared as kubectl does (case matters)


class Manifest(NamedTuple):
    """A file to read, or (``problem`` set) why ``path`` is not read and what to do."""

    path: str
    problem: str = ""
    fix: str = ""


def manifest_files(path: str, recursive: bool) -> Iterator[Manifest]:
    """``path`` itself, unless it is a folder: then the files in it that ``kubectl apply -f`` would take."""
    if path == "-" or not os.path.isdir(path):
        yield Manifest(path)
        return
    root = os.path.realpath(path)
    found, subfolders = False, False
    for entry in _walk(path, recursive):
        if isinstance(entry, Manifest):
            found = True
            yield entry
        elif entry.is_dir(follow_symlinks=False):
            subfolders = True
        else:
            taken = _taken(entry, root, path, recursive)
            if taken is not None:
                found = True
                yield taken
    if not found:
        fix = "give a folder of MPIJob manifests (.yaml, .yml or .json files), or the files themselves"
        if subfolders and not recursive:
            fix = "add -R (--recursive) to read its subfolders, as kubectl apply -R does"
        yield Manifest(path, f"{path}: no .yaml, .yml or .json file in it", fix)


def _walk(folder: str, recursive: bool) -> Iterator[os.DirEntry[str] | Manifest]:
    """Every entry not hidden, in name order, a subfolder's entries after its own (with ``recursive``);
    a folder that cannot be listed as a problem. Iterative: no recursion limit on deep trees."""
    stack = [iter(_listing(folder))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif isinstance(entry, Manifest):
            yield entry
        elif not entry.name.startswith("."):
            yield entry
            if recursive and entry.is_dir(follow_symlinks=False):
                stack.append(iter(_listing(entry.path)))


def _listing(folder: str) -> list[os.DirEntry[str] | Manifest]:
    try:
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda entry: entry.name)
        return [*listed]
    except OSError as err:
        return [Manifest(folder, f"cannot read {folder}: {err.strerror}", "check the folder's permissions")]


def _taken(entry: os.DirEntry[str], root: str, folder: str, recursive: bool) -> Manifest | None:
    """The entry as a file to read, a problem, or ``None``: not one kubectl takes (nor a link out of
    the folder that kubectl would take, or with ``recursive`` enter)."""
    if not entry.is_symlink():
        if not entry.name.endswith(EXTENSIONS):
            return None
        if entry.is_file(follow_symlinks=False):
            return Manifest(entry.path)
        fix = "remove it from the folder, or lint it by its own path"
        return Manifest(entry.path, f"{entry.path}: not a regular file", fix)
    target = os.path.realpath(entry.path)
    is_dir = os.path.isdir(target)
    if not (entry.name.endswith(EXTENSIONS) or (is_dir and recursive)):
        return None
    if os.path.commonpath([root, target]) != root:
        fix = "lint it by its own path, or copy it into the folder"
        return Manifest(entry.path, f"{entry.path}: a symbolic link out of {folder}", fix)
    if is_dir:
        return None  # the folder it names is inside: the walk reads it (kubectl enters no link either)
    if not os.path.isfile(target):
        what = "not a regular file" if os.path.exists(target) else "a broken symbolic link"
        return Manifest(entry.path, f"{entry.path}: {what}", "remove the link, or make it name a manifest")
    return Manifest(entry.path)
