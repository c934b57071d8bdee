"""TLS material for a throw-away control plane, made with ``cryptography`` (ECDSA P-256: fast to generate).

One CA signs the apiserver's serving certificate (127.0.0.1, localhost, the ``kubernetes`` Service IP) and the
admin client certificate (``O=system:masters``: cluster-admin under RBAC). A separate key pair signs
service-account tokens. Everything lives in the run's temporary directory and dies with it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = timedelta(days=1)
# The apiserver's addresses: loopback and the first address of the Service CIDR (the `kubernetes` Service).
SERVING_IPS = ("127.0.0.1", "10.0.0.1")


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_public: Path
    sa_private: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str, org: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(parts)


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(_key_pem(key))
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _leaf(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    ips: tuple[str, ...] = SERVING_IPS,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    builder = _builder(subject, ca[0].subject, key.public_key()).add_extension(
        x509.ExtendedKeyUsage([usage]), critical=False
    )
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        names: list[x509.GeneralName] = [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
            x509.DNSName("kubernetes.default.svc.cluster.local"),
            *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips),
        ]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca[1], hashes.SHA256()), key


def _ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    subject = _name("mpi-hook-e2e-ca")
    cert = (
        _builder(subject, subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def serving_pem(common: str, dns_names: tuple[str, ...]) -> dict[str, str]:
    """A new CA and a serving certificate for ``dns_names`` signed by it (a webhook's), in PEM, keyed as a
    TLS Secret with its CA holds them: ``ca.crt``, ``tls.crt``, ``tls.key``."""
    ca = _ca()
    key = _key()
    cert = (
        _builder(_name(common), ca[0].subject, key.public_key())
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .sign(ca[1], hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return {"ca.crt": ca[0].public_bytes(pem).decode(), "tls.crt": cert.public_bytes(pem).decode(),
            "tls.key": _key_pem(key).decode()}  # fmt: skip


FILES = ("ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key", "sa.pub", "sa.key")


def make_pki(directory: Path, serving_ips: tuple[str, ...] = SERVING_IPS) -> Pki:
    """Write a CA, serving and admin certificates and a service-account key pair into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca()
    serving = _leaf(ca, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, serving_ips)
    admin = _leaf(ca, _name("mpi-hook-e2e-admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH)
    sa_key = _key()
    pki = Pki(*(directory / name for name in FILES))
    for cert_path, key_path, (cert, key) in (
        (pki.ca_cert, pki.ca_key, ca),
        (pki.serving_cert, pki.serving_key, serving),
        (pki.admin_cert, pki.admin_key, admin),
    ):
        _write_cert(cert_path, cert)
        _write_key(key_path, key)
    _write_key(pki.sa_private, sa_key)
    public = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pki.sa_public.write_bytes(public)
    return pki


def client_cert(pki: Pki, directory: Path, common: str, org: str) -> tuple[Path, Path]:
    """One more client certificate from the CA (e.g. a kubelet's ``system:node:<name>``): (cert, key)."""
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    cert, key = _leaf((ca_cert, ca_key), _name(common, org), ExtendedKeyUsageOID.CLIENT_AUTH)
    paths = directory / f"{common.replace(':', '-')}.crt", directory / f"{common.replace(':', '-')}.key"
    _write_cert(paths[0], cert)
    _write_key(paths[1], key)
    return paths
