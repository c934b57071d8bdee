"""A real HTTP server on 127.0.0.1 playing the API server for ``mpijob doctor``: the recorded running job at
its paths, any path's answer replaceable by a test (a status, raw bytes, or a stream of chunks for huge or
trickling answers), every request's path and Authorization header kept; and the doctor run as a real
subprocess against it through a kubeconfig file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.support import paths

FIXTURES = paths.FIXTURES / "doctor"
NS = "doctor"
JOB = f"/apis/kubeflow.org/v2beta1/namespaces/{NS}/mpijobs/pi"
LAUNCHER = f"/apis/batch/v1/namespaces/{NS}/jobs/pi-launcher"
PODS = f"/api/v1/namespaces/{NS}/pods"
EVENTS = f"/api/v1/namespaces/{NS}/events"
# What an API server answers to GET /version (the doctor asks it first: is this Kubernetes?).
VERSION = {"major": "1", "minor": "36", "gitVersion": "v1.36.2", "platform": "linux/amd64"}
# A doctor run must end well inside this (its own bounds are what the tests check).
RUN_SECONDS = 60


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    # Instead of ``body``: chunks written as they come, the connection closed after the last.
    stream: Callable[[], Iterator[bytes]] | None = None


def as_json(obj: Any, status: int = 200) -> Answer:
    return Answer(status, json.dumps(obj).encode())


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "running.json").read_text())
    return data


@dataclass
class Api:
    """The recorded objects at their paths (``answers``, by path), the requests seen (path, Authorization)."""

    answers: dict[str, Answer] = field(default_factory=dict)
    seen: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def running(cls) -> Api:
        snap = recorded()
        core = f"/api/v1/namespaces/{NS}"
        api = cls()
        api.answers = {
            "/version": as_json(VERSION),
            JOB: as_json(snap["job"]),
            LAUNCHER: as_json(snap["launcher"]),
            PODS: as_json({"items": snap["pods"], "metadata": {}}),
            f"{core}/services/pi": as_json(snap["service"]),
            f"{core}/secrets/pi-ssh": as_json(snap["secret"]),
            f"{core}/configmaps/pi-config": as_json(snap["config"]),
            EVENTS: as_json({"items": snap["events"], "metadata": {}}),
        }
        for where, text in snap["logs"].items():
            pod, container = where.split("/")
            api.answers[f"{core}/pods/{pod}/log?container={container}"] = Answer(200, text.encode())
        return api


def _handler(api: Api) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            api.seen.append((self.path, self.headers.get("Authorization", "")))
            path = self.path.split("?")[0]
            container = [p for p in self.path.split("&") if p.startswith(("container=", "?container="))]
            key = f"{path}?{container[0].lstrip('?')}" if path.endswith("/log") and container else path
            answer = api.answers.get(key) or as_json({"kind": "Status", "message": "not found"}, 404)
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            if answer.stream is None:
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
                return
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for chunk in answer.stream():
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:
                return  # the doctor stopped reading: what is tested

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


class Serving:
    """``api`` served on 127.0.0.1 until ``close``."""

    def __init__(self, api: Api) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def kubeconfig(path: Path, server: str, user: dict[str, Any], **cluster: str) -> Path:
    """A kubeconfig file: one cluster at ``server`` (and ``cluster``'s fields), one user, the context
    current, namespace ``NS``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": NS}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def doctor(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``mpijob doctor ARGS`` as a real process."""
    argv = [sys.executable, "-m", "app.cli.program", "doctor", *args]
    root = paths.ROOT
    environ = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        argv, capture_output=True, text=True, check=False, cwd=cwd or root, env=environ, timeout=RUN_SECONDS
    )


def running() -> Iterator[tuple[Api, Serving]]:
    """A fixture's body: the scripted API server on loopback, closed afterwards (``pytest.fixture(name=...)``
    in the test module that wants it)."""
    served_api = Api.running()
    serving = Serving(served_api)
    yield served_api, serving
    serving.close()
