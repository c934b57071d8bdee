"""The rules about what the containers run: mpirun's process count against the hostfile, Open MPI 4-only
settings, a launcher that starts no MPI program, and workers that never start sshd."""

from __future__ import annotations

from collections.abc import Iterator

from app.api import field_path
from app.api.defaults import Job
from app.api.lint import mpi_commands, reading
from app.api.lint.catalog import IGNORE_ANNOTATION, Rule
from app.api.lint.findings import Finding, Severity, plural
from app.api.types import MPIImplementation, ReplicaType


def np_mismatch(job: Job) -> Iterator[Finding]:
    slots, workers = job.slots_per_worker, job.worker_replicas
    total = slots * workers + (slots if job.run_launcher_as_worker else 0)
    for index, container in enumerate(reading.containers(job, ReplicaType.LAUNCHER)):
        launch = mpi_commands.find_launch(container)
        if launch is None or launch.processes is None or launch.processes == total:
            continue
        how = f"slotsPerWorker {slots} x {plural(workers, 'worker')}"
        if job.run_launcher_as_worker:
            how += f" + {slots} on the launcher (runLauncherAsWorker)"
        if launch.processes > total:
            effect = (
                "ranks are oversubscribed onto the slots"
                if launch.oversubscribe
                else "Open MPI refuses to start (not enough slots); other MPIs oversubscribe"
            )
        else:
            idle = total - launch.processes
            effect = f"{plural(idle, 'slot')} {'stays' if idle == 1 else 'stay'} idle"
        yield Finding(
            Rule.NP_MISMATCH,
            Severity.WARNING,
            f"{reading.LAUNCHER}.template.spec.containers[{index}].{launch.field}",
            f"{launch.program} {launch.flag} {launch.processes} starts"
            f" {plural(launch.processes, 'process', 'processes')} but the hostfile has"
            f" {plural(total, 'slot')} ({how}): {effect}",
            _np_fix(job, launch.flag, total, launch.processes),
        )


def _np_fix(job: Job, flag: str, total: int, processes: int) -> str:
    """Fewer processes, or more slots; never ``-n 0``: a hostfile without slots needs slots."""
    wanted = f"so that the hostfile has {plural(processes, 'slot')}"
    if total > 0:
        return f"use {flag} {total}, or change slotsPerWorker or Worker replicas {wanted}"
    if job.slots_per_worker == 0:
        return f"set slotsPerWorker to at least 1 {wanted}"
    if job.worker_spec is not None:
        return f"set Worker replicas to at least 1 {wanted}"
    return f"add a Worker replica spec (spec.mpiReplicaSpecs.Worker) or set spec.runLauncherAsWorker {wanted}"


def orte_only_settings(job: Job) -> Iterator[Finding]:
    if job.mpi_implementation != MPIImplementation.OPENMPI:
        return
    orte: list[tuple[str, str]] = []
    prrte = False
    for kind in ReplicaType:
        for index, container in enumerate(reading.containers(job, kind)):
            base = f"{field_path.replica_spec(kind)}.template.spec.containers[{index}]"
            for name, where in mpi_commands.mca_settings(container):
                prrte = prrte or name.startswith(("PRTE_MCA_", "prte")) or where == "prtemca"
                if name.startswith(("OMPI_MCA_orte_", "orte_")):
                    orte.append((name, f"{base}.{where}" if where != "prtemca" else base))
    if orte and not prrte:
        names = ", ".join(sorted({n for n, _ in orte}))
        yield Finding(
            Rule.ORTE_ONLY_SETTINGS,
            Severity.WARNING,
            orte[0][1],
            f"{names} only reach Open MPI 4 and older: Open MPI 5 replaced ORTE with PRRTE and silently"
            " ignores them",
            "if the image runs Open MPI 5, set the PRRTE equivalent too (PRTE_MCA_<name> in env, or"
            " mpirun --prtemca <name> <value>)",
        )


def launcher_command(job: Job) -> Iterator[Finding]:
    containers = reading.containers(job, ReplicaType.LAUNCHER)
    if not containers or any(mpi_commands.find_launch(c) is not None for c in containers):
        return
    first = containers[0]
    if not first.get("command") and not first.get("args"):
        message = (
            "the launcher sets no command, so the image's entrypoint must run mpirun: lint cannot see it"
        )
        severity = Severity.INFO
    else:
        words = " ".join(
            [*mpi_commands.strings(first.get("command")), *mpi_commands.strings(first.get("args"))]
        )
        message = (
            f"the launcher runs {words[:80]!r}, which is neither mpirun, mpiexec, horovodrun nor a"
            " shell running one: the workers' ranks are never started"
        )
        severity = Severity.WARNING
    yield Finding(
        Rule.LAUNCHER_COMMAND,
        severity,
        f"{reading.LAUNCHER}.template.spec.containers[0].command",
        message,
        "start the program with mpirun (or mpiexec, horovodrun), e.g. command: [mpirun, -np, '2', ./app]",
    )


def worker_command(job: Job) -> Iterator[Finding]:
    containers = reading.containers(job, ReplicaType.WORKER)
    with_command = [(i, c) for i, c in enumerate(containers) if c.get("command") or c.get("args")]
    if not with_command or len(with_command) < len(containers):
        return  # a container on the image's entrypoint may well be the sshd one
    if any(mpi_commands.mentions_sshd(c) for _, c in with_command):
        return
    index, container = with_command[0]
    field = "command" if container.get("command") else "args"
    yield Finding(
        Rule.WORKER_COMMAND,
        Severity.WARNING,
        f"{reading.WORKER}.template.spec.containers[{index}].{field}",
        "no worker container starts sshd, but the launcher reaches workers over SSH: mpirun fails with"
        " 'ssh: connect to host ... Connection refused' unless the command starts sshd itself",
        "remove the command (the image runs sshd) or run e.g. /usr/sbin/sshd -De; if your script starts"
        f" sshd, say so with the annotation {IGNORE_ANNOTATION}: {Rule.WORKER_COMMAND.value}",
    )
