"""What Kubeflow Trainer v2.3.0 makes of a TrainJob and its runtime: the Pods of each replicated job, how
many, the hostfile, the PodGroup size, and what its JobSet decides when a Pod fails.

Written for the tests from Trainer's source at tag v2.3.0, step by step in its order, apart from app/convert
(which must agree with it, not with itself):

0. JobSet v0.12's webhook defaults a Pod template's restartPolicy to OnFailure;
1. pkg/runtime/core/trainingruntime.go ``newRuntimeInfo``: runtimePatches merged into the JobSet template
   (strategic merge patch); a Pod count per replicated job (its ``parallelism``, the runtime's
   ``mlPolicy.numNodes`` for the trainer step); ``resourcesPerNode`` merged into the ``node`` container of
   the trainer step, and of the ``node`` job when the launcher is a node;
2. plugins/mpi ``EnforceMLPolicy``: the node job's count from ``numNodes`` (``max(numNodes - 1, 1)`` with
   ``runLauncherAsNode``); slots from ``numProcPerNode`` (the TrainJob's, else the runtime's, else GPUs per
   node when that is 1); the SSH Secret volume (``<name>-mpi-ssh-auth``, modes 0400/0640/0644) on both jobs
   and the hostfile ConfigMap on the launcher, mounted into ``node`` containers; OpenMPI env on the launcher;
3. plugins/jobset ``IdentifyPodNetwork`` and mpi ``buildHostFileConfigMap``: ``<tj>-<job>-<i>-<j>.<tj>
   slots=<n>``, jobs in the template's order, the launcher's only with ``runLauncherAsNode``;
4. plugins/jobset ``Build`` and builder.go ``Trainer``: image, command, args from ``spec.trainer`` onto the
   trainer step's ``node`` container; its env onto that one and onto the node job's with
   ``runLauncherAsNode``; plugins/coscheduling and volcano: a PodGroup of every Pod.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
NODE = "node"
LAUNCHER = "launcher"
SSH_VOLUME, HOSTFILE_VOLUME = "mpi-ssh-auth", "mpi-hostfile"
# Kubernetes' strategic merge keys for the PodTemplateSpec fields a runtime patch may touch.
_MERGE_KEYS = {
    "replicatedJobs": "name", "containers": "name", "initContainers": "name", "env": "name",
    "imagePullSecrets": "name", "schedulingGates": "name", "volumeMounts": "mountPath",
}  # fmt: skip
_RETAIN_KEYS = {"volumes": "name"}


@dataclass
class PodSet:
    job: str
    count: int
    template: dict[str, Any]


@dataclass
class Made:
    pod_sets: dict[str, PodSet]
    hostfile: list[str]
    slots: int
    pod_group_members: int


def smp(base: Any, patch: Any, key: str = "") -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: smp(base[k], v, k) if k in base else v for k, v in patch.items()}}
    if isinstance(base, list) and isinstance(patch, list) and (key in _MERGE_KEYS or key in _RETAIN_KEYS):
        field = _MERGE_KEYS.get(key) or _RETAIN_KEYS[key]
        out = list(base)
        for item in patch:
            at = next((i for i, b in enumerate(out) if b.get(field) == item.get(field)), None)
            if at is None:
                out.append(item)
            else:
                out[at] = item if key in _RETAIN_KEYS else smp(out[at], item)
        return out
    return patch


def make(trainjob: dict[str, Any], runtime: dict[str, Any]) -> Made:
    name, spec = trainjob["metadata"]["name"], trainjob["spec"]
    train = spec.get("trainer") or {}
    policy = runtime["spec"].get("mlPolicy") or {}
    mpi = policy["mpi"]
    as_node = mpi.get("runLauncherAsNode", False)
    jobset = copy.deepcopy(runtime["spec"]["template"]["spec"])
    for patch in spec.get("runtimePatches") or []:
        jobset = smp(jobset, patch["trainingRuntimeSpec"]["template"]["spec"])
    sets = {}
    for rjob in jobset["replicatedJobs"]:
        trainer_step = ((rjob["template"].get("metadata") or {}).get("labels") or {}).get(
            ANCESTOR
        ) == "trainer"
        count = policy.get("numNodes", 1) if trainer_step else rjob["template"]["spec"].get("parallelism", 1)
        pod = copy.deepcopy(rjob["template"]["spec"]["template"])
        pod["spec"].setdefault("restartPolicy", "OnFailure")  # JobSet's webhook (jobset_webhook.go)
        if "resourcesPerNode" in train and (trainer_step or (as_node and rjob["name"] == NODE)):
            _node(pod)["resources"] = smp(_node(pod).get("resources") or {}, train["resourcesPerNode"])
        sets[rjob["name"]] = PodSet(rjob["name"], count, pod)
    if "numNodes" in train:
        sets[NODE].count = max(train["numNodes"] - 1, 1) if as_node else train["numNodes"]
    slots = _slots(train, mpi, jobset, sets)
    _mpi_volumes_and_env(name, mpi, sets, slots)
    _trainer(train, jobset, sets, as_node)
    _pod_group_membership(name, runtime["spec"].get("podGroupPolicy") or {}, sets)
    hosts = [
        f"{name}-{ps.job}-{replica}-{index}.{name} slots={slots}"
        for rjob in jobset["replicatedJobs"]
        for ps in [sets[rjob["name"]]]
        if ps.job == NODE or (as_node and ps.job == LAUNCHER)
        for replica in range(rjob.get("replicas", 1))
        for index in range(ps.count)
    ]
    return Made(sets, hosts, slots, sum(ps.count for ps in sets.values()))


def _node(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == NODE)


def _slots(
    train: dict[str, Any], mpi: dict[str, Any], jobset: dict[str, Any], sets: dict[str, PodSet]
) -> int:
    """The TrainJob's numProcPerNode, else the runtime's, else (when that is 1) the GPUs of the first node
    or trainer-step container with resources (pkg/runtime/runtime.go ExtractResourcePerNodeFromRuntime)."""
    if "numProcPerNode" in train:
        return int(train["numProcPerNode"])
    slots = int(mpi.get("numProcPerNode", 1))
    for rjob in jobset["replicatedJobs"]:
        resources = _node(sets[rjob["name"]].template).get("resources")
        if slots == 1 and resources:
            gpus = int((resources.get("limits") or {}).get("nvidia.com/gpu", 0))
            return gpus if gpus > 1 else slots
    return slots


def _mpi_volumes_and_env(name: str, mpi: dict[str, Any], sets: dict[str, PodSet], slots: int) -> None:
    items = [{"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
             {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
             {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644}]  # fmt: skip
    secret = {"secretName": f"{name}-mpi-ssh-auth", "defaultMode": 0o400, "items": items}
    hostfile = {
        "name": f"{name}-mpi-hostfile",
        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
    }
    env = [{"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
           {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
           {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
           {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"}]  # fmt: skip
    for ps in (sets[NODE], sets[LAUNCHER]):
        spec = ps.template["spec"]
        volumes = [{"name": SSH_VOLUME, "secret": secret}]
        if ps.job == LAUNCHER:
            volumes.append({"name": HOSTFILE_VOLUME, "configMap": hostfile})
        spec["volumes"] = _upsert(spec.get("volumes") or [], volumes, "name")
        container = _node(ps.template)
        mounts = [{"name": SSH_VOLUME, "mountPath": mpi.get("sshAuthMountPath", "/root/.ssh")}]
        if ps.job == LAUNCHER:
            mounts.append({"name": HOSTFILE_VOLUME, "mountPath": "/etc/mpi"})
            container["env"] = _upsert(container.get("env") or [], env, "name")
        container["volumeMounts"] = _upsert(container.get("volumeMounts") or [], mounts, "name")


def _trainer(train: dict[str, Any], jobset: dict[str, Any], sets: dict[str, PodSet], as_node: bool) -> None:
    for rjob in jobset["replicatedJobs"]:
        ps = sets[rjob["name"]]
        trainer_step = ((rjob["template"].get("metadata") or {}).get("labels") or {}).get(
            ANCESTOR
        ) == "trainer"
        container = _node(ps.template)
        if trainer_step:
            container.update({k: train[k] for k in ("image", "command", "args") if k in train})
        if (trainer_step or (as_node and ps.job == NODE)) and "env" in train:
            container["env"] = _upsert(container.get("env") or [], train["env"], "name")


def _pod_group_membership(name: str, policy: dict[str, Any], sets: dict[str, PodSet]) -> None:
    """plugins/coscheduling labels every Pod with its PodGroup, plugins/volcano annotates it."""
    for ps in sets.values():
        metadata = ps.template.setdefault("metadata", {})
        if "coscheduling" in policy:
            metadata.setdefault("labels", {})["scheduling.x-k8s.io/pod-group"] = name
        if "volcano" in policy:
            metadata.setdefault("annotations", {})["scheduling.k8s.io/group-name"] = name


def _upsert(items: list[dict[str, Any]], new: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    out = list(items)
    for item in new:
        at = next((i for i, old in enumerate(out) if old.get(key) == item[key]), None)
        if at is None:
            out.append(item)
        else:
            out[at] = item
    return out


# --- failures ----------------------------------------------------------------------------------------------


def pod_failure(
    job_spec: dict[str, Any], exit_code: int | None, conditions: frozenset[str]
) -> tuple[str, str]:
    """The failed Job's reason and message: a podFailurePolicy FailJob rule's, else its backoff limit's."""
    for index, rule in enumerate((job_spec.get("podFailurePolicy") or {}).get("rules") or []):
        codes, wanted = rule.get("onExitCodes"), rule.get("onPodConditions")
        if codes is not None and exit_code not in (None, 0):
            hit = (exit_code in codes["values"]) == (codes["operator"] == "In")
        else:
            hit = wanted is not None and any(
                c["type"] in conditions and c["status"] == "True" for c in wanted
            )
        if hit:
            assert rule["action"] == "FailJob", rule
            return "PodFailurePolicy", f"Pod ns/p failed matching FailJob rule at index {index}"
    return "BackoffLimitExceeded", "Job has reached the specified backoff limit"


def jobset_decision(
    policy: dict[str, Any] | None, job: str, reason: str, message: str, restarts: int
) -> tuple[str, bool]:
    """("fail" | "restart", counted) as JobSet's failure policy decides on a failed Job."""
    if policy is None:
        return "fail", False
    action = "RestartJobSet"
    for rule in policy.get("rules") or []:
        if rule.get("targetReplicatedJobs") and job not in rule["targetReplicatedJobs"]:
            continue
        if rule.get("onJobFailureReasons") and reason not in rule["onJobFailureReasons"]:
            continue
        patterns = rule.get("onJobFailureMessagePatterns")
        if patterns and not any(re.search(p, message) for p in patterns):
            continue
        action = rule["action"]
        break
    if action == "FailJobSet":
        return "fail", False
    if action == "RestartJobSetAndIgnoreMaxRestarts":
        return "restart", False
    return ("fail", False) if restarts >= policy.get("maxRestarts", 0) else ("restart", True)
