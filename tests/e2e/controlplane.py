"""Start a real control plane on loopback: etcd, kube-apiserver, kube-controller-manager, Metacontroller.

There is no kubelet, scheduler or kube-proxy: Pods are stored, never run (the tests play kubelet). Every
port is a free loopback port, every file lives in the run's own temporary directory, and exactly the
processes started here are stopped (by PID, see processes.py). Start-up takes ~5 s on the 2-core dev machine.

Where the binaries come from (first that exists):
  1. ``MPI_HOOK_E2E_BIN_DIR``: a directory holding etcd, kube-apiserver, kube-controller-manager and
     metacontroller;
  2. ``MPI_HOOK_E2E_TARBALL_DIR`` (default ``<repo>/../shared/e2e``, or ``<repo>/../../shared/e2e`` for a
     git worktree one level deeper): ``control-plane-linux-amd64.tar.xz``,
     extracted once into a cache directory named after its SHA-256 (``$XDG_CACHE_HOME`` or /tmp).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import ssl
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.e2e.kube import Kube
from tests.e2e.pki import Pki, make_pki
from tests.e2e.processes import Processes, Started, free_port, http_ok, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "metacontroller")
TARBALL = "control-plane-linux-amd64.tar.xz"
METACONTROLLER_CRDS = "metacontroller-crds-v1.yaml"
SERVICE_CIDR = "10.0.0.0/24"


def tarball_dir() -> Path:
    """``MPI_HOOK_E2E_TARBALL_DIR``, else ``shared/e2e`` next to the repo (or next to its parent)."""
    given = os.environ.get("MPI_HOOK_E2E_TARBALL_DIR")
    if given:
        return Path(given)
    candidates = [ROOT.parent / "shared" / "e2e", ROOT.parent.parent / "shared" / "e2e"]
    return next((c for c in candidates if (c / TARBALL).is_file()), candidates[0])


def _has_binaries(directory: Path, binaries: tuple[str, ...] = BINARIES) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in binaries)


def _cache_root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "mpi-operator-hook" if xdg else Path(tempfile.gettempdir())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _extract_safely(archive: tarfile.TarFile, into: Path) -> None:
    """Extract with the ``data`` filter where this Python has it (3.11.4 and later); before that, refuse
    a member that is absolute, climbs out with ``..``, or is a link, device or FIFO, as the filter would."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(into, filter="data")
        return
    for member in archive.getmembers():
        path = Path(member.name)
        if path.is_absolute() or ".." in path.parts or not (member.isfile() or member.isdir()):
            raise RuntimeError(f"{archive.name}: refusing to extract {member.name!r}")
    archive.extractall(into)


def extract_once(
    tarball: Path, binaries: tuple[str, ...] = BINARIES, prefix: str = "mpi-hook-e2e-bin"
) -> Path:
    """Extract into ``<cache>/<prefix>-<sha>`` once; a concurrent extraction loses the rename race."""
    target = _cache_root() / f"{prefix}-{_sha256(tarball)[:16]}"
    if _has_binaries(target, binaries):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
    with tarfile.open(tarball, "r:xz") as archive:
        _extract_safely(archive, staging)
    found = next((p.parent for p in staging.rglob(binaries[0])), staging)
    for name in binaries:
        (found / name).chmod(0o755)
    try:
        found.rename(target)
    except OSError:
        if not _has_binaries(target, binaries):
            raise
    return target


def find_binaries() -> tuple[Path | None, str]:
    """The directory of binaries to use, or None and the reason there is none."""
    given = os.environ.get("MPI_HOOK_E2E_BIN_DIR")
    if given:
        if _has_binaries(Path(given)):
            return Path(given), ""
        return None, f"MPI_HOOK_E2E_BIN_DIR={given} lacks one of {', '.join(BINARIES)}"
    tarball = tarball_dir() / TARBALL
    if tarball.is_file():
        return extract_once(tarball), ""
    return None, f"no MPI_HOOK_E2E_BIN_DIR, no MPI_HOOK_E2E_KUBECONFIG and no {tarball}"


def metacontroller_crds(bin_dir: Path) -> Path | None:
    """Metacontroller's own CRDs: next to the binaries, else next to the tarball."""
    for candidate in (bin_dir / METACONTROLLER_CRDS, tarball_dir() / METACONTROLLER_CRDS):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Options:
    """Where the apiserver listens and whether a real node joins. The defaults: loopback, no node."""

    address: str = "127.0.0.1"
    service_cidr: str = SERVICE_CIDR
    # A kubelet will join (tests/node): Node authorization, ServiceAccount tokens, `kubernetes` endpoints.
    node: bool = False
    # More kube-apiserver flags, e.g. an audit log (bench/scale_bench.py).
    apiserver_args: tuple[str, ...] = ()
    # Feature gates for the apiserver and the controller-manager (tests/node gives them to its kubelet and
    # scheduler too), e.g. "GenericWorkload=true,GangScheduling=true".
    feature_gates: str = ""

    @property
    def kubernetes_service_ip(self) -> str:
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))


@dataclass
class ControlPlane:
    """A running control plane: its admin kubeconfig, API address and TLS files."""

    workdir: Path
    kubeconfig: Path
    server: str
    pki: Pki
    processes: Processes
    bin_dir: Path
    options: Options = field(default_factory=Options)
    metacontroller: Started | None = None
    metacontroller_health: str = ""
    # etcd's client URL and the apiserver's port: kept across an upgrade (``upgrade``).
    etcd: str = ""
    port: int = 0

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return context

    def start_metacontroller(self, flags: Sequence[str] | None = None) -> None:
        """(Re)start Metacontroller; ready when its /readyz answers. ``flags`` replace the tests' own
        tuning (fast discovery, 100 qps, info logs); the kubeconfig and loopback ports are always set."""
        health, metrics = free_port(), free_port()
        tuning = [
            "--discovery-interval=5s",
            # Default 5 qps throttles a test that runs many jobs at once; users may raise it too.
            "--client-go-qps=100",
            "--client-go-burst=200",
            "--zap-log-level=info",
        ]
        self.metacontroller = self.processes.start(
            "metacontroller",
            [
                str(self.bin_dir / "metacontroller"),
                f"--kubeconfig={self.kubeconfig}",
                f"--metrics-address=127.0.0.1:{metrics}",
                f"--health-probe-bind-address=127.0.0.1:{health}",
                *(tuning if flags is None else flags),
            ],
        )
        self.metacontroller_health = f"http://127.0.0.1:{health}"
        wait_until_ready(
            self.metacontroller, http_ok(f"{self.metacontroller_health}/readyz"), 30, "metacontroller"
        )

    def stop_metacontroller(self) -> None:
        if self.metacontroller is not None:
            self.processes.stop(self.metacontroller)
            self.metacontroller = None

    def stop(self) -> None:
        self.processes.stop_all()


def write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path) -> None:
    """A kubeconfig for one client certificate."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: e2e\n  cluster:\n    server: {server}\n"
        f"    certificate-authority: {ca}\n"
        f"users:\n- name: admin\n  user:\n    client-certificate: {cert}\n"
        f"    client-key: {key}\n"
        "contexts:\n- name: e2e\n  context:\n    cluster: e2e\n    user: admin\n"
        "current-context: e2e\n"
    )


def _start_etcd(plane: ControlPlane) -> str:
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    etcd = plane.processes.start(
        "etcd",
        [
            str(plane.bin_dir / "etcd"),
            "--name=e2e",
            f"--data-dir={plane.workdir / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=e2e=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
    )
    wait_until_ready(etcd, http_ok(f"{url}/health"), 30, "etcd")
    return url


def _policy(plane: ControlPlane) -> list[str]:
    """Without a node: RBAC only; loopback cannot be the `kubernetes` Service's endpoint, and Pods may be
    created before their namespace's ServiceAccount. With one: what a kubelet and in-cluster clients need."""
    if not plane.options.node:
        return [
            "--authorization-mode=RBAC",
            "--endpoint-reconciler-type=none",
            "--disable-admission-plugins=ServiceAccount",
        ]
    return [
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        # Else `kubectl logs`/`exec` resolve the node's name through the host's DNS.
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={plane.pki.admin_cert}",
        f"--kubelet-client-key={plane.pki.admin_key}",
    ]


def feature_gate_flags(options: Options) -> list[str]:
    return [f"--feature-gates={options.feature_gates}"] if options.feature_gates else []


def _start_apiserver(plane: ControlPlane, etcd: str, port: int) -> None:
    pki, address = plane.pki, plane.options.address
    apiserver = plane.processes.start(
        "kube-apiserver",
        [
            str(plane.bin_dir / "kube-apiserver"),
            f"--etcd-servers={etcd}",
            f"--bind-address={address}",
            f"--advertise-address={address}",
            f"--secure-port={port}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-key-file={pki.sa_public}",
            f"--service-account-signing-key-file={pki.sa_private}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-cluster-ip-range={plane.options.service_cidr}",
            *_policy(plane),
            *feature_gate_flags(plane.options),
            *plane.options.apiserver_args,
            f"--cert-dir={plane.workdir / 'apiserver-certs'}",
            "--v=0",
        ],
    )
    wait_until_ready(apiserver, http_ok(f"{plane.server}/readyz", plane.ssl_context()), 60, "kube-apiserver")


def _start_controller_manager(plane: ControlPlane) -> None:
    pki, port = plane.pki, free_port()
    manager = plane.processes.start(
        "kube-controller-manager",
        [
            str(plane.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={plane.kubeconfig}",
            "--controllers=*",
            *feature_gate_flags(plane.options),
            "--use-service-account-credentials=false",
            "--leader-elect=false",
            f"--service-account-private-key-file={pki.sa_private}",
            f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}",
            f"--cluster-signing-key-file={pki.ca_key}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={plane.workdir / 'kcm-certs'}",
            "--v=0",
        ],
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    wait_until_ready(
        manager, http_ok(f"https://127.0.0.1:{port}/healthz", insecure), 60, "kube-controller-manager"
    )


def start_control_plane(bin_dir: Path, workdir: Path, options: Options | None = None) -> ControlPlane:
    """Start etcd, kube-apiserver and kube-controller-manager (Metacontroller comes after its CRDs)."""
    options = options or Options()
    workdir.mkdir(parents=True, exist_ok=True)
    ips = tuple(dict.fromkeys(("127.0.0.1", options.address, options.kubernetes_service_ip)))
    pki = make_pki(workdir / "pki", ips)
    port = free_port()
    server = f"https://{options.address}:{port}"
    plane = ControlPlane(workdir, workdir / "kubeconfig", server, pki, Processes(workdir), bin_dir, options)
    write_kubeconfig(plane.kubeconfig, server, pki.ca_cert, pki.admin_cert, pki.admin_key)
    plane.port = port
    try:
        plane.etcd = _start_etcd(plane)
        _start_apiserver(plane, plane.etcd, port)
        _start_controller_manager(plane)
    except BaseException:
        plane.stop()
        raise
    return plane


def with_metacontroller_crds(plane: ControlPlane) -> Kube:
    """A client of ``plane``, with Metacontroller's CRDs installed (Metacontroller starts once its
    CompositeControllers are there)."""
    kube = Kube(httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30), plane.kubeconfig)
    crds = metacontroller_crds(plane.bin_dir)
    if crds is None:
        raise RuntimeError("metacontroller-crds-v1.yaml not found next to the binaries or the tarball")
    kube.kubectl("apply", "--server-side", "-f", str(crds))
    return kube


def upgrade(plane: ControlPlane, bin_dir: Path, options: Options) -> None:
    """The apiserver and the controller-manager stopped and started again from ``bin_dir`` with ``options``,
    on the same etcd and address: a cluster upgrade as an operator does it, one component at a time."""
    for name in ("kube-apiserver", "kube-controller-manager"):
        for started in [s for s in plane.processes.started if s.name == name]:
            plane.processes.stop(started)
    plane.bin_dir, plane.options = bin_dir, options
    _start_apiserver(plane, plane.etcd, plane.port)
    _start_controller_manager(plane)
