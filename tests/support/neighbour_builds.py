"""The neighbours' programs as ``scripts/build-neighbour NAME`` builds them (pinned there; cached outside the
clone by release, so a warm run builds nothing): one call for the real node's neighbours (tests/node) and
for Kubernetes 1.37's control plane (tests/support/kubernetes_releases.py).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

BUILD = ROOT / "scripts" / "build-neighbour"


@dataclass(frozen=True)
class Built:
    """What the script printed: the release, each cached program by name, the module's files."""

    name: str
    version: str
    programs: dict[str, Path]
    module: Path

    @property
    def binary(self) -> Path:
        """The program of a neighbour that has one."""
        (program,) = self.programs.values()
        return program


def build(name: str) -> Built:
    """Run the project's build script (a no-op on a warm cache); RuntimeError with its words if it fails."""
    done = subprocess.run([str(BUILD), name], capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        said = done.stderr[-2000:]
        raise RuntimeError(f"scripts/build-neighbour {name} failed ({done.returncode}): {said}")
    lines = [line.split("=", 1) for line in done.stdout.splitlines() if "=" in line]
    said = dict(lines)
    programs = {Path(value).name: Path(value) for key, value in lines if key == "binary"}
    return Built(name, said["version"], programs, Path(said["module"]))
