"""``scripts/make-venv``, which ``./scripts/serve`` and ``./scripts/test`` run first: on a python3 without
ensurepip (Debian's own, without the python3-venv package) it says so in one line and creates nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def make_venv(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """scripts/make-venv in a scratch checkout, with this test's python3 first on PATH."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "make-venv", tmp_path / "scripts" / "make-venv")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [str(tmp_path / "scripts" / "make-venv")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
        cwd=tmp_path,
    )


def test_serve_and_test_create_their_venv_with_make_venv() -> None:
    for script in ("serve", "test"):
        lines = (ROOT / "scripts" / script).read_text().splitlines()
        assert "./scripts/make-venv" in lines
        assert not any("-m venv" in line for line in lines), f"scripts/{script} creates .venv itself"


def test_without_ensurepip_make_venv_names_the_package_in_one_line(tmp_path: Path) -> None:
    # Python's own import machinery fails on ensurepip, as it does where python3-venv is not installed.
    blocked = tmp_path / "no-ensurepip" / "ensurepip"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("no ensurepip here")\n')

    done = make_venv(tmp_path, {"PYTHONPATH": str(blocked.parent)})

    assert done.returncode == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert "python3-venv" in line and "apt-get install" in line
    assert "Traceback" not in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_with_ensurepip_make_venv_creates_a_venv_with_pip(tmp_path: Path) -> None:
    done = make_venv(tmp_path, {})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".venv" / "bin" / "pip").exists()


def test_ci_runs_the_suite_under_the_oldest_python_the_readme_claims() -> None:
    """pyproject's requires-python (which the README's version table repeats, tests/packaging/test_release.py)
    is the minor version of Debian 12's /usr/bin/python3, and .ci/run runs the fast folders under that
    Python."""
    import tomllib

    floor = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert floor == ">=3.11"
    assert "exec ./.ci/oldest-python" in (ROOT / ".ci" / "run").read_text().splitlines()
    oldest = (ROOT / ".ci" / "oldest-python").read_text()
    assert "PYTHON=/usr/bin/python3" in oldest.splitlines()
    if not os.path.exists("/usr/bin/python3"):
        return  # not a Debian machine: CI's is
    done = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["3", "11"]
