"""Volcano itself beside the hook on the real node: its scheduler, controller manager and admission webhooks,
as its release manifest installs them.

- **Built** from its Go module (``scripts/build-neighbour volcano``: v1.14.1, the newest release whose API
  module the proxy serves), each program alone in an image under the name the manifest gives it.
- **Installed** from ``installer/volcano-development.yaml`` of the module download (the manifest Volcano's
  README applies), as written but for: our images, never pulled (``IfNotPresent``); no monitoring
  namespace; and the admission certificate made here instead of by its ``admission-init`` Job (a Helm hook
  whose image runs a shell script with openssl and kubectl: ours hold the program alone). The Secret holds
  what that script writes (a CA, and a certificate for the admission Service's names signed by it); the
  webhook manager puts the CA into its webhook configurations itself, as on any cluster.
- **Removed** at the end as every neighbour is (``neighbours.uninstall``).
"""

from __future__ import annotations

import datetime
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.e2e.kube import Kube
from tests.node import neighbours
from tests.node.images import Recipe
from tests.support.neighbour_builds import Built

NAMESPACE = "volcano-system"
MANIFEST = "installer/volcano-development.yaml"
API = "scheduling.volcano.sh/v1beta1"
SCHEDULER = "volcano-scheduler"
# The manifest's image of each program (docker.io/volcanosh/<image>:<release>).
IMAGES = {"scheduler": "vc-scheduler", "controller-manager": "vc-controller-manager",
          "webhook-manager": "vc-webhook-manager"}  # fmt: skip
ADMISSION_SERVICE = "volcano-admission-service"
ADMISSION_SECRET = "volcano-admission-secret"
HELM_HOOK = "helm.sh/hook"
MONITORING = "volcano-monitoring"


def image(built: Built, program: str) -> str:
    return f"docker.io/volcanosh/{IMAGES[program]}:{built.version}"


def recipes(built: Built) -> list[Recipe]:
    return [neighbours.recipe(built, image(built, program), program) for program in IMAGES]


def manifests(built: Built) -> list[dict[str, Any]]:
    """Volcano's objects from its release manifest, with the changes the module docstring lists."""
    with (built.module / MANIFEST).open() as manifest:
        objects = [o for o in yaml.safe_load_all(manifest) if o]
    kept = [o for o in objects if not _helm_hook(o) and o["metadata"].get("name") != MONITORING]
    for deployment in (o for o in kept if o["kind"] == "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            program = next(p for p, name in IMAGES.items() if f"/{name}:" in container["image"])
            container["image"] = image(built, program)
            container["imagePullPolicy"] = "IfNotPresent"
    return [*kept, admission_secret()]


def _helm_hook(made: dict[str, Any]) -> bool:
    return HELM_HOOK in (made["metadata"].get("annotations") or {})


def admission_secret() -> dict[str, Any]:
    """What the admission-init Job's script stores: a CA and the admission Service's certificate."""
    service = f"{ADMISSION_SERVICE}.{NAMESPACE}.svc"
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"volcano-admission-ca.{NAMESPACE}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [ADMISSION_SERVICE, f"{ADMISSION_SERVICE}.{NAMESPACE}", service]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, service)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ADMISSION_SECRET, "namespace": NAMESPACE},
        "stringData": {
            "tls.crt": certificate.public_bytes(pem).decode(),
            "tls.key": key_pem.decode(),
            "ca.crt": ca.public_bytes(pem).decode(),
        },
    }


def install(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Apply Volcano's objects and wait until its admission answers: a PodGroup in its default queue (which
    its scheduler creates and its controller opens) goes through the PodGroup webhook."""
    probe = podgroup("default", "webhook-probe", 1, queue="default")
    neighbours.install(kube, objects, probe)


def podgroup(namespace: str, name: str, members: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": members, **spec},
    }


def queue(name: str, cpu: str) -> dict[str, Any]:
    """A Queue whose jobs may hold at most ``cpu`` between them."""
    return {
        "apiVersion": API,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "capability": {"cpu": cpu}, "reclaimable": True},
    }
