"""``mpijob lint`` as a user runs it: jobs named with their namespace, the rule list aligned, a folder of
manifests read as ``kubectl apply -f DIR`` reads it (and never a file outside it), and every error line in
the one shape ``mpijob lint: <what is wrong>: <what to do>``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from tests.unit.cli.test_cli import PI, mpijob

MANY = PI.read_text().replace('"2"', '"4"')  # pi with mpirun -n 4: one np-mismatch warning
CLEAN = PI.read_text()


def in_namespace(namespace: str | None, name: str = "resnet", text: str = MANY) -> dict[str, object]:
    job: dict[str, object] = yaml.safe_load(text)
    job["metadata"] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return job


def listed(*jobs: dict[str, object]) -> str:
    """What ``kubectl get mpijobs -A -o yaml`` prints: a ``List``."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(jobs)})


# --- the namespace ---------------------------------------------------------------------------------------


def test_jobs_of_one_name_in_two_namespaces_are_told_apart() -> None:
    done = mpijob("lint", "-", stdin=listed(in_namespace("a"), in_namespace("b"), in_namespace(None, "pi")))
    heads = [line for line in done.stdout.splitlines() if not line.startswith(" ")]
    assert [h.rsplit(" (", 1)[1] for h in heads] == ["MPIJob a/resnet)", "MPIJob b/resnet)", "MPIJob pi)"]


def test_the_json_output_has_the_namespace() -> None:
    done = mpijob("lint", "-o", "json", "-", stdin=listed(in_namespace("a"), in_namespace(None, "pi")))
    findings = json.loads(done.stdout)["findings"]
    assert [(f["namespace"], f["job"]) for f in findings] == [("a", "resnet"), (None, "pi")]


# --- the rule list and --fail-on -------------------------------------------------------------------------


def test_every_row_of_the_rule_list_aligns() -> None:
    done = mpijob("lint", "--list-rules")
    rows = [re.fullmatch(r"(\S+ +)(\S+ +)(\S.*)", line) for line in done.stdout.splitlines()]
    assert all(rows) and len(rows) > 20, done.stdout
    assert len({len(row.group(1)) for row in rows if row}) == 1, done.stdout
    assert len({len(row.group(1) + row.group(2)) for row in rows if row}) == 1, done.stdout


def test_each_fail_on_severity_is_one_the_rule_list_names() -> None:
    """``--fail-on info`` is offered because a rule reports info; the rule list says which."""
    usage = mpijob("lint", "--help").stdout
    choices = re.search(r"--fail-on \{([a-z,]+)\}", usage)
    assert choices is not None, usage
    rules = mpijob("lint", "--list-rules").stdout
    for severity in set(choices.group(1).split(",")) - {"never"}:
        assert re.search(rf"\b{severity}\b", rules), severity
    assert mpijob("lint", "--fail-on", "notice", str(PI)).returncode == 2


# --- a folder --------------------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """b.yaml, a.yml, c.json (one finding each), notes.txt and .hidden.yaml (not MPIJobs: never read), and
    sub/d.yaml (a finding, with -R)."""
    root = tmp_path / "manifests"
    (root / "sub").mkdir(parents=True)
    (root / "b.yaml").write_text(MANY)
    (root / "a.yml").write_text(MANY)
    (root / "c.json").write_text(json.dumps(yaml.safe_load(MANY)))
    (root / "notes.txt").write_text("not a manifest\n")
    (root / ".hidden.yaml").write_text("kind: [\n")
    (root / "sub" / "d.yaml").write_text(MANY)
    return root


def sources(stdout: str) -> list[str]:
    return [line.split(":", 1)[0] for line in stdout.splitlines() if not line.startswith(" ")]


def test_a_folder_is_read_as_kubectl_apply_reads_it(folder: Path) -> None:
    done = mpijob("lint", str(folder))
    assert done.returncode == 1, done.stderr
    assert sources(done.stdout) == [str(folder / name) for name in ("a.yml", "b.yaml", "c.json")]
    assert done.stderr == "3 MPIJobs: 3 warnings\n"


@pytest.mark.parametrize("flag", ["-R", "--recursive"])
def test_recursive_reads_the_subfolders(folder: Path, flag: str) -> None:
    done = mpijob("lint", flag, str(folder))
    names = ("a.yml", "b.yaml", "c.json", "sub/d.yaml")
    assert sources(done.stdout) == [str(folder / name) for name in names], done.stderr


def test_folders_and_files_mix(folder: Path) -> None:
    done = mpijob("lint", str(PI), str(folder / "sub"))
    assert (done.returncode, sources(done.stdout)) == (1, [str(folder / "sub" / "d.yaml")]), done.stderr
    assert done.stderr == "2 MPIJobs: 1 warning\n"


def test_an_empty_folder_is_an_error_saying_so(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "job.yaml").write_text(CLEAN)
    (tmp_path / "README.md").write_text("# notes\n")
    done = mpijob("lint", str(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"mpijob lint: {tmp_path}: no .yaml, .yml or .json file in it: "), line
    assert "-R" in line  # a subfolder has some
    assert mpijob("lint", "-R", str(tmp_path)).returncode == 0


def test_a_symlink_out_of_the_folder_is_never_followed(tmp_path: Path, folder: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("kind: MPIJob\npassword: [\n")  # read, it would be a YAML error quoting its line
    (folder / "z.yaml").symlink_to(secret)
    (folder / "sub" / "up.yaml").symlink_to("../../secret.yaml")
    done = mpijob("lint", "-R", str(folder))
    assert (done.returncode, done.stdout) == (2, "")
    lines = done.stderr.splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        str(folder / "sub" / "up.yaml"),
        str(folder / "z.yaml"),
    ]
    assert all("a symbolic link out of" in line for line in lines) and "password" not in done.stderr


def test_a_symlink_within_the_folder_is_read(folder: Path) -> None:
    (folder / "e.yaml").symlink_to("b.yaml")
    (folder / "linked").symlink_to(folder / "sub", target_is_directory=True)
    done = mpijob("lint", "-R", str(folder))
    assert done.returncode == 1, done.stderr
    names = ("a.yml", "b.yaml", "c.json", "e.yaml", "sub/d.yaml")  # a linked folder is not entered
    assert sources(done.stdout) == [str(folder / name) for name in names]


def test_a_folder_link_out_of_the_folder_is_never_entered(tmp_path: Path, folder: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.yaml").write_text(MANY)
    (folder / "sub" / "out").symlink_to(outside, target_is_directory=True)
    done = mpijob("lint", "-R", str(folder))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"mpijob lint: {folder / 'sub' / 'out'}: a symbolic link out of {folder}: "), line


def test_a_fifo_is_not_waited_on(folder: Path) -> None:
    os.mkfifo(folder / "pipe.yaml")
    done = mpijob("lint", str(folder))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith(f"mpijob lint: {folder / 'pipe.yaml'}: not a regular file: "), line


def test_names_from_a_folder_never_reach_the_terminal_as_escapes(tmp_path: Path) -> None:
    """A file name and a job name in the folder are the folder's words, not the user's: escaped."""
    (tmp_path / "e\x1b]0;owned\x07.yaml").write_text(MANY.replace("name: pi", 'name: "pi\\e[2J"'))
    (tmp_path / "f\x1b[2J.yml").write_text("kind: [\n")
    done = mpijob("lint", str(tmp_path))
    assert done.returncode == 2 and "\x1b" not in done.stderr and "\\x1b[2J" in done.stderr, done.stderr
    (tmp_path / "f\x1b[2J.yml").unlink()
    done = mpijob("lint", str(tmp_path))
    assert done.returncode == 1 and "\x1b" not in done.stdout and "\\x1b]0;owned\\x07" in done.stdout


# --- error lines -----------------------------------------------------------------------------------------

ERRORS = {
    "no file": ([], None, "no FILE given"),
    "missing file": (["/nonexistent.yaml"], None, "cannot read /nonexistent.yaml: No such file or directory"),
    "no MPIJob": (["-"], "kind: Pod\n", "<stdin>: no MPIJob in it"),
    "not UTF-8": (["{latin1}"], None, "{latin1}: not UTF-8 text"),
}


@pytest.mark.parametrize(("args", "stdin", "problem"), ERRORS.values(), ids=ERRORS.keys())
def test_each_error_line_says_what_is_wrong_and_what_to_do(
    tmp_path: Path, args: list[str], stdin: str | None, problem: str
) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"kind: MPIJob\n# caf\xe9\n")
    problem = problem.format(latin1=latin1)
    done = mpijob("lint", *[a.format(latin1=latin1) for a in args], stdin=stdin)
    assert (done.returncode, done.stdout) == (2, "")
    line = done.stderr.splitlines()[-1]
    assert line.startswith(f"mpijob lint: {problem}"), line
    fix = line[len("mpijob lint: ") :].split(": ")[-1]
    assert fix and problem not in fix, line


def test_a_yaml_error_is_a_lint_line_naming_where_to_correct_it() -> None:
    done = mpijob("lint", "-", stdin="kind: MPIJob\nspec: [\n")
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("mpijob lint: <stdin>:3:1: "), line


def test_a_document_that_is_no_mpijob_is_named_on_a_lint_line() -> None:
    done = mpijob("lint", "-", stdin=CLEAN + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    assert done.returncode == 0
    assert (
        done.stderr.splitlines()[0] == "mpijob lint: <stdin>: document 2 (Pod) is not an MPIJob: not linted"
    )
