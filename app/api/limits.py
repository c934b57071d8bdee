"""How large a job the hook accepts, and the sizes of what it would build, computed before building it.

Three bounds, each documented in docs/operations.md, "Limits":
- ``MAX_WORKERS`` (also the CRD's ``maximum``): 16,384 workers. Measured (bench/sync_bench.py): a
  steady-state sync of 16k realistic Pods is a 116 MB request that the hook answers in ~0.5 s in process
  with ~150 MB of working memory besides the body; and no name choice lets more than ~17,600 workers fit
  a 1 MiB ConfigMap anyway.
- The ConfigMap ``<job>-config``: with Metacontroller's default ``dynamic-apply`` the whole desired object
  is also stored in its ``last-applied-configuration`` annotation, and Kubernetes caps a object's
  annotations at 256 KiB in total; with ``server-side-apply`` the 1 MiB ConfigMap data limit binds.
  ``config_bytes`` is the exact JSON size of both data entries with every worker running (a test holds
  it to the built ConfigMap), so the answer is arithmetic, not a build.
- Each replica's pod template: its child (worker Pod or launcher Job) carries it in the same annotation.
"""

from __future__ import annotations

from typing import Any

import orjson

from app.api import child_names
from app.api.defaults import Job
from app.api.hostfile_order_annotations import MAX_HEADER_BYTES, MAX_TABLE_BYTES, asks_topology_order
from app.api.types import MPIImplementation

INT32_MAX = 2**31 - 1
MAX_WORKERS = 16_384
# A failure policy's bounds (ours). Rules, conditions and exit codes as Kubernetes bounds a Job's
# podFailurePolicy; restarts so that a typo cannot keep a broken job restarting for weeks.
MAX_RESTARTS = 1_000
MAX_FAILURE_RULES = 20
MAX_RULE_POD_CONDITIONS = 20
MAX_RULE_EXIT_CODES = 255
MAX_CONDITION_TYPE_LENGTH = 316
MAX_WORKERS_MESSAGE = (
    f"must be no more than {MAX_WORKERS}: the largest job the hook supports (docs/operations.md, Limits)"
)

_ANNOTATIONS_LIMIT = 256 * 1024  # apimachinery TotalAnnotationSizeLimitB
_CONFIGMAP_DATA_LIMIT = 1024 * 1024  # core/v1 validation of ConfigMap data
_METADATA_ALLOWANCE = 2 * 1024  # names, labels, keys and JSON punctuation around the data
CONFIG_BUDGET = _ANNOTATIONS_LIMIT - _METADATA_ALLOWANCE
CONFIG_BUDGET_SERVER_SIDE_APPLY = _CONFIGMAP_DATA_LIMIT - _METADATA_ALLOWANCE
CONFIG_BUDGET_REASON = (
    "Metacontroller's dynamic-apply copies each child into a last-applied annotation, and an object's"
    " annotations hold at most 256 KiB; with server-side-apply the limit is 1 MiB"
)
# A Pod or Job around a template adds a few KiB (env, volumes, names) to it in the annotation.
TEMPLATE_BUDGET = _ANNOTATIONS_LIMIT - 8 * 1024
TEMPLATE_BUDGET_REASON = (
    "Metacontroller copies each child, and with it this template, into a last-applied annotation of"
    f" at most 256 KiB, so the template must stay under {TEMPLATE_BUDGET} bytes"
)

_SHEBANG = "#!/bin/sh\\n"  # JSON-escaped: the newline is two bytes in the annotation
_ECHO = "echo "
_NEWLINE = 2  # "\n" once JSON-escaped


def digits_total(count: int) -> int:
    """Sum of ``len(str(i))`` for ``i`` in ``range(count)``, without iterating."""
    total, width, low = 0, 1, 0
    while low < count:
        high = min(count, 10**width)
        total += (high - low) * width
        low, width = high, width + 1
    return total


def config_bytes(job: Job, cluster_domain: str) -> int:
    """JSON-encoded size of ``hostfile`` plus ``discover_hosts.sh`` when every worker runs; an ordered
    job's order header and order table (``hostfile-order``) at their bounds."""
    replicas, slots = job.worker_replicas, job.slots_per_worker
    tail = len(child_names.host_suffix(job.name, job.namespace, cluster_domain))
    openmpi = job.mpi_implementation == MPIImplementation.OPENMPI
    slot_suffix = len(f" slots={slots}") if openmpi else len(f":{slots}")
    worker_hosts = replicas * (len(child_names.worker_prefix(job.name)) + tail) + digits_total(replicas)
    launcher_host = len(child_names.launcher_name(job.name)) + tail if job.run_launcher_as_worker else 0
    hosts = replicas + (1 if job.run_launcher_as_worker else 0)
    hostfile = worker_hosts + launcher_host + hosts * (slot_suffix + _NEWLINE)
    if asks_topology_order(job.metadata.annotations):
        if openmpi:  # one bare line per slot; the launcher by its short name (app.children.configmap)
            short_launcher = launcher_host - tail if job.run_launcher_as_worker else 0
            hostfile = slots * (worker_hosts + short_launcher + hosts * _NEWLINE)
        hostfile += MAX_HEADER_BYTES + MAX_TABLE_BYTES + MAX_TABLE_BYTES // 16
    discover = len(_SHEBANG) + worker_hosts + launcher_host + hosts * (len(_ECHO) + _NEWLINE)
    return hostfile + discover


def encoded_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON; 0 for what cannot be encoded (the shape checks report it)."""
    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return 0
