"""The lint rules' ids, what each one finds, and how severe it is: the registry ``mpijob lint`` documents.

A rule can be silenced per job with the annotation ``mpijob-lint/ignore: "<rule>,<rule>"`` (errors
cannot be: admission would reject the job anyway).
"""

from __future__ import annotations

from enum import StrEnum

from app.api import child_names
from app.api.defaults import DEFAULT_SSH_AUTH_MOUNT_PATH
from app.api.lint.findings import Severity
from app.api.types import OLD_API_VERSIONS

IGNORE_ANNOTATION = "mpijob-lint/ignore"


class Rule(StrEnum):
    """Rule ids: stable names users put in ``mpijob-lint/ignore`` and CI greps for."""

    INVALID = "invalid"
    CRD_REJECTED = "crd-rejected"
    UNKNOWN_FIELD = "unknown-field"
    NAME_TOO_LONG = "name-too-long"
    INVALID_LABEL = "invalid-label"
    INVALID_ANNOTATION_KEY = "invalid-annotation-key"
    ANNOTATIONS_TOO_LARGE = "annotations-too-large"
    OLD_API_VERSION = "old-api-version"
    SLOTS_IN_REPLICA_SPEC = "slots-in-replica-spec"
    NP_MISMATCH = "np-mismatch"
    GPU_SLOTS_MISMATCH = "gpu-slots-mismatch"
    GPUS_AT_POD_LEVEL = "gpus-at-pod-level"
    LAUNCHER_GPUS_HIDDEN = "launcher-gpus-hidden"
    GPUS_HELD_AFTER_FINISH = "gpus-held-after-finish"
    ORTE_ONLY_SETTINGS = "orte-only-settings"
    LAUNCHER_COMMAND = "launcher-command"
    WORKER_COMMAND = "worker-command"
    HOSTNETWORK_PORT_CLASH = "hostnetwork-port-clash"
    SSH_PATH_FOR_NON_ROOT = "ssh-path-for-non-root"
    SSH_PATH_FOR_ROOT = "ssh-path-for-root"
    FAILURE_POLICY_UNSEEN = "failure-policy-unseen"
    FAILURE_RULE_UNREACHABLE = "failure-rule-unreachable"
    MIN_AVAILABLE_ABOVE_PODS = "min-available-above-pods"
    HOSTFILE_ORDER_NOT_FOLLOWED = "hostfile-order-not-followed"


RULES: dict[str, str] = {
    Rule.INVALID: "the hook's validation (upstream's ValidateMPIJob) rejects the job: nothing is created",
    Rule.CRD_REJECTED: "the CRD's schema or CEL rules reject the job at kubectl apply",
    Rule.UNKNOWN_FIELD: "a field the MPIJob API does not have: rejected by kubectl apply, pruned otherwise",
    Rule.NAME_TOO_LONG: (
        f"the last worker's hostname <name>{child_names.WORKER_INFIX}<N-1> exceeds"
        f" {child_names.DNS1035_LABEL_MAX} characters"
    ),
    Rule.INVALID_LABEL: "a label key or value the apiserver refuses (syntax; a value over 63 characters)",
    Rule.INVALID_ANNOTATION_KEY: "an annotation key the apiserver refuses (not a qualified name)",
    Rule.ANNOTATIONS_TOO_LARGE: "annotations over the apiserver's 256 KiB (keys and values together)",
    Rule.OLD_API_VERSION: f"{', '.join(OLD_API_VERSIONS)}: not served by this CRD; mpijob convert reads them",
    Rule.SLOTS_IN_REPLICA_SPEC: "slotsPerWorker written inside a replica spec, where it is pruned",
    Rule.NP_MISMATCH: "mpirun -np differs from the hostfile's slots (slotsPerWorker x workers)",
    Rule.GPU_SLOTS_MISMATCH: "GPUs per worker (pod-level ones counted) differ from slotsPerWorker",
    Rule.GPUS_AT_POD_LEVEL: (
        "GPUs in a pod template's spec.resources: pod-level resources take only cpu, memory and hugepages"
    ),
    Rule.LAUNCHER_GPUS_HIDDEN: "the launcher requests GPUs it cannot see (runLauncherAsWorker is off)",
    Rule.GPUS_HELD_AFTER_FINISH: "cleanPodPolicy unset: finished jobs keep their GPU workers",
    Rule.ORTE_ONLY_SETTINGS: "OMPI_MCA_orte_* settings without PRRTE equivalents: Open MPI 5 ignores them",
    Rule.LAUNCHER_COMMAND: (
        "the launcher runs neither mpirun, mpiexec nor horovodrun (info when it sets no command: lint cannot"
        " see what the image's entrypoint runs)"
    ),
    Rule.WORKER_COMMAND: "a worker command that does not start sshd",
    Rule.HOSTNETWORK_PORT_CLASH: "hostNetwork pods that may share a node and clash on sshd's port",
    Rule.SSH_PATH_FOR_NON_ROOT: (
        f"the SSH key goes to {DEFAULT_SSH_AUTH_MOUNT_PATH} but the containers run as another user"
    ),
    Rule.SSH_PATH_FOR_ROOT: (
        f"the SSH key goes to a path other than {DEFAULT_SSH_AUTH_MOUNT_PATH} but the containers run as root"
    ),
    Rule.FAILURE_POLICY_UNSEEN: (
        "a failure policy with workers whose restartPolicy is OnFailure: their containers restart in place,"
        " so the policy never sees a worker fail"
    ),
    Rule.FAILURE_RULE_UNREACHABLE: (
        "a failure policy rule after one that already matches every failure it could"
    ),
    Rule.MIN_AVAILABLE_ABOVE_PODS: (
        "schedulingPolicy.minAvailable above the job's Pods (workers + launcher): the gang never starts"
    ),
    Rule.HOSTFILE_ORDER_NOT_FOLLOWED: (
        "an Open MPI job in topology order whose mpirun does not use the sequential mapper"
    ),
}

_ERROR_RULES = frozenset({
    Rule.INVALID, Rule.CRD_REJECTED, Rule.UNKNOWN_FIELD, Rule.NAME_TOO_LONG, Rule.INVALID_LABEL,
    Rule.INVALID_ANNOTATION_KEY, Rule.ANNOTATIONS_TOO_LARGE, Rule.OLD_API_VERSION,
    Rule.SLOTS_IN_REPLICA_SPEC, Rule.GPUS_AT_POD_LEVEL,
})  # fmt: skip
SEVERITIES: dict[str, Severity] = {
    rule: Severity.ERROR if rule in _ERROR_RULES else Severity.WARNING for rule in Rule
}
