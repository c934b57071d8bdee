"""Every command in the README and docs/ is checked; how, per command, is documented in docs/README.md.

``mpijob`` commands run for real in a scratch copy of the repository; ``kubectl`` commands are parsed by
kubectl itself (``--help`` appended: unknown commands and flags fail, no cluster needed) and their files,
kustomizations and patches are checked; the few other tools have consistency checks. A command nobody knows
how to check fails the test. Every MPIJob shown lints as its page says (no finding but those a
``<!-- lint: RULE -->`` note before it names) and has its image contract linked above it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.lint import RULES, lint_manifest
from app.cli.program import build_parser
from tests.packaging.test_crd import CRD_FILE, admission_errors
from tests.support import crd_admission, kueue_crds, served, trainer_crds
from tests.support.kube_schema import schema_errors
from tests.support.paths import ROOT

PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "examples" / "requests" / "README.md",
    ROOT / "bench" / "README.md",
]
VENV_BIN = Path(sys.executable).parent
COPIED = ["examples", "docs", "deploy", "crds", "metacontroller", "scripts", "Dockerfile", "pyproject.toml"]
KUBECTL = shutil.which("kubectl")
FILE_VERBS = {"apply", "create", "delete", "replace", "diff"}
FENCE = re.compile(r"^( *)```(\w*)\s*$")
# Just before a YAML block's fence: the lint findings it shows on purpose, e.g. <!-- lint: np-mismatch -->.
SHOWS = re.compile(r"^\s*<!-- lint: ([\w, -]+?) -->\s*$")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    text: str
    shows: frozenset[str] = frozenset()  # the lint rules the page says the block shows


def blocks(page: Path) -> list[Block]:
    found, current, start, language, indent, shows = [], None, 0, "", 0, frozenset[str]()
    previous = ""
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        match = FENCE.match(line)
        if match and current is None:
            current, start, language, indent = [], number, match.group(2), len(match.group(1))
            said = SHOWS.match(previous)
            shows = frozenset(r.strip() for r in said.group(1).split(",")) if said else frozenset()
        elif match and current is not None:
            found.append(Block(page, start, language, "\n".join(current), shows))
            current = None
        elif current is not None:
            current.append(line[indent:])
        if line.strip():
            previous = line
    return found


def commands(block: Block) -> list[tuple[int, str]]:
    """(line number, command) for each command of an ``sh`` block; ``\\`` continues a line."""
    out, pending, first = [], "", 0
    for offset, line in enumerate(block.text.splitlines(), start=1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        first = first or block.line + offset
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        out.append((first, pending + stripped))
        pending, first = "", 0
    return out


def all_commands() -> list[tuple[str, Path, str]]:
    return [
        (f"{page.relative_to(ROOT)}:{line}", page, command)
        for page in PAGES
        for block in blocks(page)
        if block.language == "sh"
        for line, command in commands(block)
    ]


# --- the scratch copy and what earlier commands of a page left in it ---------------------------------------


@dataclass
class Page:
    directory: Path
    images: set[str] = field(default_factory=set)
    clusters: set[str] = field(default_factory=set)
    venvs: set[str] = field(default_factory=set)
    # `mpijob serve ... &` started on this page: the documented port -> the real server on a free port
    servers: dict[int, served.Served] = field(default_factory=dict)

    def stop_servers(self) -> None:
        for server in self.servers.values():
            server.stop()


def scratch(directory: Path) -> Page:
    """A fresh copy of what the pages' commands read, so each test stands alone (and runs on any worker)."""
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, directory / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, directory / name)
    return Page(directory)


def replay(page: Path, before: str, state: Page) -> None:
    """Earlier commands of the page whose effects later ones rely on: files they write, images they build."""
    for where, other, command in all_commands():
        if other != page:
            continue
        if where == before:
            return
        if background_serve(command):
            start_server(command, state)
            continue
        if private_file(command, state):
            continue
        command = local_ports(command, state)
        stages, _, redirects = split(command)
        if stages[0][0] == "mpijob" and redirects:
            run_mpijob(re.sub(r"#\s*exits\s+\d+\s*$", "", command), state, None)
        elif stages[0][0] == "kubectl" and stages[-1][0] == "mpijob" and len(redirects) == 1:
            # `kubectl get ... | mpijob ... > FILE`: the file later commands read
            written = f"{shlex.join(stages[-1])} > {shlex.quote(redirects[0])}"
            run_mpijob(written, state, examples_as_list(stages[0]))
        elif stages[0][0] not in ("mpijob", "kubectl"):
            check_other(stages[0], state, redirects)


# --- a hook served in the background: `mpijob serve ... &`, then curl and mpijob replay against it ----------

LOCAL_URL = re.compile(r"\b(127\.0\.0\.1|localhost):(\d+)")


def background_serve(command: str) -> bool:
    """``[MPI_OPERATOR_X=v ...] mpijob serve ... &``: the page starts a hook for its later commands."""
    words = shlex.split(command, comments=True)
    while words and re.match(r"^MPI_OPERATOR_\w+=", words[0]):
        words.pop(0)
    return words[:2] == ["mpijob", "serve"] and words[-1] == "&"


def start_server(command: str, page: Page) -> served.Served:
    """Start the page's hook for real on a free port (its documented port is rewritten in later commands);
    it runs until the page's test ends (``Page.stop_servers``, by PID)."""
    words = shlex.split(command, comments=True)[:-1]
    settings = {}
    while re.match(r"^MPI_OPERATOR_\w+=", words[0]):
        name, _, value = words.pop(0).partition("=")
        settings[name] = value
    port, argv = 8080, []
    for index, word in enumerate(words):
        if word == "--port" or (index and words[index - 1] == "--port"):
            port = int(words[index + 1]) if word == "--port" else port
        elif word.startswith("--port="):
            port = int(word.split("=", 1)[1])
        else:
            argv.append(word)
    assert port not in page.servers, f"port {port} is served twice on this page"
    log = page.directory / f".serve-{port}.log"
    # As users get it: callers must send the token the page names (MPI_OPERATOR_CALLER_TOKEN_FILE).
    page.servers[port] = served.start(log, settings, argv, cwd=page.directory, authenticated=True)
    return page.servers[port]


def local_ports(command: str, page: Page) -> str:
    """``command`` with each served documented port replaced by the real one."""

    def real(match: re.Match[str]) -> str:
        server = page.servers.get(int(match.group(2)))
        return f"{match.group(1)}:{server.port}" if server else match.group(0)

    return LOCAL_URL.sub(real, command)


FILE_CONTENT = re.compile(r"\$\(cat ([\w./-]+)\)")


def check_curl(argv: list[str], page: Page) -> None:
    """Run the real curl against a hook this page serves: it must exit 0 with a 200 JSON answer. A
    ``$(cat FILE)`` in an argument (the caller token) is FILE's content, as the shell would make it."""
    argv = [FILE_CONTENT.sub(lambda m: (page.directory / m.group(1)).read_text().strip(), a) for a in argv]
    urls = [word for word in argv[1:] if word.startswith(("http://", "https://"))]
    assert len(urls) == 1, f"curl needs exactly one URL: {shlex.join(argv)}"
    ports = {server.port for server in page.servers.values()}
    local = LOCAL_URL.search(urls[0])
    assert local and int(local.group(2)) in ports, f"{urls[0]}: no `mpijob serve &` of this page serves it"
    done = subprocess.run([*argv, "--max-time", "30", "--write-out", "\n%{http_code}"], cwd=page.directory,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, f"curl exited {done.returncode}: {done.stderr.strip()[:300]}"
    body, _, code = done.stdout.rpartition("\n")
    assert code == "200", f"{urls[0]} answered {code}: {body[:300]}"
    assert isinstance(json.loads(body), dict), f"{urls[0]} answered no JSON object"


def stop_server(argv: list[str], page: Page) -> None:
    """``kill $!`` (the hook the page started last) or ``kill %1`` (its first): stopped by its PID, so a later
    command of the page finds it gone."""
    assert argv[1:] in (["$!"], ["%1"]), f"{shlex.join(argv)}: a page stops its hook with kill $! or kill %1"
    assert page.servers, f"{shlex.join(argv)}: no `mpijob serve &` of this page runs"
    port = list(page.servers)[-1 if argv[1] == "$!" else 0]
    page.servers.pop(port).stop()


# --- the checkers ------------------------------------------------------------------------------------------


def split(command: str) -> tuple[list[list[str]], int, list[str]]:
    """Pipeline stages as argv lists, the expected exit code (``# exits N``), and redirections."""
    expected = 0
    if match := re.search(r"#\s*exits\s+(\d+)\s*$", command):
        expected = int(match.group(1))
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    stages: list[list[str]] = [[]]
    redirects: list[str] = []
    tokens = list(lexer)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "|":
            stages.append([])
        elif token in (">", ">>"):
            redirects.append(tokens[index + 1])
            index += 1
        else:
            stages[-1].append(token)
        index += 1
    return stages, expected, redirects


def run_mpijob(command: str, page: Page, stdin: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPI_OPERATOR_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", "set -o pipefail; " + command],
        cwd=page.directory,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def examples_as_list(argv: list[str]) -> str:
    """What ``kubectl get mpijobs -A -o yaml`` prints for a cluster holding the repository's examples; for
    ``kubectl get mpijob NAME -o yaml``, that example alone."""
    items = [
        doc
        for path in sorted((ROOT / "examples").rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") == "MPIJob"
    ]
    if argv[:3] == ["kubectl", "get", "mpijob"] and len(argv) > 3 and not argv[3].startswith("-"):
        named = [item for item in items if item["metadata"]["name"] == argv[3]]
        assert named, f"no example named {argv[3]} for {shlex.join(argv)}"
        return yaml.safe_dump(named[0])
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})


def check_kubectl(argv: list[str], page: Page) -> None:
    assert KUBECTL is not None, "kubectl is needed to check the docs' kubectl commands"
    args = argv[1:]
    # --help before a "--": after it, words belong to the command run in the container.
    args = [*args[: args.index("--")], "--help"] if "--" in args else [*args, "--help"]
    # kubectl plugins (kubectl mpijob) are found on PATH: the venv's, where pip put kubectl-mpijob.
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([KUBECTL, *args], capture_output=True, text=True, timeout=30, check=False, env=env)
    assert done.returncode == 0, f"kubectl does not accept {shlex.join(argv)}: {done.stderr.strip()[:300]}"
    for flag, value in _flag_values(argv[1:]):
        if flag in ("-f", "--filename") and argv[1] not in FILE_VERBS:
            continue  # e.g. `kubectl logs -f` follows
        if flag in ("-f", "--filename") and value != "-":
            if "://" in value:
                assert re.search(r"[?&]ref=v\d|/v\d+\.\d+", value), f"unpinned remote file {value}"
            else:
                assert (page.directory / value).exists(), f"{value} does not exist"
                if argv[1] == "apply":
                    assert_admitted(page.directory / value)
        elif flag in ("-k", "--kustomize"):
            if "://" in value:
                assert re.search(r"[?&]ref=v\d", value), f"unpinned remote kustomization {value}"
            else:
                built = subprocess.run([KUBECTL, "kustomize", value], cwd=page.directory, capture_output=True,
                                       text=True, timeout=60, check=False)  # fmt: skip
                assert built.returncode == 0, built.stderr[:300]
        elif flag in ("-p", "--patch"):
            json.loads(value)


@functools.cache
def _admission() -> tuple[dict[str, Any], dict[str, Any]]:
    crd = yaml.safe_load(CRD_FILE.read_text())
    return crd_admission.compiled(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def assert_admitted(path: Path) -> None:
    """What `kubectl apply` of the file meets: our CRD's admission for MPIJobs, Kubernetes' schema else."""
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "MPIJob":
            assert admission_errors(*_admission(), doc) == set(), f"{path.name}: rejected by the CRD"
        elif isinstance(doc, dict):
            assert applied_errors(doc) == [], f"{path.name}: {doc.get('kind')} fails its schema"


def applied_errors(obj: dict[str, Any]) -> list[Any]:
    """Kubernetes' schema for its kinds; Kubeflow Trainer v2.3.0's CRDs for a TrainJob or TrainingRuntime;
    Kueue's (from its module, the release the real-node tests run) for its queues."""
    if str(obj.get("apiVersion", "")).startswith("trainer.kubeflow.org/"):
        return sorted(trainer_crds.admission_errors(obj))
    if str(obj.get("apiVersion", "")).startswith(f"{kueue_crds.GROUP}/"):
        return sorted(kueue_crds.admission_errors(obj))
    return schema_errors(obj)


def _flag_values(args: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for index, arg in enumerate(args):
        name, equals, inline = arg.partition("=")
        if name in ("-f", "--filename", "-k", "--kustomize", "-p", "--patch"):
            value = inline if equals else (args[index + 1] if index + 1 < len(args) else "")
            pairs.append((name, value))
    return pairs


PRIVATE_FILE = re.compile(r"^\(umask 077 && (python3 -c .*)\)$")


def private_file(command: str, page: Page) -> bool:
    """``(umask 077 && python3 -c '...' > FILE)``: run by bash as a reader would; FILE must be mode 0600
    (a caller token readable by others is a leaked token). False for any other command."""
    match = PRIVATE_FILE.match(command.strip())
    if not match:
        return False
    _, _, redirects = split(match.group(1))
    assert len(redirects) == 1, f"python3 -c on a page writes one file: {command}"
    done = subprocess.run(["bash", "-c", command], cwd=page.directory, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, f"{command}: {done.stderr[-300:]}"
    mode = (page.directory / redirects[0]).stat().st_mode & 0o777
    assert mode == 0o600, f"{command}: {redirects[0]} is mode {mode:o}, not 600"
    return True


def check_other(argv: list[str], page: Page, redirects: Sequence[str] = ()) -> None:
    """The tools a page may mention besides mpijob and kubectl, with what can be checked without them."""
    head = argv[:3]
    if head[:2] == ["python3", "-c"]:
        assert len(redirects) == 1, f"python3 -c on a page writes one file: {shlex.join(argv)}"
        assert "token" not in redirects[0], (
            f"{redirects[0]}: a token file is made private, (umask 077 && ...)"
        )
        done = subprocess.run(argv, cwd=page.directory, capture_output=True, text=True, timeout=60,
                              check=False)  # fmt: skip
        assert done.returncode == 0, f"{shlex.join(argv)}: {done.stderr[-300:]}"
        (page.directory / redirects[0]).write_text(done.stdout)
    elif head[:2] == ["docker", "build"]:
        image = argv[argv.index("-t") + 1]
        assert (page.directory / argv[-1] / "Dockerfile").is_file()
        page.images.add(image)
    elif head[:2] == ["docker", "push"]:
        assert argv[2] in page.images, f"{argv[2]} is pushed but not built on this page"
    elif head == ["kind", "create", "cluster"]:
        page.clusters.add(argv[argv.index("--name") + 1] if "--name" in argv else "kind")
    elif head == ["kind", "load", "docker-image"]:
        assert argv[3] in page.images, f"{argv[3]} is loaded but not built on this page"
        assert (argv[argv.index("--name") + 1] if "--name" in argv else "kind") in page.clusters
    elif argv[0] == "sleep":
        assert len(argv) == 2 and argv[1].isdigit() and int(argv[1]) <= 5, (
            f"a short pause: {shlex.join(argv)}"
        )
    elif head == ["python3", "-m", "venv"]:
        page.venvs.add(argv[3])
    elif len(argv) >= 3 and argv[0].endswith("/bin/pip") and argv[1:] == ["install", "."]:
        assert argv[0].removesuffix("/bin/pip") in page.venvs
        assert 'mpijob = "app.cli.program:main"' in (ROOT / "pyproject.toml").read_text()
    elif argv[0] == "export" and argv[1].startswith("PATH="):
        assert any(f"{venv}/bin" in argv[1] for venv in page.venvs)
    elif argv[0] == "export" and argv[1].startswith(("MPI_HOOK_E2E_", "MPI_HOOK_NODE_")):
        name = argv[1].split("=", 1)[0]
        folder = "e2e" if name.startswith("MPI_HOOK_E2E_") else "node"
        harness = "".join(p.read_text() for p in (ROOT / "tests" / folder).glob("*.py"))
        assert f'"{name}"' in harness, f"the {folder} harness does not read {name}"
    elif argv[0] == "curl":
        check_curl(argv, page)
    elif argv[0] == "kill":
        stop_server(argv, page)
    elif argv[0].startswith("./scripts/"):
        script = page.directory / argv[0]
        assert script.is_file() and os.access(script, os.X_OK), f"{argv[0]} is not an executable script"
    else:
        pytest.fail(
            f"no checker for {shlex.join(argv)}: add one to tests/docs/test_docs.py and docs/README.md"
        )


@pytest.mark.parametrize(("where", "page", "command"), all_commands(), ids=[c[0] for c in all_commands()])
def test_documented_command(where: str, page: Path, command: str, tmp_path: Path) -> None:
    state = scratch(tmp_path)
    try:
        replay(page, where, state)
        if background_serve(command):
            start_server(command, state)  # healthy, or the test fails with its log
            return
        check_command(where, local_ports(command, state), state)
    finally:
        state.stop_servers()


def reads_a_cluster(argv: list[str]) -> bool:
    """``mpijob doctor NAME``: what it prints depends on a cluster no test machine has."""
    return argv[:2] == ["mpijob", "doctor"] and not {"--list-checks", "--load"} & set(argv)


_PER_LINE = re.compile(r"\|\s*while read -r [\w ]+; do (kubectl [^;]+); done$")


def _kubectl_per_line(command: str, stage: list[str]) -> list[str]:
    """``kubectl get ... | while read -r ns name; do kubectl ...; done``: the inner kubectl's argv (its
    ``"$ns"``-style words are the loop's), or [] when ``stage`` is not such a loop."""
    match = _PER_LINE.search(command)
    return shlex.split(match.group(1)) if stage[:2] == ["while", "read"] and match else []


def check_command(where: str, command: str, state: Page) -> None:
    if " || " in command:  # `a || a`: each side a command of its own
        for part in command.split(" || "):
            check_command(where, part, state)
        return
    if private_file(command, state):
        return
    stages, expected, redirects = split(command)
    if reads_a_cluster(stages[0]):
        assert len(stages) == 1, f"{where}: mpijob doctor is not piped here"
        try:
            build_parser().parse_args(stages[0][1:])  # parsed as the command parses it; nothing runs
        except SystemExit as exit_:
            raise AssertionError(f"{where}: mpijob does not accept {command}") from exit_
    elif stages[0][0] == "mpijob":
        mpijob_part = command.split("|")[0] if any(s[0] == "kubectl" for s in stages[1:]) else command
        done = run_mpijob(re.sub(r"#\s*exits\s+\d+\s*$", "", mpijob_part), state, None)
        assert done.returncode == expected, f"{where}: {command}\n{done.stderr[-1000:]}"
        assert "Traceback" not in done.stderr
        for stage in stages[1:]:
            check_kubectl(stage, state)
            if stage[1] == "apply":
                for obj in yaml.safe_load_all(done.stdout):
                    assert obj is None or applied_errors(obj) == [], f"{where}: {obj.get('kind')}"
    elif stages[0][0] == "kubectl":
        check_kubectl(stages[0], state)
        for stage in stages[1:]:
            if loop := _kubectl_per_line(command, stage):
                check_kubectl(loop, state)
                continue
            assert stage[0] == "mpijob", f"{where}: only mpijob (or a kubectl per line) may read kubectl here"
            done = run_mpijob(shlex.join(stage), state, examples_as_list(stages[0]))
            assert done.returncode == expected, f"{where}: {command}\n{done.stderr[-1000:]}"
    else:
        assert len(stages) == 1, f"{where}: pipelines of other tools are not checked"
        check_other(stages[0], state, redirects)


def test_the_pages_have_commands() -> None:
    pages = {page for _, page, _ in all_commands()}
    guides = ("user-guide.md", "troubleshooting.md", "migration.md", "operations.md")
    assert pages >= {ROOT / "README.md", *(ROOT / "docs" / name for name in guides)}


def as_job(doc: Any) -> dict[str, Any] | None:
    """The MPIJob a YAML block shows: a complete ``kubeflow.org/v2beta1`` one, or a ``spec`` (with
    ``metadata`` or not) that has replica specs, linted as a job of its own. Other fragments (a
    ``failurePolicy``, labels) are no job, and not linted."""
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == "MPIJob" and doc.get("apiVersion") == "kubeflow.org/v2beta1":
        return doc
    spec = doc.get("spec")
    if set(doc) <= {"metadata", "spec"} and isinstance(spec, dict) and "mpiReplicaSpecs" in spec:
        metadata = doc.get("metadata") or {"name": "snippet"}
        return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": metadata, "spec": spec}
    return None


@dataclass(frozen=True)
class Snippet:
    where: str
    job: dict[str, Any]
    shows: frozenset[str]


def where(page: Path, line: int) -> str:
    return f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}:{line}"


def yaml_mpijobs(pages: Sequence[Path] = PAGES) -> list[Snippet]:
    return [
        Snippet(where(page, block.line), job, block.shows)
        for page in pages
        for block in blocks(page)
        if block.language == "yaml" and (job := as_job(yaml.safe_load(block.text))) is not None
    ]


def lint_problems(snippet: Snippet) -> list[str]:
    """A snippet's findings, of any severity, against those its page says it shows: each shown, no other."""
    found = {finding.rule for finding in lint_manifest(snippet.job)}
    problems = [
        f"{snippet.where}: finds {rule}, which the page does not say"
        for rule in sorted(found - snippet.shows)
    ]
    problems += [
        f"{snippet.where}: the page says {rule}, lint does not find it"
        for rule in sorted(snippet.shows - found)
    ]
    return problems


def contract_problems(pages: Sequence[Path] = PAGES) -> list[str]:
    """Each MPIJob shown runs MPI, so the page says, between the heading above it and the block, which image
    contract it needs: a link to docs/image-contract.md (that page itself excepted)."""
    problems = []
    for page in pages:
        if page.name == "image-contract.md":
            continue
        lines = page.read_text().splitlines()
        for block in blocks(page):
            if block.language != "yaml" or as_job(yaml.safe_load(block.text)) is None:
                continue
            above = lines[: block.line - 1]
            heading = max((i for i, line in enumerate(above) if line.startswith("#")), default=0)
            if "image-contract.md" not in "\n".join(above[heading:]):
                problems.append(f"{where(page, block.line)}: no link to the image contract above the job")
    return problems


@pytest.mark.parametrize("snippet", yaml_mpijobs(), ids=[s.where for s in yaml_mpijobs()])
def test_documented_mpijobs_lint_as_their_page_says(snippet: Snippet) -> None:
    assert lint_problems(snippet) == []


def note_problems(pages: Sequence[Path] = PAGES) -> list[str]:
    """A ``<!-- lint: ... -->`` note must stand before a block that is linted and name real rules."""
    linted = {snippet.where for snippet in yaml_mpijobs(pages)}
    problems = []
    for page in pages:
        for block in blocks(page):
            if block.shows and where(page, block.line) not in linted:
                problems.append(f"{where(page, block.line)}: a lint note on no MPIJob")
            problems += [
                f"{where(page, block.line)}: no rule {rule}" for rule in sorted(block.shows - set(RULES))
            ]
    return problems


def test_every_lint_note_names_rules_of_a_linted_job() -> None:
    assert note_problems() == []


def test_each_documented_mpijob_names_its_image_contract() -> None:
    assert contract_problems() == []


def test_the_pages_that_show_examples_pi_show_it_as_it_is() -> None:
    """The README's and the user guide's ``pi`` are ``examples/pi/pi.yaml`` itself, not copies that drift."""
    pi = yaml.safe_load((ROOT / "examples" / "pi" / "pi.yaml").read_text())
    for page in (ROOT / "README.md", ROOT / "docs" / "user-guide.md"):
        shown = [s.job for s in yaml_mpijobs([page]) if s.job["metadata"]["name"] == "pi"]
        assert shown == [pi], page


def test_relative_links_point_at_files() -> None:
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


# --- the checkers catch what they should -------------------------------------------------------------

REJECTED = {
    "unknown flag": ["kubectl", "get", "mpijob", "pi", "--bogus"],
    "unknown command": ["kubectl", "gett", "mpijob"],
    "missing file": ["kubectl", "apply", "-f", "examples/no-such.yaml"],
    "unpinned remote kustomization": ["kubectl", "apply", "-k", "https://github.com/o/r/manifests"],
    "patch that is not JSON": ["kubectl", "patch", "mpijob", "pi", "--type", "merge", "-p", "{suspend: true"],
    "plugin subcommand that does not exist": ["kubectl", "mpijob", "doctr", "pi"],
}


@pytest.mark.parametrize("argv", REJECTED.values(), ids=REJECTED.keys())
def test_the_kubectl_checker_rejects(argv: list[str]) -> None:
    with pytest.raises((AssertionError, ValueError)):
        check_kubectl(argv, Page(ROOT))


def test_the_doctor_checker_parses_and_rejects_an_unknown_flag(tmp_path: Path) -> None:
    page = scratch(tmp_path)
    check_command("ok", "mpijob doctor pi -n ml -o json", page)
    with pytest.raises(AssertionError):
        check_command("planted", "mpijob doctor pi --bogus", page)


def test_an_unknown_tool_fails() -> None:
    with pytest.raises(pytest.fail.Exception, match="no checker"):
        check_other(["helm", "install", "x"], Page(ROOT))


def test_yaml_mpijobs_in_the_docs_are_found() -> None:
    found = {snippet.where.split(":")[0] for snippet in yaml_mpijobs()}
    assert found >= {"README.md", "docs/user-guide.md"}
    assert len(yaml_mpijobs()) >= 3  # the user guide's GPU job is a spec alone


PLANTED_PAGE = """\
# A page

A job, and its [image contract](image-contract.md):

{note}
```yaml
{job}
```
"""


def _planted_page(tmp_path: Path, note: str, job: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(PLANTED_PAGE.format(note=note, job=job))
    return page


def _pi_with_minus_n_3() -> str:
    text = (ROOT / "examples" / "pi" / "pi.yaml").read_text()
    assert text.count('- "2"') == 1
    return text.replace('- "2"', '- "3"')


@pytest.mark.parametrize(
    ("note", "problems"),
    [
        ("<!-- lint: np-mismatch -->", []),
        ("", ["page.md:6: finds np-mismatch, which the page does not say"]),
        (
            "<!-- lint: gpus-at-pod-level -->",
            [
                "page.md:6: finds np-mismatch, which the page does not say",
                "page.md:6: the page says gpus-at-pod-level, lint does not find it",
            ],
        ),
    ],
    ids=["said", "not said", "another said"],
)
def test_the_lint_check_wants_each_finding_said_and_no_other(
    tmp_path: Path, note: str, problems: list[str]
) -> None:
    (snippet,) = yaml_mpijobs([_planted_page(tmp_path, note, _pi_with_minus_n_3())])
    assert lint_problems(snippet) == problems


def test_a_spec_alone_is_linted_and_another_fragment_is_not(tmp_path: Path) -> None:
    job = yaml.safe_load(_pi_with_minus_n_3())
    spec = yaml.safe_dump({"spec": job["spec"]})
    (snippet,) = yaml_mpijobs([_planted_page(tmp_path, "", spec)])
    assert [problem.split(": ", 1)[1] for problem in lint_problems(snippet)] == [
        "finds np-mismatch, which the page does not say"
    ]
    assert yaml_mpijobs([_planted_page(tmp_path, "", yaml.safe_dump({"spec": {"runPolicy": {}}}))]) == []


def test_the_note_check_finds_a_note_on_no_job_and_a_rule_that_does_not_exist(tmp_path: Path) -> None:
    page = _planted_page(tmp_path, "<!-- lint: np-mismatch, np-mismatched -->", _pi_with_minus_n_3())
    assert note_problems([page]) == ["page.md:6: no rule np-mismatched"]
    page = _planted_page(tmp_path, "<!-- lint: np-mismatch -->", "metadata:\n  name: pi")
    assert note_problems([page]) == ["page.md:6: a lint note on no MPIJob"]


def test_the_contract_check_finds_a_job_without_the_link(tmp_path: Path) -> None:
    page = _planted_page(tmp_path, "", (ROOT / "examples" / "pi" / "pi.yaml").read_text())
    assert contract_problems([page]) == []
    page.write_text(page.read_text().replace("[image contract](image-contract.md)", "image"))
    assert contract_problems([page]) == ["page.md:6: no link to the image contract above the job"]


def test_an_applied_file_the_crd_rejects_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "examples" / "pi" / "pi.yaml").read_text().replace("replicas: 2", "replicas: 0"))
    with pytest.raises(AssertionError, match="rejected by the CRD"):
        check_kubectl(["kubectl", "apply", "-f", "bad.yaml"], Page(tmp_path))


def _served_page(tmp_path: Path) -> Page:
    page = Page(tmp_path)
    shutil.copytree(ROOT / "examples" / "requests", tmp_path / "examples" / "requests")
    (tmp_path / "caller-token").write_text("a-token-for-this-page\n")
    start_server("MPI_OPERATOR_CALLER_TOKEN_FILE=caller-token mpijob serve --port 8080 &", page)
    return page


def test_curl_runs_against_the_pages_hook_on_its_real_port(tmp_path: Path) -> None:
    page = _served_page(tmp_path)
    try:
        documented = (
            'curl -sS -H "Authorization: Bearer $(cat caller-token)"'
            " --data-binary @examples/requests/new-job/request.json http://127.0.0.1:8080/sync"
        )
        real = local_ports(documented, page)
        assert f"127.0.0.1:{page.servers[8080].port}/sync" in real
        check_other(shlex.split(real), page)
        # No access log (a flood would write a line per request): the sync's Event line says it was answered.
        assert 'reason="MPIJobCreated"' in page.servers[8080].log_text()
        with pytest.raises(AssertionError, match="answered 401"):  # the page's hook wants the token
            check_other(shlex.split(real.replace("$(cat caller-token)", "not-the-token")), page)
        with pytest.raises(AssertionError, match="answered 400"):  # not a hook request: 400
            check_other(shlex.split(real.replace("new-job/request.json", "new-job/case.json")), page)
        with pytest.raises(AssertionError, match="no `mpijob serve &`"):  # a port nobody started
            check_other(shlex.split(documented.replace("8080", "1")), page)
    finally:
        page.stop_servers()
    assert page.servers[8080].process.poll() is not None, "the page's hook outlived its test"


def test_a_page_hook_that_cannot_start_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="MPI_OPERATOR_LOG_LEVEL"):
        start_server("MPI_OPERATOR_LOG_LEVEL=LOUD mpijob serve --port 8080 &", Page(tmp_path))


def test_a_token_file_is_made_private_or_the_page_fails(tmp_path: Path) -> None:
    page = Page(tmp_path)
    make = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > caller-token"
    with pytest.raises(AssertionError, match="a token file is made private"):
        check_command("page.md:1", make, page)
    check_command("page.md:1", f"(umask 077 && {make})", page)
    assert (tmp_path / "caller-token").stat().st_mode & 0o777 == 0o600
    with pytest.raises(AssertionError, match="is mode 644, not 600"):  # a chmod after the umask undoes it
        check_command("page.md:1", f"(umask 077 && {make} && chmod 644 caller-token)", page)


def test_kill_stops_the_pages_hook_and_nothing_else(tmp_path: Path) -> None:
    page = _served_page(tmp_path)
    server = page.servers[8080]
    try:
        with pytest.raises(AssertionError, match="kill \\$! or kill %1"):
            check_other(["kill", "1234"], page)
        check_other(["kill", "$!"], page)
        assert server.process.poll() is not None and page.servers == {}
        with pytest.raises(AssertionError, match="no `mpijob serve &`"):
            check_other(["kill", "$!"], page)
    finally:
        server.stop()
