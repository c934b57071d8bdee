"""``mpijob doctor`` makes sure it talks to a Kubernetes API server before it judges what it reads: a server
that answers 404 to every path (a web server, the wrong port) would otherwise pass for a cluster without the
MPIJob or its CRD. Each error is one line, ``<program> doctor: <what is wrong>: <what to do>``
(``app/cli/complaints.py``), the program ``kubectl mpijob`` when kubectl runs the doctor as its plugin.

The doctor runs as a real process against a real HTTP server on 127.0.0.1 (tests/support/doctor_api.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import doctor_api
from tests.support.doctor_api import JOB, Answer, Api, Serving, as_json, doctor, kubeconfig
from tests.support.paths import ROOT
from tests.support.served import VENV_BIN

api = pytest.fixture(name="api")(doctor_api.running)
FIX = "check the kubeconfig's server / context"
ROLE = (
    "it needs get and list on the job's objects in the namespace; the Role in docs/troubleshooting.md grants"
    " exactly that"
)


@pytest.fixture(name="nothing")
def _nothing() -> Iterator[Serving]:
    """A real HTTP server that answers every GET with 404 (a JSON body, as many web servers send)."""
    serving = Serving(Api())
    yield serving
    serving.close()


def _config(tmp_path: Path, url: str) -> str:
    return str(kubeconfig(tmp_path / "config", url, {"token": "t0ken-for-tests"}))


def test_a_server_answering_404_to_everything_is_not_kubernetes(nothing: Serving, tmp_path: Path) -> None:
    done = doctor("pi", "--kubeconfig", _config(tmp_path, nothing.url))
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    heard = "GET /version: HTTP 404 Not Found; GET /api: HTTP 404 Not Found"
    assert done.stderr == f"mpijob doctor: {nothing.url} is not a Kubernetes API server ({heard}): {FIX}\n"


def test_json_output_says_the_same(nothing: Serving, tmp_path: Path) -> None:
    done = doctor("pi", "--kubeconfig", _config(tmp_path, nothing.url), "-o", "json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"].startswith(f"{nothing.url} is not a Kubernetes API server (")
    assert done.stderr.count("\n") == 1


def test_a_web_page_where_the_version_should_be_is_not_kubernetes(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    page = Answer(200, b"<html>hello</html>")
    api[0].answers.update({"/version": page, "/api": page})
    done = doctor("pi", "--kubeconfig", _config(tmp_path, api[1].url))
    assert done.returncode == 2
    assert (
        "is not a Kubernetes API server (GET /version: HTTP 200 OK, not what Kubernetes answers;"
        in done.stderr
    )
    assert [path for path, _ in api[0].seen] == ["/version", "/api"]  # nothing else is asked of it


def test_a_kubernetes_server_without_the_job_is_still_job_not_found(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    del api[0].answers[JOB]
    done = doctor("pi", "--kubeconfig", _config(tmp_path, api[1].url))
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("job-not-found: ")


def test_a_server_that_hides_its_version_is_known_by_its_api(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    del api[0].answers["/version"]
    api[0].answers["/api"] = as_json(
        {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    )
    done = doctor("pi", "--kubeconfig", _config(tmp_path, api[1].url))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("healthy: MPIJob doctor/pi is Running")


def test_a_refused_permission_is_one_line_with_what_to_do(api: tuple[Api, Serving], tmp_path: Path) -> None:
    api[0].answers[JOB] = as_json({"kind": "Status", "apiVersion": "v1", "message": "no"}, 403)
    done = doctor("pi", "--kubeconfig", _config(tmp_path, api[1].url))
    assert done.returncode == 2
    problem = "permission missing: get mpijobs.kubeflow.org in namespace doctor (403 Forbidden: no)"
    assert done.stderr == f"mpijob doctor: {problem}: {ROLE}\n"


def test_as_the_kubectl_plugin_the_program_is_kubectl_mpijob(nothing: Serving, tmp_path: Path) -> None:
    plugin = VENV_BIN / "kubectl-mpijob"
    assert plugin.is_file(), "pip install puts kubectl-mpijob beside mpijob"
    done = subprocess.run(
        [str(plugin), "doctor", "pi", "--kubeconfig", _config(tmp_path, nothing.url)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=doctor_api.RUN_SECONDS,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"kubectl mpijob doctor: {nothing.url} is not a Kubernetes API server (")
    assert done.stderr.endswith(f"): {FIX}\n")
