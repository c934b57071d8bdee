"""The release path (docs/releasing.md), checked offline: the GitHub Actions workflows pass actionlint (with
ShellCheck on their run scripts) and zizmor, both of which are shown to catch a planted problem; the release
workflow's tag check runs for real; ``tools/gen_install.py --image`` pins the hook's image and changes nothing
else; deploy/'s image is an unmistakable placeholder.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_manifests import kustomize
from tools import gen_install

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yaml"))
RELEASE = ROOT / ".github" / "workflows" / "release.yaml"
VENV_BIN = Path(sys.executable).parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
DIGEST = "sha256:" + "0123456789abcdef" * 4
PINNED = f"ghcr.io/example-owner/mpi-operator-hook@{DIGEST}"


def tool(name: str) -> str:
    """A checker from the test extras (next to this Python, else on PATH)."""
    found = VENV_BIN / name if (VENV_BIN / name).exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]' brings it")
    return str(found)


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    command = [tool("actionlint"), "-no-color", "-shellcheck", tool("shellcheck"), *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)


def zizmor(*files: Path) -> subprocess.CompletedProcess[str]:
    # pedantic: also the low-severity findings (e.g. a write permission without a comment saying why).
    command = [tool("zizmor"), "--offline", "--persona", "pedantic", "--no-progress", *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)


def release_workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(RELEASE.read_text())
    return loaded


def step(job: str, step_id: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = release_workflow()["jobs"][job]["steps"]
    return next(s for s in steps if s.get("id") == step_id)


def test_there_is_a_release_workflow() -> None:
    assert RELEASE in WORKFLOWS


def test_actionlint_finds_no_problem() -> None:
    done = actionlint(*WORKFLOWS)
    assert done.returncode == 0, f"actionlint:\n{done.stdout}{done.stderr}"


def test_zizmor_finds_no_problem() -> None:
    done = zizmor(*WORKFLOWS)
    assert done.returncode == 0, f"zizmor --offline:\n{done.stdout}{done.stderr}"


def test_both_checkers_catch_a_tag_pinned_action_and_a_template_in_a_run_script(tmp_path: Path) -> None:
    """The two tests above can fail: the release workflow with two planted mistakes does not pass."""
    text = RELEASE.read_text()
    pinned = re.search(r"actions/checkout@[0-9a-f]{40} # (v[\d.]+)", text)
    assert pinned is not None, "the release workflow checks out with actions/checkout pinned by commit"
    planted = text.replace(pinned.group(0), f"actions/checkout@{pinned.group(1)}", 1).replace(
        'echo "version=$version"', 'echo "version=$version ${{ github.event.head_commit.message }}"', 1
    )
    assert planted.count("${{ github.event.head_commit.message }}") == 1
    workflow = tmp_path / ".github" / "workflows" / "release.yaml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(planted)

    linted = actionlint(workflow)
    assert linted.returncode != 0
    assert '"github.event.head_commit.message" is potentially untrusted' in linted.stdout
    audited = zizmor(workflow)
    assert audited.returncode != 0
    assert "template-injection" in audited.stdout
    assert "unpinned-uses" in audited.stdout


def test_nothing_is_pushed_before_the_tag_is_checked() -> None:
    """Every job that may write (an image, a release) runs after the tag check; the workflow grants nothing
    by default and each job names its own permissions."""
    workflow = release_workflow()
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        permissions = job["permissions"]
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        if any(level == "write" for level in permissions.values()):
            assert "check" in needs, f"job {name} may write before the tag check"


def run_tag_check(tag: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """The release workflow's own tag check, run with bash as GitHub runs it, for a push of ``tag``."""
    script = step("check", "version")["run"]
    outputs = tmp_path / "github_output"
    outputs.write_text("")
    env = {**os.environ, "GITHUB_REF_NAME": tag, "GITHUB_OUTPUT": str(outputs)}
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
        env=env,
    )
    return done, outputs.read_text()


def test_the_tag_check_accepts_the_pyproject_version(tmp_path: Path) -> None:
    done, outputs = run_tag_check(f"v{VERSION}", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs == f"version={VERSION}\n"


@pytest.mark.parametrize("tag", [f"v{VERSION}.1", VERSION, "v0.0.0-rc1"])
def test_the_tag_check_refuses_any_other_tag(tag: str, tmp_path: Path) -> None:
    done, outputs = run_tag_check(tag, tmp_path)
    assert done.returncode == 1
    assert f"::error::tag {tag} is not v{VERSION}, pyproject.toml's version" in done.stdout
    assert outputs == ""


def hook_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [deployment] = [
        o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == gen_install.DEPLOYMENT
    ]
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    [container] = [c for c in containers if c["name"] == gen_install.CONTAINER]
    return container


def gen_install_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "tools" / "gen_install.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False, cwd=ROOT)


def test_gen_install_pins_the_hook_image_and_changes_nothing_else(tmp_path: Path) -> None:
    built = kustomize("deploy/hook-only")
    output = tmp_path / "mpi-operator-hook.yaml"
    done = gen_install_cli("--image", PINNED, "--output", str(output))
    assert done.returncode == 0, done.stderr
    pinned = [doc for doc in yaml.safe_load_all(output.read_text()) if doc is not None]

    assert hook_container(pinned)["image"] == PINNED
    assert hook_container(built)["image"] != PINNED
    expected = copy.deepcopy(built)
    hook_container(expected)["image"] = PINNED
    assert pinned == expected
    assert f"#   {PINNED}\n" in output.read_text()
    assert "placeholder" not in output.read_text().split("\n---\n", 1)[0]


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/example-owner/mpi-operator-hook:0.1.0",
        "ghcr.io/example-owner/mpi-operator-hook@sha256:0123",
        f"ghcr.io/example-owner/mpi-operator-hook@{DIGEST.upper()}",
        f"{PINNED}\n  evil: true",
    ],
    ids=["tag", "short-digest", "upper-case", "newline"],
)
def test_gen_install_refuses_an_image_not_pinned_by_digest(image: str, tmp_path: Path) -> None:
    output = tmp_path / "mpi-operator-hook.yaml"
    done = gen_install_cli("--image", image, "--output", str(output))
    assert done.returncode == 2
    assert "--image must be pinned by digest, as NAME@sha256:<64 lower-case hex digits>" in done.stderr
    assert "Traceback" not in done.stderr
    assert not output.exists()


def test_deploy_names_a_placeholder_image_that_no_registry_serves() -> None:
    """deploy/ (and so the committed install file) names an image under the reserved ``.invalid`` domain:
    nothing is published before a release, and a cluster given the placeholder fails to pull at once."""
    base = yaml.safe_load((ROOT / "deploy" / "base" / "deployment.yaml").read_text())
    placeholder = hook_container([base])["image"]
    assert placeholder.split("/", 1)[0].endswith(".invalid")
    installed = yaml.safe_load_all(gen_install.INSTALL_PATH.read_text())
    assert hook_container([doc for doc in installed if doc is not None])["image"] == placeholder
