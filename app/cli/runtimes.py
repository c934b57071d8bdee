"""``mpijob convert --to trainjob --runtime``: the existing (Cluster)TrainingRuntime the TrainJobs run on.

``--runtime FILE`` (``-`` for stdin), when that file exists: the one runtime in it, e.g. written by ``kubectl
get clustertrainingruntime NAME -o yaml``. Otherwise the argument names a runtime to read from the cluster
with the user's kubeconfig and the doctor's read-only client (one GET per kind tried, once per namespace):
``clustertrainingruntime/NAME``, ``trainingruntime/NAME`` (in the job's namespace, else ``-n``, else the
context's), or a plain ``NAME``: that namespace's TrainingRuntime if there is one, else the
ClusterTrainingRuntime, the two kinds a TrainJob's ``runtimeRef`` names. Whatever cannot be read (no such
runtime, a permission missing, no kubeconfig) is an ``InputError`` that says so: exit code 2.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from app.api.child_names import is_dns1123_subdomain
from app.cli.yamlio import read_text, source_name
from app.convert import trainer
from app.kube.yamltext import InputError, load_documents

if TYPE_CHECKING:
    from app.cluster.connection import Connection
    from app.cluster.reads import Reader

# The modules that read the cluster are imported only when a runtime is read from it.

# The resource names kubectl accepts for each kind (singular and plural), and the kinds a plain NAME tries.
_KINDS = {
    "trainingruntime": (trainer.TRAINING_RUNTIME,),
    "trainingruntimes": (trainer.TRAINING_RUNTIME,),
    "clustertrainingruntime": (trainer.CLUSTER_TRAINING_RUNTIME,),
    "clustertrainingruntimes": (trainer.CLUSTER_TRAINING_RUNTIME,),
}
_PLAIN_NAME = (trainer.TRAINING_RUNTIME, trainer.CLUSTER_TRAINING_RUNTIME)
_FORMS = "NAME, trainingruntime/NAME or clustertrainingruntime/NAME (NAME a DNS subdomain)"


def runtime_file(path: str) -> dict[str, Any]:
    """The one (Cluster)TrainingRuntime in the manifest at ``path``."""
    documents = load_documents(read_text(path), source_name(path))
    found = [d.data for d in documents if isinstance(d.data, dict) and d.data.get("kind")]
    runtimes = [d for d in found if str(d.get("kind")).endswith("TrainingRuntime")]
    if len(runtimes) != 1:
        raise InputError(f"--runtime {source_name(path)}: holds {len(runtimes)} TrainingRuntimes, not one")
    return runtimes[0]


def is_file(argument: str) -> bool:
    """Whether ``--runtime`` names a file (``-``: standard input); a name too long for one is not."""
    try:
        return argument == "-" or Path(argument).is_file()
    except OSError:
        return False


@dataclass(frozen=True)
class RuntimeName:
    """A runtime named on the command line: the kinds to try, in order, and its name."""

    kinds: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, text: str) -> RuntimeName:
        kind, slash, name = text.rpartition("/")
        kinds = _KINDS.get(kind.lower()) if slash else _PLAIN_NAME
        if not kinds or not is_dns1123_subdomain(name):
            raise InputError(f"--runtime {text[:80]!r}: no such file, and not a runtime's {_FORMS}")
        return cls(kinds, name)


class ClusterRuntimes:
    """The named runtime as the cluster has it, read once per namespace with the user's kubeconfig."""

    def __init__(
        self, wanted: RuntimeName, kubeconfig: str | None, context: str | None, namespace: str | None
    ):
        self.wanted = wanted
        self._kubeconfig, self._context, self._namespace = kubeconfig, context, namespace
        self._connection: Connection | None = None
        self._reader: Reader | None = None
        self._found: dict[str, dict[str, Any]] = {}

    def for_namespace(self, job_namespace: str) -> dict[str, Any]:
        """The runtime a job of ``job_namespace`` (empty: ``-n``, else the context's namespace) runs on."""
        from app.cluster.kubeconfig import KubeconfigError, load
        from app.cluster.reads import CannotRead, Reader

        try:
            # Loaded once: an exec credential plugin runs as often as the kubeconfig is read.
            self._connection = self._connection or load(self._kubeconfig, self._context)
            namespace = job_namespace or self._namespace or self._connection.namespace
            if namespace not in self._found:
                self._reader = self._reader or Reader(self._connection)
                self._found[namespace] = self._get(self._reader, namespace, self._connection.context)
        except (CannotRead, KubeconfigError) as err:
            raise InputError(f"--runtime {self.wanted.name}: not a file, and cannot be read: {err}") from None
        return self._found[namespace]

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def _get(self, reader: Reader, namespace: str, context: str) -> dict[str, Any]:
        from app.cluster.reads import Read

        missing = []
        for kind in self.wanted.kinds:
            resource = f"{kind.lower()}s"
            path = f"{resource}/{quote(self.wanted.name, safe='')}"
            if kind == trainer.CLUSTER_TRAINING_RUNTIME:
                read = Read("get", f"{resource}.{trainer.GROUP}", "", f"/apis/{trainer.API_VERSION}/{path}")
                missing.append(f"no {kind} {self.wanted.name}")
            else:
                scope = f"/apis/{trainer.API_VERSION}/namespaces/{quote(namespace, safe='')}"
                read = Read("get", f"{resource}.{trainer.GROUP}", namespace, f"{scope}/{path}")
                missing.append(f"no {kind} {self.wanted.name} in namespace {namespace}")
            found = reader.json(read)
            if found is not None:
                return found
        raise InputError(
            f"--runtime {self.wanted.name}: not a file, and context {context} has {' and '.join(missing)}"
            " (kubectl get trainingruntimes,clustertrainingruntimes -A lists what there is)"
        )


@dataclass
class Runtimes:
    """``--runtime``: none (a runtime derived from each job), a file's, or one read from the cluster."""

    file: dict[str, Any] | None = None
    cluster: ClusterRuntimes | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Runtimes:
        argument: str | None = args.runtime
        if argument is None:
            return cls()
        if is_file(argument):
            if args.namespace or args.kubeconfig or args.context:
                raise InputError("-n, --kubeconfig and --context go with --runtime NAME, not a file")
            return cls(file=runtime_file(argument))
        wanted = RuntimeName.parse(argument)
        return cls(cluster=ClusterRuntimes(wanted, args.kubeconfig, args.context, args.namespace))

    def for_job(self, job: dict[str, Any]) -> dict[str, Any] | None:
        if self.cluster is None:
            return self.file
        metadata = job.get("metadata")
        namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        return self.cluster.for_namespace(str(namespace or ""))

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
