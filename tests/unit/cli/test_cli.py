"""The ``mpijob`` console script, run as a user runs it: a subprocess of the installed ``.venv/bin/mpijob``.

``render`` prints exactly the children the hook's golden responses hold (Secret data redacted), each valid
for Kubernetes' schema; ``lint`` reports with file and line and CI-usable exit codes; every subcommand
answers ``--help``, reads ``-`` as stdin, reports YAML errors with line and column and never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.hostfile_order_annotations import asks_topology_order
from tests.support import golden_store
from tests.support.golden_cases import request_path, response_path
from tests.support.kube_schema import schema_errors
from tests.support.paths import ROOT

MPIJOB = Path(sys.executable).parent / "mpijob"
PI = ROOT / "examples" / "pi" / "pi.yaml"
GPU = ROOT / "examples" / "gpu" / "tensorflow-benchmarks.yaml"

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: not-an-mpijob
spec:
  containers:
  - name: c
    image: busybox
"""


def mpijob(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_") and k != "NO_COLOR"}
    done = subprocess.run(
        [str(MPIJOB), *args],
        cwd=cwd,
        env={**clean, **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def without_program(line: str, command: list[str]) -> str:
    """``line`` after the prefix every error line of ``command`` starts with, ``mpijob <command>: ``
    (``app.cli.complaints``); a line without it is returned whole, so the comparison fails."""
    own = f"mpijob {command[0]}: "
    return line.removeprefix(own) if line.startswith(own) else line


def objects(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(done.stdout) if d is not None]


def redacted(child: dict[str, Any]) -> dict[str, Any]:
    if child["kind"] == "Secret":
        return {**child, "data": dict.fromkeys(child["data"], "<redacted>")}
    return child


# --- conventions -------------------------------------------------------------------------------------------


def test_the_console_script_is_installed() -> None:
    assert MPIJOB.is_file(), "pip install -e . creates .venv/bin/mpijob"


@pytest.mark.parametrize("command", [[], ["serve"], ["render"], ["lint"], ["convert"]])
def test_help_everywhere(command: list[str]) -> None:
    done = mpijob(*command, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: mpijob")


@pytest.mark.parametrize("command", [["render"], ["lint"], ["convert"]])
def test_yaml_errors_name_the_line_and_column(command: list[str]) -> None:
    done = mpijob(*command, "-", stdin="apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nspec: [unclosed\n")
    assert done.returncode == 2
    assert without_program(done.stderr, command).startswith("<stdin>:4:1: "), done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("command", [["render"], ["lint"], ["convert"]])
def test_a_missing_file_is_unusable_input(command: list[str], tmp_path: Path) -> None:
    done = mpijob(*command, str(tmp_path / "nope.yaml"))
    assert done.returncode == 2
    assert "cannot read" in done.stderr and "No such file" in done.stderr


@pytest.mark.parametrize("command", [["render"], ["lint"], ["convert"]])
def test_a_file_without_mpijob_is_unusable_input(command: list[str]) -> None:
    done = mpijob(*command, "-", stdin=POD)
    assert done.returncode == 2
    assert "(Pod) is not an MPIJob" in done.stderr and "no MPIJob in it" in done.stderr


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    """Run mpijob with stdout on a pseudo-terminal and return what it wrote there."""
    import pty

    main, secondary = pty.openpty()
    clean = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    with subprocess.Popen([str(MPIJOB), *args], cwd=ROOT, env={**clean, **env}, stdout=secondary,
                          stderr=subprocess.DEVNULL) as process:  # fmt: skip
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_unless_no_color() -> None:
    mistakes = str(ROOT / "docs" / "examples" / "gpu-mistakes.yaml")
    assert "\033[33mwarning\033[0m" in _on_a_terminal("lint", mistakes, env={})
    assert "\033[" not in _on_a_terminal("lint", mistakes, env={"NO_COLOR": "1"})


def test_no_colour_when_not_a_terminal() -> None:
    done = mpijob("lint", "-", stdin=PI.read_text().replace('"2"', '"3"'))
    assert "\033[" not in done.stdout and "warning" in done.stdout


@pytest.mark.parametrize("args", [["render", str(PI)], ["lint", "--list-rules"]])
def test_a_reader_gone_early_is_exit_141_not_success(args: list[str]) -> None:
    """``mpijob ... | head`` cut short: the code a shell gives SIGPIPE, never 0 for output nobody read."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
    with subprocess.Popen([str(MPIJOB), *args], cwd=ROOT, env=clean, stdout=write_end,
                          stderr=subprocess.PIPE, text=True) as process:  # fmt: skip
        os.close(write_end)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 141
    assert stderr == ""  # no traceback, no "Exception ignored" at interpreter exit


def test_version_is_the_package_metadata() -> None:
    from importlib import metadata

    done = mpijob("--version")
    assert done.returncode == 0
    assert done.stdout == f"mpijob {metadata.version('mpi-operator-hook')}\n"
    assert metadata.version("mpi-operator-hook") in (ROOT / "pyproject.toml").read_text()


# --- render ------------------------------------------------------------------------------------------------

GOLDEN_RENDERS = {
    "openmpi-first-sync": [],
    "intel-first-sync": [],
    "mpich-first-sync": [],
    "launcher-as-worker": [],
    "cluster-domain": ["--cluster-domain", "cluster.local"],
    "root-ssh-path-defaults": [],
}


@pytest.mark.parametrize("name", GOLDEN_RENDERS, ids=list(GOLDEN_RENDERS))
def test_render_prints_the_hooks_golden_children(name: str, tmp_path: Path) -> None:
    request = golden_store.load(request_path(name))
    expected = golden_store.load(response_path(name))["children"]
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(request["parent"]))
    done = mpijob("render", str(job), *GOLDEN_RENDERS[name])
    assert done.returncode == 0, done.stderr
    assert objects(done) == [redacted(c) for c in expected]


EXAMPLES = sorted((ROOT / "examples").rglob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_render_output_is_only_valid_kubernetes_objects(example: Path) -> None:
    """What `kubectl apply --dry-run=client -f -` would check: every document a known, schema-valid object."""
    children = objects(mpijob("render", str(example)))
    assert children and all(schema_errors(child) == [] for child in children)
    job = yaml.safe_load(example.read_text())
    # No launcher Job before the workers are Ready, or before an ordered hostfile is final (its Pods bound).
    waits = "WaitForWorkersReady" in example.read_text() or asks_topology_order(
        job["metadata"].get("annotations", {})
    )
    assert {c["kind"] for c in children} == {
        "Service",
        "ConfigMap",
        "Secret",
        "Pod",
        *(() if waits else ("Job",)),
    }


INTEL = ROOT / "examples" / "pi" / "pi-intel.yaml"


def test_render_says_why_a_waiting_launcher_is_missing() -> None:
    done = mpijob("render", str(INTEL))
    assert done.returncode == 0
    assert [c["kind"] for c in objects(done)] == ["Service", "ConfigMap", "Secret", "Pod", "Pod"]
    assert done.stderr == (
        f"mpijob render: {INTEL}: MPIJob pi-intel has no launcher Job yet (launcherCreationPolicy"
        " WaitForWorkersReady creates it once every worker Pod is Ready): --workers-ready renders it\n"
    )


def test_render_workers_ready_shows_the_launcher_it_will_get() -> None:
    done = mpijob("render", "--workers-ready", str(INTEL))
    assert done.returncode == 0 and done.stderr == ""
    children = objects(done)
    assert [c["kind"] for c in children] == ["Service", "ConfigMap", "Secret", "Pod", "Pod", "Job"]
    assert all(schema_errors(child) == [] for child in children)
    launcher = children[-1]
    assert launcher["metadata"]["name"] == "pi-intel-launcher"
    assert "status" not in children[3]  # the Ready status it assumed is not printed as the Pods' own
    # An AtStartup job is the same either way.
    assert objects(mpijob("render", "--workers-ready", str(PI)))[-1]["kind"] == "Job"


def test_render_of_a_suspended_waiting_job_says_nothing_about_the_launcher() -> None:
    text = INTEL.read_text().replace(
        "    ttlSecondsAfterFinished: 60\n", "    ttlSecondsAfterFinished: 60\n    suspend: true\n"
    )
    done = mpijob("render", "-", stdin=text)
    assert done.returncode == 0 and done.stderr == ""
    assert "Pod" not in {c["kind"] for c in objects(done)}


def test_render_status_is_a_comment_and_keys_stay_secret() -> None:
    done = mpijob("render", "--status", str(GPU))
    children = objects(done)
    assert [c["kind"] for c in children] == ["Service", "ConfigMap", "Secret", "Pod", "Pod", "Job"]
    assert "PRIVATE KEY" not in done.stdout and "ecdsa-sha2" not in done.stdout
    # --status: the status is there for people, as comments kubectl ignores.
    status = yaml.safe_load("\n".join(line[2:] for line in done.stdout.splitlines() if line.startswith("# ")))
    assert status["status"]["conditions"][0]["type"] == "Created"


def test_render_prints_the_hostfile_as_the_file_it_is() -> None:
    done = mpijob("render", str(PI))
    hosts = "".join(f"    pi-worker-{i}.pi.default.svc slots=1\n" for i in range(2))
    assert "  hostfile: |\n" + hosts in done.stdout


def test_render_without_status_prints_a_one_line_summary() -> None:
    done = mpijob("render", str(PI))
    comments = [line for line in done.stdout.splitlines() if line.startswith("#")]
    assert comments == ["# MPIJob default/pi: Created=True"]


def test_render_reads_every_mpijob_of_a_file_from_stdin() -> None:
    text = (
        PI.read_text() + "---\n" + PI.read_text().replace("name: pi\n", "name: pi2\n  namespace: team-a\n", 1)
    )
    done = mpijob("render", "-", stdin=text)
    names = [(c["kind"], c["metadata"]["namespace"], c["metadata"]["name"]) for c in objects(done)]
    assert ("Job", "default", "pi-launcher") in names and ("Job", "team-a", "pi2-launcher") in names
    assert len(names) == 12


def test_render_namespace_flag_applies_to_jobs_without_one() -> None:
    done = mpijob("render", "-n", "team-b", str(PI))
    assert {c["metadata"]["namespace"] for c in objects(done)} == {"team-b"}


def test_render_settings_come_from_flags_before_the_environment() -> None:
    env = {"MPI_OPERATOR_CLUSTER_DOMAIN": "from.env"}
    from_env = mpijob("render", str(PI), env=env)
    from_flag = mpijob("render", "--cluster-domain", "from.flag", str(PI), env=env)
    assert "pi-worker-0.pi.default.svc.from.env slots=1" in from_env.stdout
    assert "pi-worker-0.pi.default.svc.from.flag slots=1" in from_flag.stdout


@pytest.mark.parametrize(
    ("gang", "api_version"),
    [("volcano", "scheduling.volcano.sh/v1beta1"), ("coscheduler", "scheduling.x-k8s.io/v1alpha1")],
)
def test_render_with_gang_scheduling_shows_the_podgroup(gang: str, api_version: str) -> None:
    """The preview assumes the overlay is applied: the PodGroup, and Pods that join it."""
    done = mpijob("render", "--gang-scheduling", gang, str(PI))
    children = objects(done)
    podgroups = [c for c in children if c["kind"] == "PodGroup"]
    assert [(p["apiVersion"], p["metadata"]["name"]) for p in podgroups] == [(api_version, "pi")]
    assert {c["spec"]["schedulerName"] for c in children if c["kind"] == "Pod"} == {gang}
    launcher = next(c for c in children if c["kind"] == "Job")
    assert launcher["spec"]["template"]["spec"]["schedulerName"] == gang
    assert "GangSchedulingUnavailable" not in done.stdout


def test_render_with_the_workload_api_shows_both_objects() -> None:
    """Ours: the Workload and its PodGroup, and Pods that name the group but keep their scheduler."""
    done = mpijob("render", "--gang-scheduling", "kubernetes", str(PI))
    children = objects(done)
    gang = [
        (c["apiVersion"], c["kind"], c["metadata"]["name"])
        for c in children
        if "scheduling" in c["apiVersion"]
    ]
    assert gang == [
        ("scheduling.k8s.io/v1beta1", "Workload", "pi"),
        ("scheduling.k8s.io/v1beta1", "PodGroup", "pi"),
    ]
    templates = [c["spec"] for c in children if c["kind"] == "Pod"]
    templates.append(next(c for c in children if c["kind"] == "Job")["spec"]["template"]["spec"])
    assert all(t["schedulingGroup"] == {"podGroupName": "pi"} and "schedulerName" not in t for t in templates)
    assert "GangSchedulingUnavailable" not in done.stdout


def test_render_rejects_a_bad_setting_naming_the_flag() -> None:
    done = mpijob("render", "--cluster-domain", "Not_A_Domain", str(PI))
    assert done.returncode == 2
    assert "--cluster-domain" in done.stderr


def test_render_of_an_invalid_job_creates_nothing_and_exits_1() -> None:
    done = mpijob("render", "-", stdin=PI.read_text().replace("replicas: 2", "replicas: 0"))
    assert done.returncode == 1
    assert objects(done) == []
    assert "spec.mpiReplicaSpecs[Worker].replicas" in done.stderr


def test_render_of_an_old_api_version_points_at_convert() -> None:
    done = mpijob("render", "-", stdin=PI.read_text().replace("kubeflow.org/v2beta1", "kubeflow.org/v1"))
    assert done.returncode == 2
    assert "mpijob convert" in done.stderr


# --- lint --------------------------------------------------------------------------------------------------


def test_lint_of_the_examples_is_clean() -> None:
    examples = sorted(str(p) for p in (ROOT / "examples").rglob("*.yaml"))
    done = mpijob("lint", *examples)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"{len(examples)} MPIJobs: no findings\n"


def test_lint_prints_file_line_rule_path_message_and_fix() -> None:
    done = mpijob("lint", "-", stdin=PI.read_text().replace('"2"', '"4"'))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    line = next(i for i, text in enumerate(PI.read_text().splitlines(), 1) if text.strip() == "args:")
    assert lines[0] == (
        f"<stdin>:{line}: warning [np-mismatch]"
        " spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].args (MPIJob pi)"
    )
    assert "-n 4 starts 4 processes but the hostfile has 2 slots" in lines[1]
    assert lines[2].startswith("    fix: use -n 2")


@pytest.mark.parametrize(("fail_on", "code"), [("error", 0), ("warning", 1), ("info", 1), ("never", 0)])
def test_lint_exit_code_follows_fail_on(fail_on: str, code: int) -> None:
    done = mpijob("lint", "--fail-on", fail_on, "-", stdin=PI.read_text().replace('"2"', '"4"'))
    assert done.returncode == code


def test_lint_info_findings_pass_by_default() -> None:
    text = PI.read_text().replace("            command:\n            - mpirun\n            args:\n", "")
    text = text.replace('            - -n\n            - "2"\n            - /home/mpiuser/pi\n', "")
    done = mpijob("lint", "-", stdin=text)
    assert "info [launcher-command]" in done.stdout
    assert done.returncode == 0


def test_lint_json_output() -> None:
    done = mpijob("lint", "-o", "json", "-", stdin=PI.read_text().replace("name: pi", "name: " + "p" * 60))
    report = json.loads(done.stdout)
    assert report["jobs"] == 1
    [finding] = report["findings"]
    assert finding["rule"] == "name-too-long" and finding["severity"] == "error"
    assert (finding["file"], finding["line"], finding["path"]) == ("<stdin>", 10, "metadata.name")
    assert finding["fix"]
    assert done.returncode == 1


def test_lint_with_an_unusable_file_prints_only_the_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [\n")
    done = mpijob("lint", str(PI), str(bad))
    assert done.returncode == 2
    assert done.stderr.startswith(f"mpijob lint: {bad}:2:1:") and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["/nonexistent.yaml"], "cannot read /nonexistent.yaml: No such file or directory"),
        (["examples"], "examples: no .yaml, .yml or .json file in it: add -R"),
        (["-"], "<stdin>:3:1: "),
        (["-o", "json", "/nonexistent.yaml"], "cannot read /nonexistent.yaml"),
    ],
    ids=["missing", "directory", "syntax", "json"],
)
def test_after_an_input_error_lint_prints_only_the_error(args: list[str], error: str) -> None:
    """No "0 MPIJobs: no findings" (or empty JSON report) that reads like a verdict on the file."""
    done = mpijob("lint", *args, stdin="kind: MPIJob\nspec: [\n")
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("mpijob lint: ") and error in line


# --- duplicate keys: three example files concatenated without `---` ---------------------------------------


@pytest.mark.parametrize("command", [["lint"], ["render"], ["convert"]])
def test_a_key_written_twice_is_an_error_naming_both_lines(command: list[str]) -> None:
    pis = sorted((ROOT / "examples" / "pi").glob("*.yaml"))
    text = "".join(p.read_text() for p in pis)
    lines = text.splitlines()
    first, second = [i for i, line in enumerate(lines, 1) if line.startswith("apiVersion:")][:2]
    done = mpijob(*command, "-", stdin=text)
    assert done.returncode == 2
    assert done.stdout == ""
    assert without_program(done.stderr, command) == (
        f'<stdin>:{second}:1: duplicate key "apiVersion": first at line {first}, again at line {second}\n'
    )


def test_a_duplicate_deep_in_a_template_is_found_too() -> None:
    text = PI.read_text().replace(
        "            command:\n", "            image: other\n            command:\n", 1
    )
    done = mpijob("lint", "-", stdin=text)
    assert done.returncode == 2
    assert 'duplicate key "image": first at line' in done.stderr


def test_merge_keys_may_still_be_overridden() -> None:
    text = (
        "base: &base {replicas: 1}\napiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: m}\n"
        "spec:\n  mpiReplicaSpecs:\n    Launcher:\n      <<: *base\n      replicas: 1\n"
    )
    done = mpijob("lint", "-", stdin=text)
    assert "duplicate" not in done.stderr
    assert done.returncode == 1  # findings about the job, not an input error


def test_lint_without_files_is_a_usage_error() -> None:
    done = mpijob("lint")
    assert done.returncode == 2 and done.stderr.startswith("mpijob lint: no FILE given: give manifests")


def test_lint_lists_its_rules() -> None:
    done = mpijob("lint", "--list-rules")
    assert done.returncode == 0
    assert "np-mismatch" in done.stdout and "gpu-slots-mismatch" in done.stdout


HOSTILE = {
    "a list": "[]",
    "a string": '"str"',
    "kind only": "kind: MPIJob",
    "spec a string": "kind: MPIJob\napiVersion: kubeflow.org/v2beta1\nspec: x",
    "wrong shapes everywhere": (
        "kind: MPIJob\napiVersion: kubeflow.org/v2beta1\n"
        "metadata: {name: a, annotations: {mpijob-lint/ignore: 5}}\n"
        "spec: {slotsPerWorker: x, mpiReplicaSpecs: {Launcher: {template: {spec: {containers: 5}}},"
        " Worker: {replicas: two, template: {spec: {hostNetwork: true, affinity: 5, containers:"
        " [{name: w, resources: {limits: [1]}, env: 5, command: {a: 1}}]}}}}}"
    ),
    "odd values in a valid shape": (
        "kind: MPIJob\napiVersion: kubeflow.org/v2beta1\nmetadata: {name: a}\n"
        "spec: {mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: l, command: [sh, -c],"
        " args: [5]}]}}}, Worker: {replicas: 2, template: {spec: {topologySpreadConstraints: [5],"
        " hostNetwork: true, containers: [{name: w, env: [5, {name: 5}], resources: {limits:"
        " {nvidia.com/gpu: 1.5}}}]}}}}}"
    ),
    "old version, wrong shapes": (
        "kind: MPIJob\napiVersion: kubeflow.org/v1\n"
        "spec: {mpiReplicaSpecs: {Launcher: {restartPolicy: Always, template: {spec: {containers: 3}}}},"
        " runPolicy: {schedulingPolicy: 3}, mainContainer: x, mpiDistribution: 5}"
    ),
}


@pytest.mark.parametrize("command", [["render"], ["lint"], ["convert"], ["convert", "--to", "trainjob"]])
@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_input_gets_an_answer_not_an_internal_error(command: list[str], text: str) -> None:
    done = mpijob(*command, "-", stdin=text)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "internal error" not in done.stderr
