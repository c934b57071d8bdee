"""``scripts/build-neighbour``, which builds what the real-node tests run beside the hook (Volcano, the
coscheduler, Kueue, Trainer, JobSet, Kubernetes 1.37's control plane) from its Go module: a cached build
prints where it is without building again; a wrong name or a missing Go is said in one line with its own exit
code. The real builds and their use: tests/support/neighbour_builds.py, tests/node/, and
tests/support/kubernetes_releases.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import ROOT

SCRIPT = ROOT / "scripts" / "build-neighbour"


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False, env=env
    )


def test_an_unknown_neighbour_is_refused_with_the_known_ones() -> None:
    done = _run("kube", env=dict(os.environ))
    assert done.returncode == 2, done
    known = "jobset kubernetes kueue scheduler-plugins trainer volcano"
    assert done.stderr == f"build-neighbour: unknown neighbour kube (known: {known})\n"


def test_without_go_it_says_so(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "basename", "mkdir", "dirname", "sort", "paste", "printf"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    done = _run("kueue", env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert (done.returncode, done.stderr) == (3, "build-neighbour: needs Go (go is not on PATH)\n"), done


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go")
def test_a_cached_build_is_not_built_again(tmp_path: Path) -> None:
    """A program already in the cache (keyed by the release) is what the script names; the module's files
    come from the module cache (a download when not there)."""
    cached = tmp_path / "kueue-v0.17.0" / "kueue"
    cached.parent.mkdir()
    cached.write_text("#!/bin/sh\n")
    cached.chmod(0o755)
    done = _run("kueue", env={**os.environ, "MPI_HOOK_NEIGHBOURS_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    said = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert said["version"] == "v0.17.0"
    assert said["binary"] == str(cached)
    assert (Path(said["module"]) / "config" / "default" / "kustomization.yaml").is_file()
    assert cached.read_text() == "#!/bin/sh\n"


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go")
def test_module_alone_builds_nothing(tmp_path: Path) -> None:
    """``--module``: the release and the module's files only (what the docs tests read Kueue's CRDs from)."""
    done = _run("--module", "kueue", env={**os.environ, "MPI_HOOK_NEIGHBOURS_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert [line.split("=", 1)[0] for line in done.stdout.splitlines()] == ["version", "module"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go")
def test_kubernetes_names_each_cached_program(tmp_path: Path) -> None:
    """Kubernetes 1.37's control plane: three programs, one ``binary=`` line each, none built again."""
    cache = tmp_path / "kubernetes-v1.37.2"
    cache.mkdir()
    names = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
    for name in names:
        (cache / name).write_text("#!/bin/sh\n")
        (cache / name).chmod(0o755)
    done = _run("kubernetes", env={**os.environ, "MPI_HOOK_NEIGHBOURS_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    said = [line.split("=", 1) for line in done.stdout.splitlines()]
    assert [value for key, value in said if key == "binary"] == [str(cache / name) for name in names]
    assert dict(said)["version"] == "v1.37.2"
    assert (Path(dict(said)["module"]) / "go.mod").is_file()
