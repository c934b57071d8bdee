"""``mpijob convert --to trainjob --runtime NAME``: a runtime read from the cluster with the user's kubeconfig
(app/cli/runtimes.py, through the doctor's read-only client), against a real HTTP server on loopback that
serves runtimes at Trainer's API paths and records every request.

A plain NAME is the job's namespace's TrainingRuntime, else the ClusterTrainingRuntime; ``trainingruntime/``
and ``clustertrainingruntime/`` ask for one kind; what cannot be read is exit 2 with the reason, never the
kubeconfig's token. An existing file is still read as ``--runtime FILE``.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.convert.trainjob import to_trainjob
from tests.support.trainer_variants import PI, load
from tests.unit.cli.test_cli import mpijob, objects
from tests.unit.convert.test_convert_trainjob import HOOK_ENV

TOKEN = "kubeconfig-token-never-printed-4711"
API = "/apis/trainer.kubeflow.org/v1alpha1"


def fitting_runtime(kind: str, namespace: str = "") -> dict[str, Any]:
    """pi's derived TrainingRuntime without the env the hook adds: a runtime pi runs on as it is."""
    runtime = copy.deepcopy(to_trainjob(load(PI)).prerequisites[0])
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        for container in job["template"]["spec"]["template"]["spec"]["containers"]:
            container["env"] = [e for e in container.get("env", []) if not HOOK_ENV.match(e["name"])]
    runtime["kind"] = kind
    runtime["metadata"] = {
        "name": "pi",
        "resourceVersion": "7",
        **({"namespace": namespace} if namespace else {}),
    }
    return runtime


@dataclass
class ApiServer:
    """Objects at their API paths; paths listed in ``refuse`` answer 403. Every request is kept."""

    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    refuse: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, Authorization
    url: str = ""

    def answer(self, method: str, path: str, authorization: str) -> tuple[int, dict[str, Any]]:
        self.requests.append((method, path, authorization))
        if authorization != f"Bearer {TOKEN}":
            return 401, {"kind": "Status", "message": "Unauthorized"}
        if path in self.refuse:
            return 403, {"kind": "Status", "message": f"forbidden: {path}"}
        found = self.objects.get(path) if method == "GET" else None
        return (200, found) if found is not None else (404, {"kind": "Status", "message": "not found"})

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]


@pytest.fixture
def api() -> Iterator[ApiServer]:
    server = ApiServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._reply()

        def do_POST(self) -> None:
            self._reply()

        def _reply(self) -> None:
            status, body = server.answer(self.command, self.path, self.headers.get("Authorization", ""))
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def kubeconfig(tmp_path: Path, api: ApiServer, namespace: str = "ml") -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "lab",
                "clusters": [{"name": "lab", "cluster": {"server": api.url}}],
                "users": [{"name": "me", "user": {"token": TOKEN}}],
                "contexts": [
                    {"name": "lab", "context": {"cluster": "lab", "user": "me", "namespace": namespace}}
                ],
            }
        )
    )
    return path


def convert(tmp_path: Path, api: ApiServer, *args: str, job: dict[str, Any] | None = None) -> Any:
    """``mpijob convert --to trainjob`` of pi (or ``job``) from stdin, run from ``tmp_path`` (where no file
    of the runtime's name is), with the kubeconfig of ``api``."""
    config = str(kubeconfig(tmp_path, api))
    argv = ("convert", "--to", "trainjob", "--kubeconfig", config, *args, "-")
    done = mpijob(*argv, stdin=yaml.safe_dump(job or load(PI)), env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert TOKEN not in done.stdout + done.stderr
    return done


def namespaced(namespace: str) -> str:
    return f"{API}/namespaces/{namespace}/trainingruntimes/pi"


CLUSTER = f"{API}/clustertrainingruntimes/pi"


def test_a_plain_name_is_the_namespaces_training_runtime_first(tmp_path: Path, api: ApiServer) -> None:
    api.objects = {namespaced("ml"): fitting_runtime("TrainingRuntime", "ml"), CLUSTER: fitting_runtime(
        "ClusterTrainingRuntime")}  # fmt: skip
    done = convert(tmp_path, api, "--runtime", "pi")
    assert done.returncode == 0, done.stderr
    [trainjob] = objects(done)
    assert trainjob["kind"] == "TrainJob"
    assert trainjob["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                                              "name": "pi"}  # fmt: skip
    # The job names no namespace: the kubeconfig context's. One GET, with the kubeconfig's token.
    assert api.requests == [("GET", namespaced("ml"), f"Bearer {TOKEN}")]


def test_without_a_training_runtime_a_plain_name_is_the_cluster_training_runtime(
    tmp_path: Path, api: ApiServer
) -> None:
    api.objects = {CLUSTER: fitting_runtime("ClusterTrainingRuntime"), namespaced("other"): fitting_runtime(
        "TrainingRuntime", "other")}  # fmt: skip
    done = convert(tmp_path, api, "--runtime", "pi", "-n", "team-a")
    assert done.returncode == 0, done.stderr
    assert objects(done)[0]["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    assert api.paths() == [namespaced("team-a"), CLUSTER]


def test_the_jobs_own_namespace_comes_before_n_and_each_namespace_is_read_once(
    tmp_path: Path, api: ApiServer
) -> None:
    api.objects = {namespaced(ns): fitting_runtime("TrainingRuntime", ns) for ns in ("team-a", "team-b")}
    jobs = []
    for i, namespace in enumerate(("team-a", "team-b", "team-a", "")):
        job = load(PI)
        job["metadata"] = {"name": f"pi-{i}", **({"namespace": namespace} if namespace else {})}
        jobs.append(yaml.safe_dump(job))
    config = str(kubeconfig(tmp_path, api))
    done = mpijob(
        *("convert", "--to", "trainjob", "--runtime", "trainingruntime/pi", "-n", "team-b"),
        *("--kubeconfig", config, "-"),
        stdin="---\n".join(jobs),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert [o["metadata"].get("namespace") for o in objects(done)] == ["team-a", "team-b", "team-a", None]
    assert {o["spec"]["runtimeRef"]["kind"] for o in objects(done)} == {"TrainingRuntime"}
    assert api.paths() == [namespaced("team-a"), namespaced("team-b")]


def test_a_kind_prefix_asks_for_that_kind_only(tmp_path: Path, api: ApiServer) -> None:
    api.objects = {namespaced("ml"): fitting_runtime("TrainingRuntime", "ml"), CLUSTER: fitting_runtime(
        "ClusterTrainingRuntime")}  # fmt: skip
    done = convert(tmp_path, api, "--runtime", "clustertrainingruntime/pi")
    assert done.returncode == 0, done.stderr
    assert objects(done)[0]["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    assert api.paths() == [CLUSTER]
    api.requests.clear()
    api.objects.pop(namespaced("ml"))
    missing = convert(tmp_path, api, "--runtime", "trainingruntime/pi")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert api.paths() == [namespaced("ml")], "a TrainingRuntime asked for is never a ClusterTrainingRuntime"
    assert "no TrainingRuntime pi in namespace ml" in missing.stderr


def test_a_runtime_not_there_is_exit_2_naming_what_was_looked_for(tmp_path: Path, api: ApiServer) -> None:
    done = convert(tmp_path, api, "--runtime", "pi")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == (
        "mpijob convert: --runtime pi: not a file, and context lab has no TrainingRuntime pi in namespace"
        " ml and no ClusterTrainingRuntime pi (kubectl get trainingruntimes,clustertrainingruntimes -A lists"
        " what there is)"
    )


@pytest.mark.parametrize(
    ("refused", "permission"),
    [
        (namespaced("ml"), "get trainingruntimes.trainer.kubeflow.org in namespace ml"),
        (CLUSTER, "get clustertrainingruntimes.trainer.kubeflow.org (cluster-scoped)"),
    ],
)
def test_a_permission_missing_is_exit_2_naming_it(
    tmp_path: Path, api: ApiServer, refused: str, permission: str
) -> None:
    api.refuse = {refused}
    done = convert(tmp_path, api, "--runtime", "pi")
    assert (done.returncode, done.stdout) == (2, "")
    prefix = "mpijob convert: --runtime pi: not a file, and cannot be read: permission missing:"
    assert done.stderr.startswith(f"{prefix} {permission} (403 Forbidden")
    assert api.paths()[-1] == refused


def test_credentials_refused_or_no_kubeconfig_is_exit_2(tmp_path: Path, api: ApiServer) -> None:
    config = kubeconfig(tmp_path, api)
    config.write_text(config.read_text().replace(TOKEN, "stale-token-never-printed"))
    argv = ("convert", "--to", "trainjob", "--runtime", "pi", "--kubeconfig", str(config), str(PI))
    refused = mpijob(*argv, cwd=tmp_path)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert "did not accept your credentials (401 Unauthorized)" in refused.stderr
    assert "stale-token-never-printed" not in refused.stderr
    nowhere = {"HOME": str(tmp_path / "home"), "KUBECONFIG": "", "KUBERNETES_SERVICE_HOST": ""}
    none = mpijob("convert", "--to", "trainjob", "--runtime", "pi", str(PI), env=nowhere, cwd=tmp_path)
    assert (none.returncode, none.stdout) == (2, "")
    assert none.stderr.strip() == (
        "mpijob convert: --runtime pi: not a file, and cannot be read: no kubeconfig: give --kubeconfig, set"
        " KUBECONFIG, or create ~/.kube/config"
    )


@pytest.mark.parametrize("argument", ["pods/pi", "trainingruntime/", "./runtime.yaml"])
def test_neither_a_file_nor_a_runtime_name_is_exit_2_before_any_read(
    tmp_path: Path, api: ApiServer, argument: str
) -> None:
    done = convert(tmp_path, api, "--runtime", argument)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == (
        f"mpijob convert: argument --runtime: {argument!r}: no such file, and not a runtime's NAME,"
        " trainingruntime/NAME or clustertrainingruntime/NAME (NAME a DNS subdomain):"
        " see mpijob convert --help"
    )
    assert api.requests == []


def test_an_existing_file_is_still_a_file_and_takes_no_cluster_arguments(
    tmp_path: Path, api: ApiServer
) -> None:
    (tmp_path / "pi").write_text(yaml.safe_dump(fitting_runtime("ClusterTrainingRuntime")))
    done = mpijob("convert", "--to", "trainjob", "--runtime", "pi", str(PI), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert objects(done)[0]["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    with_cluster = convert(tmp_path, api, "--runtime", "pi")
    assert (with_cluster.returncode, with_cluster.stdout) == (2, "")
    assert "-n, --kubeconfig and --context go with --runtime NAME, not a file" in with_cluster.stderr
    assert api.requests == []
