"""A kubeconfig's exec credential plugin, run as kubectl (client-go) runs it, and bounded.

The command is resolved as client-go resolves it: a relative path with a separator (``./plugin.sh``,
``bin/get-token``) against the folder of the kubeconfig file that holds it, never the current directory; a
bare name (``kubelogin``) through ``PATH``. The plugin gets ``_EXEC_TIMEOUT_SECONDS`` in all and may print
``_EXEC_OUTPUT_BYTES`` on each of stdout and stderr; more is refused. What it prints is never echoed, except
the last line of its stderr when it fails (its own error message, as kubectl shows it).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from app.cluster.tokens import bearer_token
from app.cluster.untrusted import Hostile

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
_EXEC_TIMEOUT_SECONDS = 120.0
# An ExecCredential is a token or a certificate and key: a few KiB.
_EXEC_OUTPUT_BYTES = 1024 * 1024


class PluginError(Exception):
    """The plugin gave no usable credential; the message names the plugin and the problem, never a secret."""


@dataclass(frozen=True)
class Plugin:
    """What the kubeconfig's ``exec`` says, checked: the command resolved, args and env as strings."""

    command: list[str]
    env: dict[str, str]
    api_version: str
    interactive: bool
    hint: str


def resolve(command: str, directory: Path) -> str:
    """client-go's rule: a relative command with a path separator is relative to the folder of the kubeconfig
    file that holds it (``kubeconfig.py`` resolves it as it merges the files)."""
    path = Path(command)
    if path.is_absolute() or path.name == command:
        return command
    return str(directory / path)


def run(plugin: Plugin, cluster_info: dict[str, Any] | None) -> dict[str, Any]:
    """The plugin's ExecCredential ``status``, with ``KUBERNETES_EXEC_INFO`` set as kubectl sets it."""
    info: dict[str, Any] = {"interactive": plugin.interactive}
    if cluster_info is not None:
        info["cluster"] = cluster_info
    environ = {**os.environ, **plugin.env}
    environ["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": info}, default=str
    )
    stdout = _run(plugin, environ)
    try:
        output = json.loads(stdout)
    except (ValueError, RecursionError):
        raise PluginError(f"exec plugin {plugin.command[0]} printed something other than JSON") from None
    status = output.get("status") if isinstance(output, dict) else None
    if not isinstance(status, dict):
        raise PluginError(f"exec plugin {plugin.command[0]} printed no ExecCredential status")
    return status


def credential(spec: Any, cluster: dict[str, Any], where: str) -> str | tuple[bytes, bytes]:
    """Run the kubeconfig's ``exec`` (its command already ``resolve``d) as kubectl does: the token it gives,
    else its client certificate and key (PEM). ``cluster`` is the kubeconfig's, for ``provideClusterInfo``."""
    if not isinstance(spec, dict):
        raise PluginError(f"{where} exec is not a mapping")
    checked = plugin(spec, where)
    info = {k: v for k, v in cluster.items() if k != "extensions"} if spec.get("provideClusterInfo") else None
    status = run(checked, info)
    name = checked.command[0]
    bearer = _token(status, name)
    if bearer:
        return bearer
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if isinstance(cert, str) and isinstance(key, str) and cert and key:
        return cert.encode(), key.encode()
    raise PluginError(f"exec plugin {name} gave neither a token nor a client certificate")


def _token(status: dict[str, Any], name: str) -> str | None:
    """The status's token, checked like a kubeconfig's (refused unechoed if it could forge a header)."""
    value = status.get("token")
    if not value:
        return None
    if not isinstance(value, str):
        raise PluginError(f"exec plugin {name}: status.token is not a string")
    try:
        return bearer_token(value, f"exec plugin {name}: status.token")
    except Hostile as err:
        raise PluginError(str(err)) from None


def _run(plugin: Plugin, environ: dict[str, str]) -> bytes:
    name = plugin.command[0]
    try:
        process = subprocess.Popen(
            plugin.command,
            env=environ,
            stdin=None if plugin.interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError:
        raise PluginError(
            f"exec plugin {name!r} not found" + (f": {plugin.hint}" if plugin.hint else "")
        ) from None
    except OSError as err:
        raise PluginError(f"exec plugin {name!r} cannot be run ({err.strerror})") from None
    deadline = time.monotonic() + _EXEC_TIMEOUT_SECONDS
    try:
        stdout, stderr = _outputs(process, name, deadline)
        code = process.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise PluginError(f"exec plugin {name} did not answer in {_EXEC_TIMEOUT_SECONDS:g}s") from None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if code != 0:
        last = (stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1][:200]
        raise PluginError(f"exec plugin {name} exited with code {code}: {last}")
    return stdout


def _outputs(process: subprocess.Popen[bytes], name: str, deadline: float) -> tuple[bytes, bytes]:
    """stdout and stderr until both close, each at most ``_EXEC_OUTPUT_BYTES``, before ``deadline``."""
    assert process.stdout is not None and process.stderr is not None
    read: dict[IO[bytes], bytearray] = {process.stdout: bytearray(), process.stderr: bytearray()}
    with selectors.DefaultSelector() as selector:
        for stream in read:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise PluginError(f"exec plugin {name} did not answer in {_EXEC_TIMEOUT_SECONDS:g}s")
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                read[key.fileobj] += chunk  # type: ignore[index]
                if len(read[key.fileobj]) > _EXEC_OUTPUT_BYTES:  # type: ignore[index]
                    raise PluginError(f"exec plugin {name} printed more than {_EXEC_OUTPUT_BYTES} bytes")
    return bytes(read[process.stdout]), bytes(read[process.stderr])


def plugin(spec: dict[str, Any], where: str) -> Plugin:
    """The kubeconfig's ``exec`` entry checked, its command already ``resolve``d; ``where`` starts each error
    (``context 'x':``)."""
    api_version, command = spec.get("apiVersion"), spec.get("command")
    if api_version not in EXEC_API_VERSIONS:
        raise PluginError(f"{where} exec apiVersion {api_version!r} is not supported")
    args, env = spec.get("args") or [], spec.get("env") or []
    if not isinstance(command, str) or not command:
        raise PluginError(f"{where} exec has no command")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise PluginError(f"{where} exec args is not a list of strings")
    if not isinstance(env, list) or not all(_is_variable(e) for e in env):
        raise PluginError(f"{where} exec env is not a list of name and value strings")
    # kubectl's rule: a plugin may talk to the user unless it says Never, when stdin is a terminal.
    interactive = spec.get("interactiveMode", "IfAvailable") != "Never" and sys.stdin.isatty()
    return Plugin(
        [command, *args],
        {e["name"]: e["value"] for e in env},
        str(api_version),
        interactive,
        str(spec.get("installHint") or ""),
    )


def _is_variable(entry: object) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("name", "value"))
