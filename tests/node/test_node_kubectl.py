"""What docs/user-guide.md says ``kubectl get mpijob``, ``kubectl describe mpijob`` and ``kubectl logs`` show,
on a job with a lint finding (``-n 1`` for 2 slots: ``np-mismatch``)."""

from __future__ import annotations

import re
from typing import Any

from tests.e2e import jobs
from tests.e2e.kube import Kube
from tests.node import runs
from tests.node.conftest import RealNode


def _job() -> dict[str, Any]:
    job = runs.gated("pi")
    script = runs.launcher(job)["command"]
    script[2] = script[2].replace("mpirun -n 2", "mpirun -n 1")
    return job


def _get(kube: Kube, ns: str) -> dict[str, str]:
    """``kubectl get mpijob pi`` as {column: value}."""
    header, row = kube.kubectl("-n", ns, "get", "mpijob", "pi").stdout.splitlines()
    return dict(zip(header.split(), row.split(), strict=True))


def test_get_describe_and_logs_show_what_the_user_guide_says(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    runs.apply(kube, ns, _job())
    job = runs.running(kube, ns, "pi")
    # get: workers, slots and the stage; the lint Warning is the first condition, never STATE.
    assert list(_get(kube, ns)) == ["NAME", "WORKERS", "SLOTS", "STATE", "AGE"]
    assert {k: v for k, v in _get(kube, ns).items() if k != "AGE"} == {
        "NAME": "pi", "WORKERS": "2", "SLOTS": "1", "STATE": "Running",
    }  # fmt: skip
    assert job["status"]["conditions"][0]["type"] == "Warning"
    # describe: every condition with its message, the lint Warning included.
    described = kube.kubectl("-n", ns, "describe", "mpijob", "pi").stdout
    for condition in job["status"]["conditions"]:
        assert re.search(rf"Type:\s+{condition['type']}\n", described), described
        assert condition["message"].splitlines()[0] in described, described
    assert "np-mismatch" in described
    # logs -f: follows the launcher to its end.
    runs.open_gate(kube, ns, "pi")
    log = kube.kubectl("-n", ns, "logs", "-f", "job/pi-launcher").stdout
    assert runs.ranks(log).keys() == {0} and "pi is approximately" in log, log
    runs.succeeded(kube, ns, "pi")
    assert _get(kube, ns)["STATE"] == "Succeeded"
    assert jobs.get(kube, ns, "pi")["status"]["conditions"][0]["type"] == "Warning"
