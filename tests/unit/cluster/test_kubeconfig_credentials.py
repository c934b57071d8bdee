"""``mpijob doctor`` with hostile kubeconfigs: a credential, or anything read from a file named as one, never
appears in its output; a token that could forge a header is refused before anything is sent; exec plugins
are resolved as client-go resolves them (against the kubeconfig's folder) and bounded in output and time.
Real files, real plugin processes, the doctor as a real process against a real server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.cluster import execplugin
from app.cluster.connection import Connection
from app.cluster.kubeconfig import KubeconfigError, load
from app.cluster.reads import CannotRead, Reader
from app.kube.depth import MPIJOB_MAX_DEPTH
from tests.support import doctor_api
from tests.support.doctor_api import Api, Serving, doctor, kubeconfig

# What /etc/shadow looks like: a secret file that is not a token.
SHADOW = "root:$y$j9T$Zm9vYmFy$c2VjcmV0aGFzaA:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n"


api = pytest.fixture(name="api")(doctor_api.running)


def _refused(api: tuple[Api, Serving], config: Path, *secrets: str, cwd: Path | None = None) -> str:
    """Run the doctor: exit 2, one line on stderr, no secret anywhere, and no request sent. Its stderr."""
    done = doctor("pi", "--kubeconfig", str(config), cwd=cwd)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    for secret in secrets:
        for part in (secret, *secret.splitlines()):
            assert part not in done.stdout + done.stderr
    assert api[0].seen == []
    return done.stderr


def test_a_token_file_that_is_not_a_token_is_named_never_printed(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow"
    shadow.write_text(SHADOW)
    err = _refused(api, kubeconfig(tmp_path / "config", api[1].url, {"tokenFile": str(shadow)}), SHADOW)
    assert (
        err == f"mpijob doctor: tokenFile {shadow}: not a valid bearer token (contains control characters)\n"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"a" * 9000, "larger than 8192 bytes"), (b"t\xc3\xa9ken", "characters other than visible ASCII")],
)
def test_a_token_file_too_large_or_not_ascii(
    api: tuple[Api, Serving], tmp_path: Path, content: bytes, problem: str
) -> None:
    token = tmp_path / "token"
    token.write_bytes(content)
    config = kubeconfig(tmp_path / "config", api[1].url, {"tokenFile": "token"})  # relative: its folder
    assert problem in _refused(api, config, content.decode(errors="replace"))


def test_a_token_file_that_is_a_device_or_a_fifo_is_not_read(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        config = kubeconfig(tmp_path / "config", api[1].url, {"tokenFile": path})
        assert f"tokenFile {path}: not a regular file" in _refused(api, config)


@pytest.mark.parametrize("token", ["abc\r\nX-Injected: 1", "abc\ndef", "a\x00b", "a\x1b[2Jb"])
def test_an_inline_token_with_controls_is_refused_unechoed(
    api: tuple[Api, Serving], tmp_path: Path, token: str
) -> None:
    err = _refused(api, kubeconfig(tmp_path / "config", api[1].url, {"token": token}), token)
    refusal = "context 'x': the user's token: not a valid bearer token (contains control characters)"
    assert err == f"mpijob doctor: {refusal}\n"


def test_a_header_httpx_would_quote_is_refused_unquoted() -> None:
    """The last guard, in the client: httpx's own error would carry the header's value."""
    secret = "Bearer s3cret\nInjected: 1"
    with pytest.raises(CannotRead) as raised:
        Reader(Connection("http://127.0.0.1:1", "x", "ns", False, {"Authorization": secret}))
    assert str(raised.value) == "the kubeconfig's Authorization header holds characters HTTP cannot carry"


def _script(path: Path, token: str, marker: Path, extra: str = "") -> Path:
    """An exec plugin: a shell script that leaves ``marker`` and prints an ExecCredential with ``token``."""
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "status": {"token": token}})
    path.write_text(f"#!/bin/sh\n{extra}touch '{marker}'\necho '{credential}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _exec_user(command: str, args: list[str] | None = None) -> dict[str, Any]:
    spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": command, "args": args or []}
    return {"exec": {**spec, "interactiveMode": "Never"}}


def test_a_relative_exec_command_runs_from_the_kubeconfigs_folder(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    configs, elsewhere = tmp_path / "configs", tmp_path / "cwd"
    configs.mkdir()
    elsewhere.mkdir()
    _script(configs / "plugin.sh", "from-kubeconfig-folder", tmp_path / "ran-beside-config")
    _script(elsewhere / "plugin.sh", "from-cwd", tmp_path / "ran-in-cwd")
    config = kubeconfig(configs / "config", api[1].url, _exec_user("./plugin.sh"))
    done = doctor("pi", "--kubeconfig", str(config), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran-beside-config").exists() and not (tmp_path / "ran-in-cwd").exists()
    assert {auth for _, auth in api[0].seen} == {"Bearer from-kubeconfig-folder"}
    assert "from-kubeconfig-folder" not in done.stdout + done.stderr


def test_exec_commands_resolve_as_client_go_resolves_them(tmp_path: Path) -> None:
    assert execplugin.resolve("./plugin.sh", tmp_path) == str(tmp_path / "plugin.sh")
    assert execplugin.resolve("bin/get-token", tmp_path) == str(tmp_path / "bin" / "get-token")
    assert execplugin.resolve("kubelogin", tmp_path) == "kubelogin"  # PATH
    assert execplugin.resolve("/usr/bin/aws", tmp_path) == "/usr/bin/aws"


def test_an_exec_plugin_token_with_controls_is_refused_unechoed(
    api: tuple[Api, Serving], tmp_path: Path
) -> None:
    token = "leak\\u001b[2J\\r\\nX: y"  # JSON escapes: the plugin prints ESC, CR, LF inside the token
    plugin = _script(tmp_path / "plugin.sh", token, tmp_path / "ran")
    err = _refused(api, kubeconfig(tmp_path / "config", api[1].url, _exec_user(str(plugin))), "leak")
    assert "status.token: not a valid bearer token (contains control characters)" in err


def _python_plugin(tmp_path: Path, body: str) -> Path:
    config = tmp_path / "config"
    script = tmp_path / "plugin.py"
    script.write_text(body)
    return kubeconfig(config, "http://127.0.0.1:1", _exec_user(sys.executable, [str(script)]))


def test_an_exec_plugin_that_prints_too_much_is_stopped(tmp_path: Path) -> None:
    config = _python_plugin(tmp_path, "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    started = time.monotonic()
    with pytest.raises(KubeconfigError, match=r"printed more than 1048576 bytes"):
        load(str(config))
    assert time.monotonic() - started < 10


def test_an_exec_plugin_that_hangs_is_stopped_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execplugin, "_EXEC_TIMEOUT_SECONDS", 1.0)
    config = _python_plugin(tmp_path, "import time\ntime.sleep(30)\n")
    started = time.monotonic()
    with pytest.raises(KubeconfigError, match=r"did not answer in 1s"):
        load(str(config))
    assert time.monotonic() - started < 5


HOSTILE_CONFIGS: dict[str, tuple[str, str]] = {
    "YAML nested 1,000 deep": (
        "a: " + "[" * 1000 + "]" * 1000 + "\n",
        "1:1003: exceeded maximum nesting depth",  # libyaml's own limit at 1,000 comes first
    ),
    "clusters a number": ("clusters: 5\n", "clusters is not a list"),
    "not YAML": ("a: [\n", "2:1: did not find expected node content"),
    "a mapping nowhere": ("- 1\n", "not a kubeconfig (not a mapping)"),
}


@pytest.mark.parametrize(("text", "message"), HOSTILE_CONFIGS.values(), ids=HOSTILE_CONFIGS.keys())
def test_a_hostile_kubeconfig_file_is_exit_2(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config"
    config.write_text(text)
    done = doctor("pi", "--kubeconfig", str(config))
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    where = f"{config}:" if message[0].isdigit() else f"{config}: "  # a YAML error names line and column
    # PyYAML 6.0's wheels bundle a libyaml without its nesting limit: the reader's own bound refuses first.
    ours = f"mpijob doctor: {config}:1:67: nests deeper than {MPIJOB_MAX_DEPTH} levels (the hook's limit)\n"
    assert done.stderr == f"mpijob doctor: {where}{message}\n" or (
        message.endswith("exceeded maximum nesting depth") and done.stderr == ours
    ), done.stderr


HOSTILE_USERS: dict[str, tuple[dict[str, Any], str]] = {
    "auth-provider a string": ({"auth-provider": "oidc"}, "auth-provider '?' is not supported"),
    "exec args a string": (
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "args": "a b"}},
        "exec args is not a list of strings",
    ),
    "exec with no command": (
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1"}},
        "exec has no command",
    ),
    "a token that is a list": ({"token": ["a"]}, "the user's token is not a string"),
    "a tokenFile that is a number": ({"tokenFile": 5}, "tokenFile is not a string"),
}


@pytest.mark.parametrize(("user", "message"), HOSTILE_USERS.values(), ids=HOSTILE_USERS.keys())
def test_a_hostile_user_entry_is_exit_2(
    api: tuple[Api, Serving], tmp_path: Path, user: dict[str, Any], message: str
) -> None:
    assert message in _refused(api, kubeconfig(tmp_path / "config", api[1].url, user))


@pytest.mark.parametrize(
    "cluster", [{"server": "http://[::1"}, {"server": "http://127.0.0.1:1", "proxy-url": "::nonsense"}]
)
def test_a_server_or_proxy_that_is_no_url_is_exit_2(tmp_path: Path, cluster: dict[str, str]) -> None:
    config = kubeconfig(tmp_path / "config", cluster.pop("server"), {"token": "t"}, **cluster)
    done = doctor("pi", "--kubeconfig", str(config))
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == "mpijob doctor: the kubeconfig's server or proxy-url is not a usable URL\n"
