"""Our hook as users run it: ``uvicorn app.server.main:app`` in its own process, set by ``MPI_OPERATOR_*``.

It listens on a fixed loopback port chosen once, so Metacontroller's hook URLs stay valid when a test kills
the hook and starts it again. Its log (JSON lines: an ``event`` record with namespace, job, type and reason
for each event it would raise) is one file across restarts; tests read the events from it.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.e2e.kube import Kube, wait_for
from tests.e2e.processes import Processes, Started, free_port, http_ok, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
# The Secret whose token Metacontroller sends the hook (deploy/base/caller-token.yaml).
CALLER_NAMESPACE, CALLER_SECRET = "mpi-operator", "mpi-operator-hook-caller"
CALLER_KINDS = {"Namespace", "ServiceAccount", "Secret"}


def install_caller_token(kube: Kube, workdir: Path) -> dict[str, str]:
    """The caller token as deploy/ makes it: its Namespace, ServiceAccount and service-account token Secret
    from ``kubectl kustomize deploy/hook-only/``, the token the cluster's token controller writes into it,
    and the hook's setting that reads it from a file (as the Deployment mounts it)."""
    built = kube.kubectl("kustomize", str(ROOT / "deploy" / "hook-only")).stdout
    wanted = [o for o in yaml.safe_load_all(built) if o and o["kind"] in CALLER_KINDS]
    assert any(o["kind"] == "Secret" and o["metadata"]["name"] == CALLER_SECRET for o in wanted)
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(wanted))
    token_file = workdir / "caller-token"
    token_file.touch(mode=0o600)
    token_file.write_bytes(caller_token(kube))
    return {"MPI_OPERATOR_CALLER_TOKEN_FILE": str(token_file)}


def caller_token(kube: Kube, previous: bytes = b"") -> bytes:
    """The token in the caller Secret, once the token controller has written one (other than ``previous``)."""

    def written() -> bytes | None:
        secret = kube.get("secrets", CALLER_NAMESPACE, CALLER_SECRET) or {}
        token = base64.b64decode((secret.get("data") or {}).get("token", ""))
        return token if token and token != previous else None

    return wait_for(written, 60, "the token controller to write the caller token")


@dataclass
class Hook:
    processes: Processes
    workdir: Path
    host: str = "127.0.0.1"
    port: int = 0
    started: Started | None = None
    # More MPI_OPERATOR_* settings, e.g. gang scheduling.
    settings: dict[str, str] = field(default_factory=dict)
    # The command that serves the hook, given --host and --port (default: uvicorn, see start).
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.port = self.port or free_port()
        self.seed_file = self.workdir / "ssh-key-seed"
        self.seed_file.write_bytes(secrets.token_bytes(48))
        self.seed_file.chmod(0o600)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / "hook.log"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
        env.update(
            MPI_OPERATOR_SSH_KEY_SEED_FILE=str(self.seed_file),
            MPI_OPERATOR_CLUSTER_DOMAIN="cluster.local",
            MPI_OPERATOR_LOG_LEVEL="DEBUG",  # one line per sync: tests count them
            MPI_OPERATOR_LOG_FORMAT="json",  # read back field by field, as a log pipeline would
            PYTHONUNBUFFERED="1",
        )
        env.update(self.settings)
        uvicorn = (sys.executable, "-m", "uvicorn", "app.server.main:app")
        argv = [*(self.command or uvicorn), "--host", self.host, "--port", str(self.port)]
        if not self.command:
            argv.append("--no-access-log")
        self.started = self.processes.start("hook", argv, env=env, cwd=ROOT)
        wait_until_ready(self.started, http_ok(f"{self.url}/readyz"), 30, "the hook (uvicorn)")

    def kill(self) -> None:
        """SIGKILL, as when a node dies under the hook: no graceful shutdown."""
        if self.started is not None:
            self.processes.stop(self.started, signal.SIGKILL)
            self.started = None

    def stop(self) -> None:
        if self.started is not None:
            self.processes.stop(self.started)
            self.started = None

    def _records(self, what: str | set[str], namespace: str, name: str) -> list[dict[str, object]]:
        """The hook's JSON log records of some kinds (``sync``, ``event``) about this job, oldest first."""
        kinds = {what} if isinstance(what, str) else what
        records = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # uvicorn's own start-up lines
            if (
                isinstance(record, dict)
                and record.get("event") in kinds
                and (record.get("namespace"), record.get("job")) == (namespace, name)
            ):
                records.append(record)
        return records

    def syncs(self, namespace: str, name: str) -> int:
        """How many syncs of this job the hook has answered (all runs of the process)."""
        return len(self._records("sync", namespace, name))

    def events(self, namespace: str, name: str) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the events the hook logged for this job, oldest first.

        A sync that logs the same events as the last sync that logged any is a repeat, not new Events: two
        syncs that read the parent from Metacontroller's informer cache before the first one's status write
        arrived both see the same transitions (e.g. Created and LintWarnings) and both log them; the API
        server holds each once. A sync's events are the lines logged before its own ``sync`` line.
        """
        found: list[tuple[str, str, str]] = []
        last: list[tuple[str, str, str]] = []
        this_sync: list[tuple[str, str, str]] = []
        for record in [*self._records({"event", "sync"}, namespace, name), {"event": "sync"}]:
            if record["event"] == "event":
                this_sync.append((str(record["type"]), str(record["reason"]), str(record["message"])))
                continue
            if this_sync and this_sync != last:
                found += this_sync
            last, this_sync = this_sync or last, []
        return found
