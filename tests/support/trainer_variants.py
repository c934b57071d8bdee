"""The MPIJobs converted to TrainJobs in the tests: every example, and a table of variants of them.

Shared by the pure tests (tests/unit/convert/test_convert_trainjob.py: meaning, schema) and the end-to-end
test (tests/e2e/test_e2e_trainer.py: a real apiserver with Trainer's CRDs), so both prove the same list.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

EXAMPLES = sorted((ROOT / "examples").rglob("*.yaml"))
# Trainer runs OpenMPI only: these examples are refused (exit 2).
REFUSED_EXAMPLES = {"pi-intel.yaml": "Intel", "pi-mpich.yaml": "MPICH"}
PI = ROOT / "examples" / "pi" / "pi.yaml"
GPU = ROOT / "examples" / "gpu" / "tensorflow-benchmarks.yaml"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


@dataclass(frozen=True)
class Variant:
    name: str
    base: Path
    change: Callable[[dict[str, Any]], None] | None = None
    gang: str = ""
    # A shipped Trainer runtime (tests/support/trainer_crds.py) to convert onto with --runtime.
    runtime: str = ""

    def job(self) -> dict[str, Any]:
        job = copy.deepcopy(load(self.base))
        job["metadata"]["name"] = self.name
        job["metadata"].pop("namespace", None)  # each test applies it in a namespace of its own
        if self.change is not None:
            self.change(job)
        return job


def _spec(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]
    return spec


def _pod(job: dict[str, Any], kind: str) -> dict[str, Any]:
    pod: dict[str, Any] = job["spec"]["mpiReplicaSpecs"][kind]["template"]["spec"]
    return pod


def _np(job: dict[str, Any], ranks: int) -> None:
    args = _pod(job, "Launcher")["containers"][0]["args"]
    args[args.index("-n") + 1] = str(ranks)


def _slots(job: dict[str, Any]) -> None:
    _spec(job)["slotsPerWorker"] = 4
    _np(job, 8)


def _launcher_as_worker(job: dict[str, Any]) -> None:
    _spec(job)["runLauncherAsWorker"] = True
    _np(job, 3)


def _waits(job: dict[str, Any]) -> None:
    _spec(job)["launcherCreationPolicy"] = "WaitForWorkersReady"


def _launcher_as_worker_waits(job: dict[str, Any]) -> None:
    _launcher_as_worker(job)
    _waits(job)


def _volcano_queue(job: dict[str, Any]) -> None:
    _spec(job)["runPolicy"]["schedulingPolicy"] = {"queue": "research"}


def _deadline(job: dict[str, Any]) -> None:
    _spec(job)["runPolicy"]["activeDeadlineSeconds"] = 600


def _backoff(job: dict[str, Any]) -> None:
    _spec(job)["runPolicy"]["backoffLimit"] = 3


def _failure_policy(job: dict[str, Any]) -> None:
    _spec(job)["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    _spec(job)["runPolicy"]["backoffLimit"] = 0
    _spec(job)["failurePolicy"] = {
        "maxRestarts": 3,
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"operator": "In", "values": [42, 3]},
                "replicaTypes": ["Worker"],
            },
            {"action": "RestartJobAndIgnoreMaxRestarts", "onPodConditions": ["DisruptionTarget"]},
            {
                "action": "FailJob",
                "onExitCodes": {"operator": "NotIn", "values": [1]},
                "replicaTypes": ["Launcher"],
            },
            {"action": "RestartJob", "replicaTypes": ["Launcher"]},
        ],
    }


def _gpus(job: dict[str, Any]) -> None:
    """2 GPUs per worker, 1 slot: Trainer would make it 2 slots if the TrainJob did not say 1."""
    _pod(job, "Worker")["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"


def _worker_on_failure(job: dict[str, Any]) -> None:
    _spec(job)["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"


def _pod_fields(job: dict[str, Any]) -> None:
    launcher, worker = _pod(job, "Launcher"), _pod(job, "Worker")
    launcher["containers"].append(
        {"name": "log-shipper", "image": "busybox:1.37", "args": ["sleep", "infinity"]}
    )
    launcher["containers"][0]["env"] = [
        {
            "name": "CPU_LIMIT",
            "valueFrom": {"resourceFieldRef": {"containerName": "mpi-launcher", "resource": "limits.cpu"}},
        }
    ]
    worker["nodeSelector"] = {"pool": "hpc"}
    worker["tolerations"] = [{"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}]
    worker["priorityClassName"] = "high"
    worker["volumes"] = [{"name": "scratch", "emptyDir": {"sizeLimit": "1024Mi"}}]
    worker["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {"labels": {"team": "hpc"}}


def _clean_all(job: dict[str, Any]) -> None:
    _spec(job)["runPolicy"]["cleanPodPolicy"] = "All"


def _deepspeed_shaped(job: dict[str, Any]) -> None:
    """pi as Trainer's deepspeed-distributed runtime runs it: launcher among the nodes, its image, mpiuser,
    workers restarted in place (the runtime sets no restartPolicy: JobSet's default OnFailure)."""
    _launcher_as_worker(job)
    _worker_on_failure(job)
    image = "ghcr.io/kubeflow/trainer/deepspeed-runtime"
    for kind in ("Launcher", "Worker"):
        pod = _pod(job, kind)
        pod["securityContext"] = {"fsGroup": 1000}
        container = pod["containers"][0]
        container.update(name="node", image=image)
        del container["resources"]
    # What the TrainJob carries as runtimePatches: the nodes' placement and labels.
    _pod(job, "Worker")["nodeSelector"] = {"pool": "cpu"}
    _pod(job, "Worker")["tolerations"] = [{"key": "cpu", "operator": "Exists"}]
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {"labels": {"team": "hpc"}}
    worker = _pod(job, "Worker")["containers"][0]
    worker["args"] = ["-De", "-f", "/home/mpiuser/.sshd_config"]
    worker["readinessProbe"] = {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5}


VARIANTS = [
    Variant("slots", PI, _slots),
    Variant("launcher-as-worker", PI, _launcher_as_worker),
    Variant("wait-for-workers", PI, _waits),
    Variant("launcher-as-worker-waits", PI, _launcher_as_worker_waits),
    Variant("gang-volcano", PI, _volcano_queue, gang="volcano"),
    Variant(
        "gang-coscheduling",
        ROOT / "examples" / "gang" / "pi-scheduler-plugins.yaml",
        gang="scheduler-plugins-scheduler",
    ),
    Variant("deadline", PI, _deadline),
    Variant("backoff-limit", PI, _backoff),
    Variant("failure-policy", PI, _failure_policy),
    Variant("root-gpus", GPU),
    Variant("non-root-gpus", PI, _gpus),
    Variant("worker-on-failure", PI, _worker_on_failure),
    Variant("pod-fields", PI, _pod_fields),
    Variant("clean-all", PI, _clean_all),
    Variant("kueue-suspended", ROOT / "docs" / "examples" / "pi-kueue.yaml"),
    Variant("v1-job", ROOT / "docs" / "examples" / "v1-tensorflow-benchmarks.yaml"),
    Variant(
        "training-operator-v1", ROOT / "tests" / "fixtures" / "convert" / "training-operator-v1-horovod.yaml"
    ),
    Variant("on-deepspeed-runtime", PI, _deepspeed_shaped, runtime="deepspeed_distributed.yaml"),
]
