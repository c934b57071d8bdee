"""The README's quick start, read from README.md and run as written, with kind and docker swapped out.

Only the commands that need tools this machine does not have are replaced, each by the harness's equivalent:
``kind create cluster`` (the node is already up), ``docker build`` (buildah builds the same Dockerfile) and
``kind load docker-image`` (import into containerd). Everything else runs in ``bash`` from the repository
root, with ``KUBECONFIG`` pointing at the cluster; ``kubectl apply -k deploy/...`` fetches Metacontroller's
published manifests from the local stand-in (tests/support/metacontroller_standin.py), its image is already
loaded.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SECTION = "## Quick start"
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
# (pattern, name of the replacement): a command starting with the pattern is not run, the replacement is.
REPLACED = (
    ("kind create cluster", "node"),
    ("docker build ", "build"),
    ("kind load docker-image ", "load"),
)


def quick_start_blocks() -> list[list[str]]:
    """The ``sh`` blocks of the README's quick start that talk to the cluster, one command per line."""
    return doc_blocks(README, SECTION)


def doc_blocks(page: Path, heading: str) -> list[list[str]]:
    """The ``sh`` blocks under ``heading`` of ``page`` (to the next ``## `` heading or the end) that talk to
    the cluster, one command per line."""
    text = page.read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    section = text[start : end if end >= 0 else len(text)]
    blocks = []
    for block in _BLOCK.findall(section):
        lines = [re.sub(r"\s+#.*$", "", line.strip()) for line in block.splitlines()]
        commands = [line for line in lines if line and not line.startswith("#")]
        if any(c.startswith(("kubectl", "kind")) for c in commands):
            blocks.append(commands)
    return blocks


def replacement(command: str) -> str | None:
    return next((name for prefix, name in REPLACED if command.startswith(prefix)), None)


@dataclass
class Runner:
    """Runs quick-start commands against one cluster; ``replacements`` does what kind/docker would."""

    kubeconfig: Path
    replacements: dict[str, Callable[[str], None]]
    transcript: list[tuple[str, str]]

    def run(self, command: str, timeout: float = 660) -> str:
        """Run one command (or its replacement); return its output, fail with it if it fails."""
        name = replacement(command)
        if name is not None:
            self.replacements[name](command)
            self.transcript.append((command, f"(replaced: {name})"))
            return ""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        self.transcript.append((command, done.stdout + done.stderr))
        if done.returncode != 0:
            raise AssertionError(f"quick start: `{command}` failed ({done.returncode}):\n{done.stderr}")
        return done.stdout
