"""The CRD on a real kube-apiserver: Pod fields newer than upstream's Kubernetes survive in an MPIJob.

tests/packaging/test_crd.py rebuilds admission offline; what the apiserver prunes from a custom resource only
the apiserver shows. It runs etcd, kube-apiserver and kube-controller-manager as the e2e suite does
(tests/e2e/controlplane.py: Kubernetes v1.36.2, its own ports and directories, stopped by PID), installs
``crds/`` as users do, creates an MPIJob whose pod templates use a field added in Kubernetes 1.36 and one
added in 1.37, as a client without strict field validation sends it, and reads it back; then one as
``kubectl apply`` sends it (strict). There is no hook, so nothing acts on the jobs. Without the control-plane
binaries the test skips with the reason.

A CRD from 1.35's definitions, as upstream's, fails here: ``kubectl apply`` refuses the fields (unknown
field) and every other client loses them. The apiserver's own Pod type plays no part: the CRD's schema
decides what an MPIJob keeps, so a 1.36 apiserver keeps the 1.37 field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.api.types import ReplicaType
from tests.e2e.controlplane import find_binaries, start_control_plane
from tests.e2e.kube import Kube, path, wait_for
from tests.packaging.test_crd import NEWER_POD_FIELDS, pi, with_newer_pod_fields
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    """A fresh control plane with the MPIJob CRD of ``crds/`` installed and Established."""
    bin_dir, reason = find_binaries()
    if bin_dir is None:
        pytest.skip(f"no control plane: {reason}")
    workdir = tmp_path_factory.mktemp("crd-apiserver")
    try:
        plane = start_control_plane(bin_dir, workdir / "plane")
    except RuntimeError:  # a free port taken between our probe and the server's bind: once more, new ports
        plane = start_control_plane(bin_dir, workdir / "plane-retry")
    try:
        with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30) as client:
            kube = Kube(client, plane.kubeconfig)
            kube.kubectl("apply", "--server-side", "-k", str(ROOT / "crds"))
            wait_for(lambda: _established(kube), 60, "the MPIJob CRD to be Established")
            yield kube
    finally:
        plane.stop()


def _established(kube: Kube) -> bool:
    crd = kube.get("customresourcedefinitions", None, "mpijobs.kubeflow.org") or {}
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _templates(job: dict[str, Any]) -> dict[str, Any]:
    return {t.value: job["spec"]["mpiReplicaSpecs"][t.value]["template"] for t in ReplicaType}


def test_pod_fields_added_in_kubernetes_1_36_and_1_37_survive_the_apiserver(kube: Kube) -> None:
    assert [version for version, _, _ in NEWER_POD_FIELDS] == ["1.36.0", "1.37.0"]
    job = with_newer_pod_fields(pi("newer-pod-fields"))
    # As most clients send it (the apiserver's default, as `kubectl apply --validate=warn`): an unknown field
    # would be pruned, with a Warning header, and the object created.
    created = kube.client.post(path("mpijobs", "default"), json=job, params={"fieldValidation": "Warn"})
    assert created.status_code == 201, created.text
    stored = kube.get("mpijobs", "default", "newer-pod-fields")
    assert stored is not None
    assert _templates(stored) == _templates(job)
    assert "unknown field" not in created.headers.get("Warning", ""), created.headers["Warning"]
    # ...and as `kubectl apply` sends it (strict field validation, its default): an unknown field is an error.
    strict = with_newer_pod_fields(pi("newer-pod-fields-strict"))
    applied = kube.client.post(path("mpijobs", "default"), json=strict, params={"fieldValidation": "Strict"})
    assert applied.status_code == 201, applied.text
