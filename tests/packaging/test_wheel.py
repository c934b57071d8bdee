"""``pip install .`` puts ``kubectl-mpijob`` on PATH, and kubectl runs it as ``kubectl mpijob``: proven with
the wheel itself, not the editable install the rest of the suite uses.

The project is copied out of the repository (a build writes ``build/`` and ``*.egg-info`` next to its
sources), built offline with the backend from the test extras, and installed without its dependencies
into a fresh venv that sees this one's packages through a path file (not its ``.pth`` files, so not the
editable install). A few seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

KUBECTL = shutil.which("kubectl")


def _run(*argv: str | Path, env: dict[str, str] | None = None) -> str:
    """Run away from the checkout: ``python -c`` would import the ``app`` of its working directory."""
    command = [str(a) for a in argv]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=tempfile.gettempdir()
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv holding only the wheel built from this checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "app", source / "app", ignore=shutil.ignore_patterns("__pycache__"))
    pip = (sys.executable, "-m", "pip")
    _run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", tmp / "dist", source)
    wheels = sorted((tmp / "dist").glob("mpi_operator_hook-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    fresh = Path(
        _run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
    )
    # This venv's dependencies, as a plain path: its .pth files (the editable install's finder) stay unread.
    (Path(str(fresh).strip()) / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run(*pip, "--python", venv / "bin" / "python", "install", "--no-deps", "--no-index", wheels[0])
    return venv / "bin"


def test_the_wheel_installs_the_plugin_and_its_code(installed: Path) -> None:
    where = _run(installed / "python", "-c", "import app.cli.doctor.checks as m; print(m.__file__)")
    assert Path(where.strip()).is_relative_to(installed.parent), where  # the wheel's, not the checkout's
    usage = _run(installed / "kubectl-mpijob", "doctor", "--help")
    assert usage.startswith("usage: kubectl mpijob doctor [-h] [-n NAMESPACE]"), usage


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_finds_the_plugin_on_path(installed: Path) -> None:
    assert KUBECTL is not None
    # Only the fresh venv's bin and kubectl's own directory: the plugin can come from nowhere else.
    env = {**os.environ, "PATH": os.pathsep.join([str(installed), str(Path(KUBECTL).parent)])}
    plugins = _run(KUBECTL, "plugin", "list", env=env)
    assert str(installed / "kubectl-mpijob") in plugins, plugins
    usage = _run(KUBECTL, "mpijob", "doctor", "--help", env=env)
    assert usage.startswith("usage: kubectl mpijob doctor [-h] [-n NAMESPACE]"), usage
    assert "--list-checks" in usage


def test_the_wheel_carries_the_license_and_one_top_level_package(installed: Path) -> None:
    """LICENSE and NOTICE travel with the wheel, and its only import package is ``app`` (docs/operations.md,
    "The mpijob command": why it wants a venv of its own)."""
    probe = (
        "import importlib.metadata as m; d = m.distribution('mpi-operator-hook'); "
        "print(sorted(str(f) for f in d.files if 'licenses' in str(f))); "
        "print(sorted({str(f).split('/')[0] for f in d.files if str(f).endswith('.py')}))"
    )
    licenses, top_level = _run(installed / "python", "-c", probe).splitlines()
    assert "LICENSE" in licenses and "NOTICE" in licenses, licenses
    assert top_level == "['app']", top_level
