"""Every image the real node runs, built here with buildah from Debian (nothing can be pulled here).

- ``debian:bookworm`` and ``debian:trixie``: ``debootstrap --variant=minbase`` straight into a buildah
  container, committed under those names so that ``FROM`` finds them.
- ``python:3.11-slim``: a stand-in for the hook's base image (bookworm's python3 3.11 + pip, with
  ``EXTERNALLY-MANAGED`` removed), so that the project's ``Dockerfile`` builds unchanged.
- the hook, from the project's ``Dockerfile`` (recipes.py names the rest: MPI images, Metacontroller).

Builds run with ``--isolation chroot`` in a storage of their own outside the clone
(``~/.cache/mpi-operator-hook/node/``; override with ``MPI_HOOK_NODE_CACHE``), keyed by a hash of everything
that goes in, so a re-run (or CI's fresh clone) rebuilds only what changed.
PyPI is reached through a TLS-intercepting proxy whose CA is only in the host's bundle: ``/etc/ssl/certs``
is mounted read-only into each build step, never copied into an image.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
CACHE = Path(os.environ.get("MPI_HOOK_NODE_CACHE") or _USER_CACHE / "mpi-operator-hook" / "node")
MIRROR = os.environ.get("MPI_HOOK_NODE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PREFIX = "localhost/mpi-hook-node"
# What the Dockerfile copies (and its .dockerignore): the build context, without .venv, .node, ...
HOOK_CONTEXT = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md", "LICENSE", "NOTICE")


@dataclass(frozen=True)
class Recipe:
    """One image: a Containerfile, the files its context holds, and the names Pods use for it."""

    name: str
    containerfile: str
    context: dict[str, Path] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    after: tuple[str, ...] = ()  # recipes whose images its FROM lines use
    load: bool = True  # imported into the node (not a base image that only other builds use)
    # The project's own build: its Dockerfile with the files it copies (HOOK_CONTEXT) as context; it reaches
    # PyPI, so the host's CA bundle is mounted (not in the others: Debian's ca-certificates writes there).
    project: bool = False


def _digest(parts: list[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def _tree_bytes(directory: Path) -> list[bytes]:
    files = sorted(p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [str(p.relative_to(directory)).encode() + p.read_bytes() for p in files]


def _project_context(context: Path) -> None:
    for name in HOOK_CONTEXT:
        shutil.copy(ROOT / name, context / name)
    shutil.copytree(ROOT / "app", context / "app", ignore=shutil.ignore_patterns("__pycache__"))


class Builder:
    """buildah with its own storage; each image tagged ``PREFIX/<name>:<hash of its inputs>``."""

    def __init__(self, cache: Path = CACHE) -> None:
        self.cache = cache
        self.archives = cache / "archives"
        self.archives.mkdir(parents=True, exist_ok=True)
        self.keys: dict[str, str] = {}

    def buildah(self, *args: str, timeout: float = 900) -> str:
        argv = [
            "buildah",
            f"--root={self.cache / 'buildah'}",
            f"--runroot={self.cache / 'buildah-run'}",
            "--storage-driver=overlay",
            *args,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"buildah {' '.join(args[:3])} failed:\n{done.stderr[-3000:]}")
        return done.stdout.strip()

    def exists(self, tag: str) -> bool:
        try:
            self.buildah("inspect", "--type", "image", tag)
        except RuntimeError:
            return False
        return True

    def debian(self, suite: str) -> str:
        """``docker.io/library/debian:<suite>`` from debootstrap, once per cache; its tag."""
        tag = f"{PREFIX}/debian-{suite}:{_digest([suite.encode(), MIRROR.encode(), b'no debs'])}"
        if not self.exists(tag):
            container = self.buildah("from", "scratch")
            try:
                mount = self.buildah("mount", container)
                subprocess.run(
                    ["debootstrap", "--variant=minbase", suite, mount, MIRROR],
                    check=True, capture_output=True, timeout=900,
                )  # fmt: skip
                for deb in Path(mount, "var/cache/apt/archives").glob("*.deb"):
                    deb.unlink()  # debootstrap's downloads: ~50 MB in every image otherwise
                self.buildah("umount", container)
                self.buildah("config", "--cmd", "bash", container)
                self.buildah("commit", "--rm", container, tag)
            except BaseException:
                self.buildah("rm", container)
                raise
        self.buildah("tag", tag, f"docker.io/library/debian:{suite}")
        self.keys[f"debian-{suite}"] = tag
        return tag

    def key(self, recipe: Recipe) -> str:
        parts = [recipe.containerfile.encode(), *(self.keys[name].encode() for name in recipe.after)]
        parts += [name.encode() + path.read_bytes() for name, path in sorted(recipe.context.items())]
        if recipe.project:
            parts += _tree_bytes(ROOT / "app") + [(ROOT / name).read_bytes() for name in HOOK_CONTEXT]
        return _digest(parts)

    def build(self, recipe: Recipe) -> str:
        """Build ``recipe`` unless its tag exists; give every name in ``recipe.names`` to it too."""
        tag = f"{PREFIX}/{recipe.name}:{self.key(recipe)}"
        if not self.exists(tag):
            self._bud(recipe, tag)
            self._forget_older(recipe.name, tag)
        for name in recipe.names:
            self.buildah("tag", tag, name)
        self.keys[recipe.name] = tag
        return tag

    def _bud(self, recipe: Recipe, tag: str) -> None:
        with tempfile.TemporaryDirectory(prefix=f"build-{recipe.name}-", dir=self.cache) as scratch:
            context = Path(scratch)
            containerfile = context / "Containerfile"
            containerfile.write_text(recipe.containerfile)
            for name, path in recipe.context.items():
                shutil.copy(path, context / name)
            if recipe.project:
                _project_context(context)
            certs = ["-v", "/etc/ssl/certs:/etc/ssl/certs:ro"] if recipe.project else []
            self.buildah(
                "bud", "--isolation=chroot", "--layers=false", "--pull=never", *certs,
                "-f", str(containerfile), "-t", tag, str(context),
            )  # fmt: skip

    def _forget_older(self, name: str, keep: str) -> None:
        """Remove earlier builds of ``name`` from the cache (the storage grows by ~1 GB a build otherwise)."""
        listed = self.buildah("images", "--format", "{{.Name}}:{{.Tag}}").split()
        for image in listed:
            if image.startswith(f"{PREFIX}/{name}:") and image != keep:
                self.buildah("rmi", "--force", image)

    def archive(self, recipe: Recipe) -> Path:
        """A docker-archive of the built image, named as Pods ask for it (cached with the image)."""
        tag = self.keys[recipe.name]
        # The archive names the image (its first name): a renamed recipe needs a new archive, not a rebuild.
        named = _digest([recipe.names[0].encode()])
        path = self.archives / f"{recipe.name}-{tag.rsplit(':', 1)[1]}-{named}.tar"
        if not path.exists():
            for old in self.archives.glob(f"{recipe.name}-*.tar"):
                old.unlink()  # an earlier build's: ~1 GB each
            partial = path.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            self.buildah("push", tag, f"docker-archive:{partial}:{recipe.names[0]}")
            partial.rename(path)
        return path


def build_all(
    builder: Builder,
    suites: tuple[str, ...],
    recipes: list[Recipe],
    built: Callable[[Recipe, Path], None] = lambda recipe, archive: None,
) -> dict[str, Path]:
    """Build the Debian bases, then every recipe as soon as the images it starts FROM exist (in threads:
    the builds wait mostly on Debian's mirror and PyPI); ``built`` gets each archive as soon as it is
    written. Returns each recipe's docker-archive."""
    with ThreadPoolExecutor(max_workers=len(suites) + len(recipes)) as pool:
        done = {f"debian-{suite}": pool.submit(builder.debian, suite) for suite in suites}

        def build(recipe: Recipe) -> Path:
            for name in recipe.after:
                done[name].result()
            builder.build(recipe)
            archive = builder.archive(recipe)
            built(recipe, archive)
            return archive

        for recipe in recipes:
            done[recipe.name] = pool.submit(build, recipe)
        return {recipe.name: done[recipe.name].result() for recipe in recipes}
