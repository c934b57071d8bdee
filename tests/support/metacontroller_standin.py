"""Metacontroller's published manifests, served locally to ``kubectl kustomize`` (tests/manifests/README.md).

``deploy/components/metacontroller/`` installs Metacontroller from GitHub (its ``manifests/production`` at
v4.17.2). Tests cannot reach GitHub, so they serve a stand-in with the same objects as a local git repository
and point git's ``url.<local>.insteadOf`` at it: ``kubectl kustomize deploy/`` then runs unchanged.

The folders whose tests build ``deploy/`` take the session fixture ``served_metacontroller`` in their
conftest.py (tests/docs, tests/packaging, tests/e2e, tests/node); the rest of the suite never builds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import paths

STANDIN = paths.TESTS / "manifests" / "metacontroller-production"
REMOTE = "https://github.com/metacontroller/"
REF = "v4.17.2"
MANIFESTS = ("namespace.yaml", "rbac.yaml", "metacontroller.yaml")
CRDS_FILE = "metacontroller-crds-v1.yaml"
SERVED = pytest.StashKey[Path]()  # the stand-in's folder, once served in this session
# kustomize labels everything its production kustomization lists (commonLabels).
KUSTOMIZATION = """\
commonLabels:
  app.kubernetes.io/name: metacontroller
resources:
"""


def _git(repo: Path, *args: str) -> None:
    identity = ("-c", "user.name=tests", "-c", "user.email=tests@localhost", "-c", "commit.gpgsign=false")
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True, timeout=60)


def serve(workdir: Path, crds: Path | None = None) -> dict[str, str]:
    """Build the stand-in repository under ``workdir``; return the environment that makes git (and so
    kustomize) fetch ``https://github.com/metacontroller/metacontroller`` from it. With ``crds``
    (Metacontroller's real CRDs) the install is complete enough to run; without, it only builds."""
    repo = workdir / "metacontroller"
    production = repo / "manifests" / "production"
    production.mkdir(parents=True)
    files = list(MANIFESTS)
    for name in MANIFESTS:
        shutil.copy(STANDIN / name, production / name)
    if crds is not None:
        shutil.copy(crds, production / CRDS_FILE)
        files.insert(2, CRDS_FILE)
    (production / "kustomization.yaml").write_text(KUSTOMIZATION + "".join(f"- {f}\n" for f in files))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "stand-in")
    _git(repo, "tag", REF)
    (workdir / "metacontroller.git").symlink_to(repo)  # kustomize may ask for either name
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.file://{workdir}/.insteadOf",
        "GIT_CONFIG_VALUE_0": REMOTE,
    }


def install_in_environ(workdir: Path, crds: Path | None = None) -> None:
    """``serve`` for this process and every ``kubectl`` it starts."""
    os.environ.update(serve(workdir, crds))


@pytest.fixture(scope="session", autouse=True)
def served_metacontroller(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``install_in_environ`` once a session, with Metacontroller's real CRDs when the e2e binaries are here
    (the real-node quick start installs them from deploy/). Each folder's conftest.py that takes this fixture
    makes a fixture of its own: the first to run serves the stand-in, the others find it served."""
    if SERVED not in request.config.stash:
        # Imported here: only a session that builds deploy/ looks for the binaries (without extracting them).
        from tests.e2e.controlplane import metacontroller_crds, tarball_dir

        workdir = tmp_path_factory.mktemp("metacontroller-standin")
        given = os.environ.get("MPI_HOOK_E2E_BIN_DIR")
        install_in_environ(workdir, metacontroller_crds(Path(given) if given else tarball_dir()))
        request.config.stash[SERVED] = workdir
    return request.config.stash[SERVED]
