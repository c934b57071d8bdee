"""Which kubeconfig files, read bounded and merged as kubectl merges them (lightkube reads one file and takes
``$KUBECONFIG`` as one path): ``--kubeconfig``, else each file in ``$KUBECONFIG`` that exists, else
``~/.kube/config``. The first file that defines a cluster, user or context wins for that name, and the first
``current-context`` wins. Paths are resolved against the folder of the file that holds them, as client-go
resolves them before it merges, so the merged kubeconfig has no relative path left.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.cluster import execplugin
from app.cluster.untrusted import read_file
from app.kube.yamltext import InputError, load_one_text

# A kubeconfig is some KiB per cluster.
_KUBECONFIG_BYTES = 16 * 1024 * 1024
# The fields holding paths (client-go's ResolveLocalPaths; an exec command by ``execplugin.resolve``'s rule).
_PATHS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


class KubeconfigError(Exception):
    """The kubeconfig cannot be used; the message says which file, context or field, never a credential."""


def files(path: str | None, environ: Mapping[str, str]) -> list[Path]:
    if path:
        if not Path(path).is_file():
            raise KubeconfigError(f"--kubeconfig {path}: no such file")
        return [Path(path)]
    listed = [Path(p) for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if p.is_file()]
    default = Path(environ.get("HOME", str(Path.home()))) / ".kube" / "config"
    return [default] if default.is_file() else []


def merge(files: list[Path]) -> dict[str, Any]:
    """kubectl's merge: each name's first definition wins, and the first current-context. Each user's
    ``exec`` is set apart, under ``exec`` (``execplugin.py``: lightkube's model of it lacks fields)."""
    merged: dict[str, Any] = {"current-context": "", "clusters": {}, "users": {}, "contexts": {}}
    for file in files:
        config = _read_kubeconfig(file)
        merged["current-context"] = merged["current-context"] or str(config.get("current-context") or "")
        for kind in ("cluster", "user", "context"):
            for entry in _entries(config, f"{kind}s", file):
                name, body = str(entry.get("name")), entry.get(kind)
                if isinstance(body, dict) and name not in merged[f"{kind}s"]:
                    merged[f"{kind}s"][name] = _resolved(body, kind, file.resolve().parent)
    merged["exec"] = {name: user.pop("exec", None) for name, user in merged["users"].items()}
    return merged


def _resolved(body: dict[str, Any], kind: str, folder: Path) -> dict[str, Any]:
    """``body`` with its paths resolved against ``folder`` (an exec command by ``execplugin.resolve``'s rule),
    and a context that names no cluster naming ``""``, Go's zero value."""
    paths = _PATHS.get(kind, ())
    body = {k: str(folder / v) if k in paths and isinstance(v, str) and v else v for k, v in body.items()}
    spec = body.get("exec")
    if isinstance(spec, dict) and isinstance(spec.get("command"), str):
        body["exec"] = {**spec, "command": execplugin.resolve(spec["command"], folder)}
    return {"cluster": "", **body} if kind == "context" else body


def _read_kubeconfig(file: Path) -> dict[str, Any]:
    """One kubeconfig file, bounded, parsed by the CLI's one YAML loader (the hook's depth limit, aliases
    bounded)."""
    raw = read_file(file, _KUBECONFIG_BYTES, "kubeconfig")
    try:
        config = load_one_text(raw.decode("utf-8"), str(file)) or {}
    except UnicodeDecodeError:
        raise KubeconfigError(f"{file}: not a readable kubeconfig (not UTF-8 text)") from None
    except InputError as err:  # it names the file, line and column
        raise KubeconfigError(str(err)) from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"{file}: not a kubeconfig (not a mapping)")
    return config


def _entries(config: dict[str, Any], key: str, file: Path) -> list[dict[str, Any]]:
    entries = config.get(key) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f"{file}: {key} is not a list")
    return [entry for entry in entries if isinstance(entry, dict)]
