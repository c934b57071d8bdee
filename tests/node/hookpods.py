"""The hook's own Pods on the real node, as deploy/ runs them: their names, and a metric summed over them
(read from inside each Pod, on its metrics port)."""

from __future__ import annotations

from tests.e2e.kube import Kube

NAMESPACE = "mpi-operator"
SELECTOR = "app.kubernetes.io/name=mpi-operator-hook"
READ_METRICS = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:9090/metrics').read().decode())"


def hook_pods(kube: Kube) -> list[str]:
    pods = kube.list("pods", NAMESPACE, SELECTOR)
    return [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]


def hook_metric(kube: Kube, sample: str) -> float:
    """The sum over the hook's replicas of every sample line that starts with ``sample`` (a name, or a name
    with its labels: ``name{outcome="succeeded"}``)."""
    total = 0.0
    for pod in hook_pods(kube):
        text = kube.kubectl("-n", NAMESPACE, "exec", pod, "--", "python3", "-c", READ_METRICS).stdout
        total += sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(sample))
    return total
