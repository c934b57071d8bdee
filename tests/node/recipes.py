"""What the node's images contain: the hook's base stand-in, the hook, Metacontroller and the MPI images.

The MPI images follow upstream's example image recipe (its ``build/base`` Dockerfile, one Dockerfile per MPI
and the pi example), written out in docs/image-contract.md: sshd on port 2222 runnable as the non-root user
``mpiuser`` (uid 1000) with a user ``~/.sshd_config``, ``StrictHostKeyChecking no`` for the client, and the
pi program (examples/pi/pi.c) compiled in the image with the image's own MPI. Each is tagged as the examples
name it (``mpioperator/mpi-pi:<build>``), so ``examples/pi/*.yaml`` run unchanged.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.node.images import ROOT, Builder, Recipe, build_all

PI_SOURCE = ROOT / "examples" / "pi" / "pi.c"
SSHD_CONFIG = Path(__file__).parent / "image" / "sshd_config"
# What the README quick start builds (`docker build -t mpi-operator-hook:dev .`), as containerd names it.
HOOK_IMAGE = "docker.io/library/mpi-operator-hook:dev"
# What Metacontroller's published manifests run (deploy/metacontroller/), so nothing is pulled.
METACONTROLLER_IMAGE = "ghcr.io/metacontroller/metacontroller:v4.17.2"

PYTHON_STAND_IN = Recipe(
    name="python-3.11-slim",
    containerfile=(
        "# A stand-in for python:3.11-slim (which cannot be pulled here): Debian bookworm's Python 3.11.\n"
        "FROM docker.io/library/debian:bookworm\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip \\\n"
        " && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \\\n"
        " && rm /usr/lib/python3.11/EXTERNALLY-MANAGED \\\n"
        " && ln -s /usr/bin/python3 /usr/local/bin/python\n"
        'ENV LANG=C.UTF-8\nCMD ["python3"]\n'
    ),
    names=("docker.io/library/python:3.11-slim",),
    after=("debian-bookworm",),
    load=False,
)

HOOK = Recipe(
    name="hook",
    containerfile=(ROOT / "Dockerfile").read_text(),
    names=(HOOK_IMAGE,),
    after=(PYTHON_STAND_IN.name,),
    project=True,
)


def metacontroller(binary: Path) -> Recipe:
    """Metacontroller's static binary alone in an image, run as a non-root user."""
    return Recipe(
        name="metacontroller",
        containerfile=(
            "FROM scratch\nCOPY metacontroller /usr/bin/metacontroller\n"
            'USER 65532:65532\nENTRYPOINT ["/usr/bin/metacontroller"]\n'
        ),
        context={"metacontroller": binary},
        names=(METACONTROLLER_IMAGE,),
    )


_BASE = """\
# upstream's build/base (sshd on 2222, runnable as mpiuser), one MPI, and the pi program compiled with that
# MPI; the compiler and headers are removed in the same step (upstream uses a builder stage to that end).
FROM docker.io/library/debian:{suite}
COPY pi.c /tmp/pi.c
RUN apt-get update && apt-get install -y --no-install-recommends openssh-server openssh-client {packages} \\
 && apt-get install -y --no-install-recommends gcc libc6-dev {dev_packages} \\
 && useradd -m -u 1000 mpiuser \\
 && mpicc -O2 -o /home/mpiuser/pi /tmp/pi.c && rm /tmp/pi.c \\
 && apt-get purge -y --autoremove gcc libc6-dev {dev_packages} \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \\
 && mkdir -p /run/sshd \\
 && printf 'Host *\\n    StrictHostKeyChecking no\\n    UserKnownHostsFile /dev/null\\n    Port 2222\\n' \\
      > /etc/ssh/ssh_config.d/mpi.conf \\
 && printf 'Port 2222\\nStrictModes no\\n' > /etc/ssh/sshd_config.d/mpi.conf
{env}WORKDIR /home/mpiuser
# sshd as mpiuser (upstream's build/base/sshd_config)
COPY --chown=mpiuser sshd_config /home/mpiuser/.sshd_config
"""


@dataclass(frozen=True)
class MpiBuild:
    """One MPI image: the Debian suite and packages it comes from, its tag, and how its ranks report."""

    name: str
    suite: str
    packages: str
    dev_packages: str
    tag: str
    implementation: str
    env: str = ""

    def recipe(self) -> Recipe:
        text = _BASE.format(
            suite=self.suite, packages=self.packages, dev_packages=self.dev_packages, env=self.env
        )
        return Recipe(
            name=f"mpi-{self.name}",
            containerfile=text,
            context={"pi.c": PI_SOURCE, "sshd_config": SSHD_CONFIG},
            names=(f"docker.io/mpioperator/mpi-pi:{self.tag}",),
            after=(f"debian-{self.suite}",),
        )


MPI_BUILDS = {
    b.name: b
    for b in (
        MpiBuild("openmpi4", "bookworm", "openmpi-bin", "libopenmpi-dev", "openmpi", "OpenMPI"),
        MpiBuild("openmpi5", "trixie", "openmpi-bin", "libopenmpi-dev", "openmpi5", "OpenMPI"),
        # Debian's MPICH is ch4:ucx. All Pods of this node share one kernel (and boot id), so UCX takes
        # them for one host and tries shared memory across Pods; on a real cluster the workers talk TCP.
        # Trixie's 4.2: bookworm's 4.0.2 hung in MPI_Finalize in about one run in four
        # (docs/troubleshooting.md, "The job never finishes"; tests/node/test_node_mpich_runs.py).
        MpiBuild("mpich", "trixie", "mpich", "libmpich-dev", "mpich", "MPICH", env="ENV UCX_TLS=tcp,self\n"),
    )
}


def main(argv: list[str]) -> int:
    """``python -m tests.node.recipes DIR``: build the MPI images and put their docker-archives in DIR,
    for a cluster of your own (``kind load image-archive DIR/<file>``; MPI_HOOK_NODE_KUBECONFIG)."""
    if len(argv) != 1:
        print(main.__doc__)
        return 2
    target = Path(argv[0])
    target.mkdir(parents=True, exist_ok=True)
    builds = [build.recipe() for build in MPI_BUILDS.values()]
    for name, archive in build_all(Builder(), ("bookworm", "trixie"), builds).items():
        shutil.copy(archive, target / f"{name}.tar")
        print(target / f"{name}.tar")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
