"""The doctor's kubeconfig reader (app/cli/doctor/kubeconfig.py, over lightkube's models): files merged as
kubectl merges them, contexts, CA and client certificates from files or data, tokens, exec credential plugins
run for real as client-go runs them, the Pod's service account, clear refusals.

The real node (tests/node/test_node_doctor.py) reads a real API server with a client-certificate kubeconfig
and with an exec plugin that gives a service account's token.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.cluster import kubeconfig
from app.cluster.connection import sync_client
from app.cluster.kubeconfig import KubeconfigError, load
from tests.e2e.pki import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _config(
    clusters: dict[str, Any], users: dict[str, Any], contexts: dict[str, Any], current: str = ""
) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": c} for n, c in contexts.items()],
        **({"current-context": current} if current else {}),
    })  # fmt: skip


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_token_and_a_ca_file_relative_to_the_kubeconfig(tmp_path: Path, pki: Pki) -> None:
    (tmp_path / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    config = _config(
        {"c": {"server": "https://10.0.0.1:6443/", "certificate-authority": "ca.crt"}},
        {"u": {"token": "t0ken"}},
        {"ctx": {"cluster": "c", "user": "u", "namespace": "ml"}},
        current="ctx",
    )
    connection = load(str(_write(tmp_path / "config", config)))
    assert (connection.server, connection.context, connection.namespace) == (
        "https://10.0.0.1:6443",
        "ctx",
        "ml",
    )
    assert connection.headers == {"Authorization": "Bearer t0ken"}
    assert isinstance(connection.verify, ssl.SSLContext)
    assert connection.verify.verify_mode == ssl.CERT_REQUIRED
    assert "t0ken" not in repr(connection)


def test_kubeconfig_files_merge_first_definition_wins(tmp_path: Path) -> None:
    first = _config(
        {"c": {"server": "https://first"}},
        {"u": {"token": "a"}},
        {"one": {"cluster": "c", "user": "u"}},
        "one",
    )
    second = _config(
        {"c": {"server": "https://second"}, "d": {"server": "http://127.0.0.1:8001"}},
        {"u": {"token": "b"}},
        {"one": {"cluster": "d"}, "two": {"cluster": "d", "user": "u"}},
        "two",
    )
    files = os.pathsep.join(str(_write(tmp_path / n, t)) for n, t in (("a", first), ("b", second)))
    environ = {"KUBECONFIG": files}
    merged = load(environ=environ)
    assert (merged.context, merged.server, merged.headers) == (
        "one",
        "https://first",
        {"Authorization": "Bearer a"},
    )
    other = load(context="two", environ=environ)
    assert (other.server, other.verify, other.namespace) == ("http://127.0.0.1:8001", False, "default")
    assert other.headers == {"Authorization": "Bearer a"}  # user u: the first file's


def test_client_certificate_data_is_loaded_and_a_wrong_key_refused(tmp_path: Path, pki: Pki) -> None:
    def data(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    user = {"client-certificate-data": data(pki.admin_cert), "client-key-data": data(pki.admin_key)}
    cluster = {"server": "https://127.0.0.1:6443", "certificate-authority-data": data(pki.ca_cert)}
    config = _write(
        tmp_path / "config", _config({"c": cluster}, {"u": user}, {"x": {"cluster": "c", "user": "u"}}, "x")
    )
    connection = load(str(config))
    assert connection.headers == {}
    assert isinstance(connection.verify, ssl.SSLContext)
    user["client-key-data"] = data(pki.serving_key)  # not the certificate's key
    wrong = _write(
        tmp_path / "wrong", _config({"c": cluster}, {"u": user}, {"x": {"cluster": "c", "user": "u"}}, "x")
    )
    with pytest.raises(KubeconfigError, match="client certificate or key cannot be used"):
        load(str(wrong))
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("mpijob-doctor-*")), "key files left behind"


def _plugin(tmp_path: Path, output: dict[str, Any] | str, code: int = 0) -> Path:
    """A real exec credential plugin: a Python script that records the env kubectl gives and prints JSON."""
    script = tmp_path / "plugin.py"
    text = output if isinstance(output, str) else json.dumps(output)
    script.write_text(
        "import json, os, sys\n"
        f"open({str(tmp_path / 'seen.json')!r}, 'w').write(json.dumps(dict(os.environ)))\n"
        f"sys.stderr.write('plugin says no\\n')\nprint({text!r})\nsys.exit({code})\n"
    )
    return script


def _exec_config(tmp_path: Path, script: Path, **extra: Any) -> Path:
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(script)],
    }
    user = {"exec": {**plugin, "env": [{"name": "PLUGIN_SETTING", "value": "42"}], **extra}}
    cluster = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}
    return _write(
        tmp_path / "config", _config({"c": cluster}, {"u": user}, {"x": {"cluster": "c", "user": "u"}}, "x")
    )


def test_an_exec_plugin_token(tmp_path: Path) -> None:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "ex3c"},
    }
    connection = load(str(_exec_config(tmp_path, _plugin(tmp_path, credential), provideClusterInfo=True)))
    assert connection.headers == {"Authorization": "Bearer ex3c"}
    seen = json.loads((tmp_path / "seen.json").read_text())
    info = json.loads(seen["KUBERNETES_EXEC_INFO"])
    assert seen["PLUGIN_SETTING"] == "42"
    assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://127.0.0.1:6443"
    assert isinstance(connection.verify, ssl.SSLContext) and connection.verify.verify_mode == ssl.CERT_NONE


def test_an_exec_plugin_client_certificate(tmp_path: Path, pki: Pki) -> None:
    status = {"clientCertificateData": pki.admin_cert.read_text(), "clientKeyData": pki.admin_key.read_text()}
    connection = load(str(_exec_config(tmp_path, _plugin(tmp_path, {"status": status}))))
    assert connection.headers == {}


@pytest.mark.parametrize(
    ("output", "code", "message"),
    [
        ({"status": {}}, 0, "neither a token nor a client certificate"),
        ("not json", 0, "printed something other than JSON"),
        ({"status": {"token": "x"}}, 3, "exited with code 3: plugin says no"),
    ],
)
def test_an_exec_plugin_that_fails_is_named(tmp_path: Path, output: Any, code: int, message: str) -> None:
    with pytest.raises(KubeconfigError, match=message):
        load(str(_exec_config(tmp_path, _plugin(tmp_path, output, code))))


def test_refusals_name_the_file_context_or_field(tmp_path: Path) -> None:
    cluster = {"server": "https://x"}
    cases = {
        "no current-context": _config({"c": cluster}, {}, {"x": {"cluster": "c"}}),
        "context 'x' names cluster 'gone'": _config({}, {}, {"x": {"cluster": "gone"}}, "x"),
        "auth-provider 'oidc' is not supported": _config(
            {"c": cluster},
            {"u": {"auth-provider": {"name": "oidc"}}},
            {"x": {"cluster": "c", "user": "u"}},
            "x",
        ),
        "its cluster has no server": _config({"c": {}}, {}, {"x": {"cluster": "c"}}, "x"),
    }
    for message, text in cases.items():
        with pytest.raises(KubeconfigError, match=message):
            load(str(_write(tmp_path / "config", text)))
    with pytest.raises(KubeconfigError, match="context 'nope' is not in"):
        load(str(_write(tmp_path / "config", cases["no current-context"])), context="nope")
    with pytest.raises(KubeconfigError, match="no such file"):
        load(str(tmp_path / "missing"))
    with pytest.raises(KubeconfigError, match="no kubeconfig"):
        load(environ={"HOME": str(tmp_path / "empty")})


def test_fields_lightkube_would_take_as_they_come_are_refused_or_used_as_kubectl_does(tmp_path: Path) -> None:
    """lightkube's models keep whatever the YAML holds ("true" as a truthy string, a number as a namespace),
    refuse a whole file for one context with no cluster, and take a cluster with no server as localhost:8080;
    the adapter refuses the first two as kubectl does and tolerates what kubectl tolerates."""
    user = {"u": {"token": "t", "some-future-field": 1}}
    refused = {
        "the cluster's insecure-skip-tls-verify is not true or false": (
            {"server": "https://x", "insecure-skip-tls-verify": "true"},
            {"cluster": "c", "user": "u"},
        ),
        "its namespace is not a string": ({"server": "https://x"}, {"cluster": "c", "namespace": 5}),
        "the cluster's tls-server-name is not a string": (
            {"server": "https://x", "tls-server-name": ["a"]},
            {"cluster": "c"},
        ),
    }
    for message, (cluster, context) in refused.items():
        with pytest.raises(KubeconfigError, match=message):
            load(str(_write(tmp_path / "config", _config({"c": cluster}, user, {"x": context}, "x"))))
    cluster = {"server": "http://127.0.0.1:8001", "disable-compression": True}
    used = _config({"c": cluster}, user, {"x": {"cluster": "c", "user": "u"}, "unused": {"user": "u"}}, "x")
    assert load(str(_write(tmp_path / "config", used))).headers == {"Authorization": "Bearer t"}
    with pytest.raises(KubeconfigError, match="context 'unused' names cluster ''"):
        load(str(tmp_path / "config"), context="unused")


def test_merged_files_keep_their_own_folders_and_a_token_file_wins_over_a_token(tmp_path: Path) -> None:
    """client-go resolves each file's relative paths against that file's folder before it merges, and a
    user's tokenFile takes precedence over its token (lightkube's order too)."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "token").write_text("from-the-second-folder\n")
    first = _config({"c": {"server": "http://127.0.0.1:8001"}}, {}, {"x": {"cluster": "c", "user": "u"}}, "x")
    second = _config({}, {"u": {"token": "inline", "tokenFile": "token"}}, {})
    files = [_write(tmp_path / "config", first), _write(tmp_path / "other" / "config", second)]
    connection = load(environ={"KUBECONFIG": os.pathsep.join(map(str, files))})
    assert connection.headers == {"Authorization": "Bearer from-the-second-folder"}


def test_a_ca_file_that_is_a_device_is_not_read(tmp_path: Path) -> None:
    """lightkube hands the path to ssl unread; the adapter reads it first, bounded, and refuses a device."""
    cluster = {"server": "https://127.0.0.1:6443", "certificate-authority": "/dev/zero"}
    config = _config({"c": cluster}, {"u": {"token": "t"}}, {"x": {"cluster": "c", "user": "u"}}, "x")
    with pytest.raises(KubeconfigError, match="certificate-authority /dev/zero: not a regular file"):
        load(str(_write(tmp_path / "config", config)))


def test_a_v1beta1_exec_plugin_is_told_its_own_api_version(tmp_path: Path) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "status": {"token": "b3ta"}}
    config = _exec_config(tmp_path, _plugin(tmp_path, credential))
    text = config.read_text().replace(
        "client.authentication.k8s.io/v1\n", "client.authentication.k8s.io/v1beta1\n"
    )
    connection = load(str(_write(config, text)))
    assert connection.headers == {"Authorization": "Bearer b3ta"}
    info = json.loads(json.loads((tmp_path / "seen.json").read_text())["KUBERNETES_EXEC_INFO"])
    assert info["apiVersion"] == "client.authentication.k8s.io/v1beta1" and "cluster" not in info["spec"]


def test_in_a_pod_the_service_accounts_token_is_read_again_as_it_rotates(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("first-token\n")
    (account / "namespace").write_text("ml")
    (account / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT_DIR", account)
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443", "HOME": str(tmp_path)}
    connection = load(environ=environ)
    assert (connection.server, connection.namespace, connection.headers) == (
        "https://[fd00::1]:6443",
        "ml",
        {},
    )
    assert (
        isinstance(connection.verify, ssl.SSLContext) and connection.verify.verify_mode == ssl.CERT_REQUIRED
    )
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        return httpx.Response(200, json={})

    with sync_client(connection, httpx.MockTransport(answer), token_check=0) as client:
        client.get("/api")
        (account / "token").write_text("rotated-token")
        client.get("/api")
    assert seen == ["Bearer first-token", "Bearer rotated-token"]


def test_in_a_pod_a_token_that_is_not_one_is_refused_unechoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("a\x1bb")
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT_DIR", tmp_path)
    with pytest.raises(
        KubeconfigError, match=r"token .*token: not a valid bearer token \(contains control"
    ) as e:
        load(
            environ={
                "KUBERNETES_SERVICE_HOST": "10.0.0.1",
                "KUBERNETES_SERVICE_PORT": "443",
                "HOME": str(tmp_path),
            }
        )
    assert "a\x1bb" not in str(e.value)
