"""Every reason the hook writes on a condition or an Event, and the Kubernetes reasons it reads: one place.

Upstream's where upstream has one (``v2/pkg/controller/mpi_job_controller.go`` at v0.8.2), so alerts and
dashboards written for the Go operator keep working.
"""

from __future__ import annotations

# Upstream's condition and Event reasons.
REASON_CREATED = "MPIJobCreated"
REASON_RUNNING = "MPIJobRunning"
REASON_SUSPENDED = "MPIJobSuspended"
REASON_RESUMED = "MPIJobResumed"
REASON_SUCCEEDED = "MPIJobSucceeded"
REASON_FAILED = "MPIJobFailed"
REASON_EVICTED = "MPIJobEvicted"
REASON_INVALID = "ValidationError"

# Ours: the lint Warning, a gang scheduler without its PodGroup child (or a topology key it cannot honour),
# and the failure policy's Failed reasons (its Restarting reasons name the failed replica and why:
# ``PodFailure.reason``).
REASON_LINT = "LintWarnings"
REASON_PODGROUP_NOT_DECLARED = "PodGroupChildNotDeclared"
REASON_TOPOLOGY_REFUSED = "TopologyNeedsWorkloadAPI"
REASON_FAIL_JOB_RULE = "FailJobRule"
REASON_MAX_RESTARTS = "MaxRestartsReached"

# Kubernetes': the launcher Job's Failed reasons (the Job controller; DeadlineExceeded is also the kubelet's
# reason for a Pod past its activeDeadlineSeconds), and an evicted Pod's (the kubelet).
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
POD_EVICTED = "Evicted"
