"""A small Kubernetes API client for the e2e tests (httpx), polling helpers, and the kubelet the tests play.

The tests read and patch objects directly over HTTPS (fast enough to poll every 0.2 s on 2 cores) and use the
real ``kubectl`` where users would: ``apply``, ``kustomize``, ``get`` with printer columns.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.e2e.processes import Processes, Started

T = TypeVar("T")
POLL_SECONDS = 0.2
GROUPS = {
    "pods": "/api/v1",
    "services": "/api/v1",
    "secrets": "/api/v1",
    "configmaps": "/api/v1",
    "events": "/api/v1",
    "namespaces": "/api/v1",
    "nodes": "/api/v1",
    "deployments": "/apis/apps/v1",
    "jobs": "/apis/batch/v1",
    "jobsets": "/apis/jobset.x-k8s.io/v1alpha2",
    "mpijobs": "/apis/kubeflow.org/v2beta1",
    "compositecontrollers": "/apis/metacontroller.k8s.io/v1alpha1",
    "customresourcedefinitions": "/apis/apiextensions.k8s.io/v1",
    "priorityclasses": "/apis/scheduling.k8s.io/v1",
}
CLUSTER_SCOPED = {
    "namespaces",
    "nodes",
    "compositecontrollers",
    "customresourcedefinitions",
    "priorityclasses",
}
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


class ApiError(RuntimeError):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


def path(resource: str, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    parts = [GROUPS[resource]]
    if namespace and resource not in CLUSTER_SCOPED:
        parts.append(f"namespaces/{namespace}")
    parts.append(resource)
    if name:
        parts.append(name)
    if sub:
        parts.append(sub)
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts))


@dataclass
class Kube:
    """The API of one cluster: ``client`` for HTTP, ``kubeconfig`` for kubectl."""

    client: httpx.Client
    kubeconfig: Path
    kubectl_log: list[str] = field(default_factory=list)

    def request(self, method: str, url: str, body: Any = None, content_type: str = "application/json") -> Any:
        content = None if body is None else json.dumps(body).encode()
        response = self.client.request(method, url, content=content, headers={"Content-Type": content_type})
        if response.status_code >= 400:
            raise ApiError(response.status_code, response.text)
        return response.json() if response.content else None

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.request("GET", path(resource, namespace, name)))
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    def list(
        self, resource: str, namespace: str | None = None, selector: str | None = None
    ) -> list[dict[str, Any]]:
        url = path(resource, namespace)
        if selector:
            url += f"?labelSelector={selector}"
        return list(self.request("GET", url)["items"])

    def create(self, resource: str, namespace: str | None, obj: dict[str, Any]) -> dict[str, Any]:
        return dict(self.request("POST", path(resource, namespace), obj))

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: Any,
        kind: str = "merge",
        sub: str | None = None,
    ) -> dict[str, Any]:
        return dict(self.request("PATCH", path(resource, namespace, name, sub), patch, PATCH_TYPES[kind]))

    def delete(self, resource: str, namespace: str | None, name: str, grace: int | None = None) -> None:
        body = None if grace is None else {"gracePeriodSeconds": grace}
        try:
            self.request("DELETE", path(resource, namespace, name), body)
        except ApiError as err:
            if err.status != 404:
                raise

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = ["kubectl", f"--kubeconfig={self.kubeconfig}", *args]
        self.kubectl_log.append(" ".join(args))
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done


def given_cluster(kubeconfig: str, processes: Processes) -> Kube:
    """An existing cluster, read through ``kubectl proxy`` (so any kubeconfig auth works)."""
    proxy = processes.start("kubectl-proxy", ["kubectl", f"--kubeconfig={kubeconfig}", "proxy", "--port=0"])
    address = wait_for(lambda: _proxy_address(proxy), 30, "kubectl proxy to start")
    return Kube(httpx.Client(base_url=address, timeout=30), Path(kubeconfig))


def _proxy_address(proxy: Started) -> str | None:
    match = re.search(r"Starting to serve on (\S+)", proxy.tail())
    return f"http://{match[1]}" if match else None


def wait_for(probe: Callable[[], T | None], timeout: float, what: str | Callable[[], str]) -> T:
    """Poll ``probe`` until it returns something truthy; on timeout fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {detail}")
        time.sleep(POLL_SECONDS)


# ---- the kubelet the tests play ----------------------------------------------------------------------------


def _container_statuses(pod: dict[str, Any], state: dict[str, Any], ready: bool) -> list[dict[str, Any]]:
    return [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": ready,
            "restartCount": 0,
            "started": "running" in state,
            "state": state,
        }
        for c in pod["spec"]["containers"]
    ]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def run_pod(kube: Kube, pod: dict[str, Any], ready: bool = True) -> dict[str, Any]:
    """Mark a Pod Running (and Ready) through the status subresource, as a kubelet would."""
    meta = pod["metadata"]
    status = "True" if ready else "False"
    now = _now()
    patch = {
        "status": {
            "phase": "Running",
            "startTime": now,
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
                {"type": "Ready", "status": status, "lastTransitionTime": now},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            ],
            "containerStatuses": _container_statuses(pod, {"running": {"startedAt": now}}, ready),
        }
    }
    return kube.patch("pods", meta["namespace"], meta["name"], patch, "strategic", sub="status")


def finish_pod(
    kube: Kube, pod: dict[str, Any], exit_code: int = 0, reason: str = "", message: str = ""
) -> dict[str, Any]:
    """Mark a Pod Succeeded (exit 0) or Failed, its containers terminated with ``exit_code``."""
    meta = pod["metadata"]
    now = _now()
    terminated = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": now,
        "finishedAt": now,
    }
    status: dict[str, Any] = {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "conditions": [
            {"type": "Ready", "status": "False", "lastTransitionTime": now, "reason": "PodCompleted"},
            {
                "type": "ContainersReady",
                "status": "False",
                "lastTransitionTime": now,
                "reason": "PodCompleted",
            },
        ],
        "containerStatuses": _container_statuses(pod, {"terminated": terminated}, False),
    }
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return kube.patch("pods", meta["namespace"], meta["name"], {"status": status}, "strategic", sub="status")


def evict_pod(kube: Kube, pod: dict[str, Any]) -> dict[str, Any]:
    """What a kubelet writes when it evicts a Pod under node pressure."""
    return finish_pod(kube, pod, 137, "Evicted", "The node was low on resource: memory.")
