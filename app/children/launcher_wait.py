"""The launcher's init container ``wait-for-workers``: hold ``mpirun`` back until every worker answers ssh.

A launcher created at start-up (``launcherCreationPolicy: AtStartup``, the default) starts while its workers
are still coming up: their names are published in cluster DNS only once they are Ready (and a miss is
cached), and a job re-created under the same name first meets the records of the previous job's Pods. Its
first ``mpirun`` then fails (``Could not resolve hostname``, ``No route to host``) and only the launcher
Job's back-off saves it, at the cost of its ``backoffLimit``.

The init container runs the launcher's own image as the launcher's own user, with its env and mounts (the
SSH key, ``/etc/mpi``), and tries the path ``mpirun`` takes: ``ssh <host> true`` to each host of the
hostfile (the image's ssh client configuration, port included, applies as for ``mpirun``), again every
second until each one answers. The wait is bounded; at the bound, or without ``ssh``, ``date`` or the
hostfile, it exits 0 and the launcher runs as it would have without it. It never fails the Pod.
"""

from __future__ import annotations

from typing import Any

from app.api.defaults import Job
from app.api.hostfile_order_annotations import asks_topology_order
from app.api.types import MPIImplementation
from app.children import hostfile_order_lines
from app.kube import names

# The default bound on the wait. Workers may take minutes to pull a large image; past this, mpirun meets
# whatever is there, as without the wait.
DEFAULT_WAIT_SECONDS = 300
# The largest bound an annotation may set (a day): anything longer is the Job's activeDeadlineSeconds' job.
MAX_WAIT_SECONDS = 86_400
# Hosts checked at once (each check is one ssh process).
_PARALLEL = 16
# The container's command is ``sh -c SCRIPT NAME BOUND SELF [RESOLVE]``: where SELF, the host skipped, is.
SELF_HOST_ARG = 5

# POSIX sh. $1: the bound in seconds; $2: the launcher's own host name (runLauncherAsWorker), or "-" for
# none (the apiserver keeps "" in a list, but the hook emits no empty strings), skipped: its
# ssh server, if any, starts with the launcher's main container; $3: a name that must resolve in cluster DNS
# too (Hydra's proxies on the workers connect back to the launcher by name), checked with ``getent`` when
# the image has it. The work runs in a subshell so that even
# an error of the shell itself ends in "exit 0": the wait may only ever help.
SCRIPT = r"""(
set -f
bound=$1 self=${2#-} name=$3 hostfile=/etc/mpi/hostfile cr=$(printf '\r')
say() { echo "wait-for-workers: $*"; }
command -v ssh >/dev/null 2>&1 || { say "no ssh in the image: not waiting"; exit 0; }
[ -r "$hostfile" ] || { say "no $hostfile: not waiting"; exit 0; }
start=$(date +%s 2>/dev/null)
case $start$bound in ''|*[!0-9]*) say "no clock (date +%s) or no bound: not waiting"; exit 0;; esac
ORDER_WAIT
hosts=
while read -r host rest || [ -n "$host" ]; do
  host=${host%%:*}
  case $host in ''|'#'*) continue;; esac
ONCE_EACH
  [ "${host%%.*}" = "$self" ] || hosts="$hosts $host"
done < "$hostfile"
check() {
  last=
  while :; do
    now=$(date +%s)
    if [ $((now - start)) -ge "$bound" ]; then
      say "$1: no answer within ${bound}s (${last:-not tried})"
      return 1
    fi
    err=$(ssh -o BatchMode=yes -o ConnectTimeout=2 -o ConnectionAttempts=1 -o LogLevel=ERROR -n -T \
      "$1" true 2>&1 >/dev/null) && return 0
    err=${err%"$cr"}
    [ "$err" = "$last" ] || say "$1: ${err:-ssh failed}, retrying"
    last=$err
    sleep 1
  done
}
count=0 missing=0 pids=
for host in $hosts; do
  check "$host" &
  pids="$pids $!" count=$((count + 1))
  if [ $((count % PARALLEL)) -eq 0 ]; then
    for pid in $pids; do wait "$pid" || missing=$((missing + 1)); done
    pids=
  fi
done
for pid in $pids; do wait "$pid" || missing=$((missing + 1)); done
if [ -n "$name" ] && command -v getent >/dev/null 2>&1; then
  until getent hosts "$name" >/dev/null 2>&1; do
    if [ $(($(date +%s) - start)) -ge "$bound" ]; then
      say "$name: not resolved within ${bound}s"
      break
    fi
    sleep 1
  done
fi
took=$(($(date +%s) - start))
if [ "$missing" -eq 0 ]; then
  say "$count hosts answer ssh (${took}s)"
else
  say "$missing of $count hosts did not answer within ${bound}s: starting the launcher anyway"
fi
); exit 0
""".replace("PARALLEL", str(_PARALLEL))
# Ours, for an ordered job (``app.children.hostfile_order_lines``): wait until the order header, the
# hostfile's first line, says the order is final (with runLauncherAsWorker: final for this very Pod, named by
# the downward API).
POD_ENV = "MPI_HOOK_POD_NAME"
_ORDER_WAIT = r"""  until read -r first < "$hostfile" && case $first in
      "FINAL_MARK"*) [ -z "${POD_ENV:-}" ] || [ "${first##*"LAUNCHER_POD"}" = "$POD_ENV" ];;
      *) false;; esac; do
    if [ $(($(date +%s) - start)) -ge "$bound" ]; then
      say "the hostfile's order is not final within ${bound}s: starting on the order it has"
      break
    fi
    sleep 1
  done
  say "hostfile order: ${first:-none} ($(($(date +%s) - start))s)"
"""
# An ordered Open MPI hostfile names a host on one line per slot: each is checked once.
_ONCE_EACH = """  case " $hosts " in *" $host "*) continue;; esac
"""
ORDERED_SCRIPT = SCRIPT.replace("ONCE_EACH\n", _ONCE_EACH).replace(
    "ORDER_WAIT\n",
    _ORDER_WAIT.replace("POD_ENV", POD_ENV)
    .replace("FINAL_MARK", hostfile_order_lines.FINAL)
    .replace("LAUNCHER_POD", hostfile_order_lines.LAUNCHER_POD),
)
SCRIPT = SCRIPT.replace("ORDER_WAIT\n", "").replace("ONCE_EACH\n", "")


def wait_seconds(job: Job) -> int:
    """The bound from the MPIJob's annotation (``0``: no init container), else the default. A value that is
    not a whole number of seconds within a day counts as unset."""
    value = job.metadata.annotations.get(names.LAUNCHER_WAIT_ANNOTATION, "").strip()
    if value.isascii() and value.isdigit() and int(value) <= MAX_WAIT_SECONDS:
        return int(value)
    return DEFAULT_WAIT_SECONDS


_COPIED = ("image", "imagePullPolicy", "env", "envFrom", "volumeMounts", "securityContext", "resources")


def with_wait_for_workers(
    spec: dict[str, Any], job: Job, *, self_host: str | None = None, ordered: bool | None = None
) -> dict[str, Any]:
    """Append ``wait-for-workers`` to the launcher's ``initContainers`` (after the user's own, so their set-up
    and native sidecars run first), made from the decorated first container. Its ``resources`` are the first
    container's: the Pod's effective request stays the containers' sum, and quotas that require limits pass.
    ``self_host`` and ``ordered`` say otherwise than the hook's own launcher (a converted job on Trainer).
    """
    bound = wait_seconds(job)
    containers = spec.get("containers") or []
    init = spec.get("initContainers") or []
    # Names as written: the schema's check of a template is the apiserver's, so one may not be a string yet.
    taken = {str(c.get("name")) for c in [*containers, *init] if isinstance(c, dict)}
    if bound == 0 or not containers or names.WAIT_FOR_WORKERS_CONTAINER in taken:
        return spec
    first = containers[0]
    if self_host is None:
        self_host = names.launcher_name(job.name) if job.run_launcher_as_worker else "-"
    if ordered is None:
        ordered = asks_topology_order(job.metadata.annotations)
    script = ORDERED_SCRIPT if ordered else SCRIPT
    command = ["sh", "-c", script, names.WAIT_FOR_WORKERS_CONTAINER, str(bound), self_host]
    if job.mpi_implementation != MPIImplementation.OPENMPI:
        # Without the cluster domain: never in the Pod's own /etc/hosts, so only cluster DNS answers it.
        command.append(names.launcher_name(job.name) + names.host_suffix(job.name, job.namespace, ""))
    container: dict[str, Any] = {"name": names.WAIT_FOR_WORKERS_CONTAINER, "command": command}
    container.update({key: first[key] for key in _COPIED if first.get(key)})
    if ordered and job.run_launcher_as_worker:
        pod_name = {"name": POD_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        container["env"] = [*container.get("env", []), pod_name]
    return {**spec, "initContainers": [*init, container]}
