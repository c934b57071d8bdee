"""SSH key material for the ``<job>-ssh`` Secret: ECDSA P-521, as upstream.

Key creation is injected into ``sync`` so the core stays pure. Two sources:
``random_keys`` (a fresh key each call, as upstream) and ``SeededKeys`` (the key is derived from a
secret seed and the job's UID, so a Secret deleted mid-run comes back identical and every hook
replica computes the same key). ``SSHKeyPair`` never shows its private half in a repr.

A seeded key needs a job UID: without one, every such job would derive the same key. ``SeededKeys`` then
falls back to a random key and says so through ``on_fallback``, which the shell points at a WARNING log
line (this layer does no I/O); the apiserver always sets ``metadata.uid``, so only a hand-made request
can trigger it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

# Any scalar in [1, 2**520] is below the P-521 group order (~2**521): derived keys land there.
_SCALAR_BITS = 520
_KDF_INFO = b"mpi-operator-hook/ssh-key/v1/"
MIN_SEED_BYTES = 32
UNSEEDED_MESSAGE = "MPIJob without metadata.uid: its SSH key is random, not derived from the seed"


@dataclass(frozen=True)
class SSHKeyPair:
    """PEM private key (``EC PRIVATE KEY``) and an authorized_keys line (with trailing newline)."""

    private_pem: bytes = field(repr=False)
    public_line: bytes

    def __repr__(self) -> str:
        return f"SSHKeyPair(public_line={self.public_line[:32]!r}..., private_pem=<redacted>)"


KeySource = Callable[[str], SSHKeyPair]


def _pair(key: ec.EllipticCurvePrivateKey) -> SSHKeyPair:
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,  # SEC1 DER in "EC PRIVATE KEY" PEM
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return SSHKeyPair(private_pem=private_pem, public_line=public + b"\n")


def random_keys(job_uid: str) -> SSHKeyPair:
    """A fresh key from the OS's randomness; the job UID is not used."""
    return _pair(ec.generate_private_key(ec.SECP521R1()))


class SeededKeys:
    """Derive the key from HKDF-SHA512(seed, job UID): same seed and UID, same key, on every replica."""

    def __init__(self, seed: bytes, on_fallback: Callable[[str], None] = lambda message: None) -> None:
        if len(seed) < MIN_SEED_BYTES:
            raise ValueError(f"SSH key seed must be at least {MIN_SEED_BYTES} bytes")
        self._seed = seed
        self._on_fallback = on_fallback

    def __repr__(self) -> str:
        return "SeededKeys(<redacted>)"

    def __call__(self, job_uid: str) -> SSHKeyPair:
        if not job_uid.strip():
            self._on_fallback(UNSEEDED_MESSAGE)
            return random_keys(job_uid)
        material = HKDF(
            algorithm=hashes.SHA512(), length=80, salt=None, info=_KDF_INFO + job_uid.encode()
        ).derive(self._seed)
        scalar = int.from_bytes(material, "big") % (1 << _SCALAR_BITS) + 1
        return _pair(ec.derive_private_key(scalar, ec.SECP521R1()))
