"""The release path (docs/releasing.md), checked offline: the GitHub Actions workflows pass actionlint (with
ShellCheck on their run scripts) and zizmor, both of which are shown to catch a planted problem; the release
workflow's tag check runs for real; ``tools/gen_install.py --image`` pins the hook's image and changes nothing
else; deploy/'s image is an unmistakable placeholder; the release notes, the README's version table and every
other page or manifest name one minimum Metacontroller (``tools/gen_install.METACONTROLLER_MINIMUM``).
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

from tests.docs.test_docs import PAGES
from tests.packaging.test_manifests import kustomize
from tests.support.paths import ROOT
from tools import gen_install

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yaml"))
RELEASE = ROOT / ".github" / "workflows" / "release.yaml"
VENV_BIN = Path(sys.executable).parent
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
DIGEST = "sha256:" + "0123456789abcdef" * 4
PINNED = f"ghcr.io/example-owner/mpi-operator-hook@{DIGEST}"
# Where a Metacontroller version is named to users: the pages, the manifests' comments, the workflows.
VERSION_NAMING = [
    *PAGES,
    *WORKFLOWS,
    *sorted((ROOT / "deploy").rglob("*.yaml")),
    *sorted((ROOT / "metacontroller").glob("*.yaml")),
]
# Metacontroller's versions are the only v4.x.y this project names (Kubernetes is v1, Trainer v2, the Go
# operator v0). A minimum is ">= v4.x.y", "≥ v4.x.y", "at least v4.x.y" or "older than v4.x.y".
METACONTROLLER_VERSION = re.compile(r"\bv4\.\d+(?:\.\d+)?\b\+?")
MINIMUM_CLAIM = re.compile(r"(?:>=|≥|at least|older than)\s*(v4\.\d+(?:\.\d+)?\b\+?)")


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


# --- one minimum Metacontroller --------------------------------------------------------------------------


def pinned_metacontroller() -> str:
    """The Metacontroller release deploy/ installs: the ``?ref=`` of its component's remote resource."""
    text = (ROOT / "deploy" / "components" / "metacontroller" / "kustomization.yaml").read_text()
    (ref,) = re.findall(r"metacontroller/manifests/production\?ref=(v[\d.]+)", text)
    return ref


def metacontroller_version_problems(texts: dict[str, str], minimum: str, pinned: str) -> list[str]:
    """Every Metacontroller version a page or manifest names: a minimum must be ``minimum``, any other the
    release deploy/ pins (what the tests run)."""
    problems = []
    for where, text in texts.items():
        minimums = [m.start(1) for m in MINIMUM_CLAIM.finditer(text)]
        for match in METACONTROLLER_VERSION.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            if match.start() in minimums and match.group() != minimum:
                problems.append(f"{where}:{line}: needs {match.group()}, the minimum is {minimum}")
            elif match.start() not in minimums and match.group() not in (pinned, minimum):
                problems.append(f"{where}:{line}: names {match.group()}, deploy/ pins {pinned}")
    return problems


def version_texts() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): path.read_text() for path in VERSION_NAMING}


def readme_minimum_metacontroller() -> str:
    """The minimum in the README's version table: its Metacontroller row's "needs ≥ vX"."""
    readme = (ROOT / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| Metacontroller |")]
    (minimum,) = re.findall(r"\| needs ≥ (v[\d.]+)", row)
    return minimum


def release_notes_minimum_metacontroller(workflow: str) -> str:
    (minimum,) = re.findall(r"Install next to Metacontroller >= (v[\d.]+)", workflow)
    return minimum


def test_the_release_notes_and_the_readme_name_the_same_minimum_metacontroller() -> None:
    assert release_notes_minimum_metacontroller(RELEASE.read_text()) == gen_install.METACONTROLLER_MINIMUM
    assert readme_minimum_metacontroller() == gen_install.METACONTROLLER_MINIMUM
    assert f"Metacontroller >= {gen_install.METACONTROLLER_MINIMUM} running" in gen_install.HEADER


def test_every_metacontroller_version_named_is_the_minimum_or_the_pinned_release() -> None:
    texts = version_texts()
    assert any(MINIMUM_CLAIM.search(text) for text in texts.values())
    assert (
        metacontroller_version_problems(texts, gen_install.METACONTROLLER_MINIMUM, pinned_metacontroller())
        == []
    )


def test_the_version_check_catches_another_minimum_and_another_release() -> None:
    texts = version_texts()
    workflow = str(RELEASE.relative_to(ROOT))
    minimum, pinned = gen_install.METACONTROLLER_MINIMUM, pinned_metacontroller()
    older = {
        **texts,
        workflow: texts[workflow].replace(f"Metacontroller >= {minimum}", "Metacontroller >= v4.15.0"),
    }
    assert release_notes_minimum_metacontroller(older[workflow]) != minimum
    (problem,) = metacontroller_version_problems(older, minimum, pinned)
    assert problem.startswith(f"{workflow}:") and problem.endswith(f"needs v4.15.0, the minimum is {minimum}")
    newer = {**texts, "README.md": texts["README.md"].replace(f"{pinned}, which", "v4.18.0, which")}
    assert metacontroller_version_problems(newer, minimum, pinned) == [
        f"README.md:{readme_line(f'{pinned}, which')}: names v4.18.0, deploy/ pins {pinned}"
    ]


def readme_line(fragment: str) -> int:
    lines = (ROOT / "README.md").read_text().splitlines()
    (number,) = [i for i, line in enumerate(lines, start=1) if fragment in line]
    return number


def test_the_changelog_leads_with_what_the_next_release_holds() -> None:
    """releasing.md, step 1: the newest section is ``[Unreleased]`` or the version being released, never an
    older one (a release whose notes were not written)."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    sections = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert sections, "CHANGELOG.md has no release section"
    assert sections[0] in ("Unreleased", version), sections[0]
    assert len(set(sections)) == len(sections), sections
    # Between releases `mpijob --version` says so: the next version, as a development release.
    assert (sections[0] == "Unreleased") == version.endswith(".dev0"), (sections[0], version)
