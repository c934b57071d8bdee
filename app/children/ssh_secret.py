"""The Secret ``<job>-ssh`` (``kubernetes.io/ssh-auth``) that lets the launcher reach every worker.

An observed Secret's data is returned verbatim so the key never rotates under a running job; a key is
made only when the Secret is absent. The private key is never logged or put anywhere but ``data``.
"""

from __future__ import annotations

import base64
from typing import Any

from app.api.defaults import Job
from app.kube import names
from app.kube.keys import KeySource
from app.kube.request import ObservedSecret

_REQUIRED_KEYS = (names.SSH_PRIVATE_KEY, names.SSH_PUBLIC_KEY)


def build_ssh_secret(job: Job, observed: ObservedSecret | None, keys: KeySource) -> dict[str, Any]:
    if observed is not None and observed.data and all(k in observed.data for k in _REQUIRED_KEYS):
        data = dict(observed.data)
    else:
        pair = keys(job.metadata.uid)
        data = {
            names.SSH_PRIVATE_KEY: base64.b64encode(pair.private_pem).decode(),
            names.SSH_PUBLIC_KEY: base64.b64encode(pair.public_line).decode(),
        }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": names.ssh_secret_name(job.name),
            "namespace": job.namespace,
            "labels": names.owned_labels(job.name),
        },
        "type": names.SSH_AUTH_SECRET_TYPE,
        "data": data,
    }
