"""``mpijob render JOB --nodes FILE``: the children a job gets with its Pods bound as ``kubectl get
nodes,pods -o yaml`` shows them, run as a user runs it (``tests.unit.cli.test_cli.mpijob``).

The order itself is the hook's (``tests/unit/core/policies/test_hostfile_order.py``); here: that the file is
read as the hook reads a request, whatever its objects' order or form, and that bad files are exit code 2.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.api.hostfile_order_annotations import LABELS_ANNOTATION, ORDER_ANNOTATION
from tests.support.kube_schema import schema_errors
from tests.unit.cli.test_cli import PI, mpijob, objects

BLOCK, RACK = "example.com/block", "example.com/rack"
# Node -> (block, rack): b1 before b2, r1 before r2; n3 lacks the rack label.
NODES = {"n1": ("b2", "r1"), "n2": ("b1", "r2"), "n3": ("b1", "r1"), "n4": ("b1", None)}
# Worker index -> node.
BOUND = {0: "n1", 1: "n2", 2: "n4", 3: "n3", 4: "n1", 5: "n3"}
# By block, then rack (missing last), then node name, then index.
ORDER = [3, 5, 1, 2, 0, 4]


def ordered_job(workers: int = len(BOUND), ranks: int | None = None, **spec: Any) -> str:
    job = yaml.safe_load(PI.read_text())
    job["metadata"]["annotations"] = {ORDER_ANNOTATION: "topology", LABELS_ANNOTATION: f"{BLOCK}, {RACK}"}
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = workers
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["args"] = ["--mca", "rmaps", "seq", "-n", str(ranks or workers), "/home/mpiuser/pi"]
    job["spec"].update(spec)
    return yaml.safe_dump(job)


def node(name: str) -> dict[str, Any]:
    block, rack = NODES[name]
    labels = {BLOCK: block, **({RACK: rack} if rack else {}), "kubernetes.io/hostname": name}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {}}


def pod(name: str, node_name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "default", "labels": labels or {}, **meta}
    spec = {"nodeName": node_name, "containers": [{"name": "c", "image": "x"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Running"},
    }


def cluster(bound: dict[int, str] = BOUND, extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    pods = [pod(f"pi-worker-{i}", n) for i, n in bound.items()]
    return [*(node(n) for n in NODES), *pods, pod("other-worker-0", "n1"), *(extra or [])]


def as_list(items: list[dict[str, Any]]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}})


def render(tmp_path: Path, job: str, nodes: str, *args: str) -> Any:
    (tmp_path / "job.yaml").write_text(job)
    (tmp_path / "nodes.yaml").write_text(nodes)
    return mpijob("render", str(tmp_path / "job.yaml"), "--nodes", str(tmp_path / "nodes.yaml"), *args)


def config(done: Any) -> dict[str, str]:
    [found] = [c for c in objects(done) if c["kind"] == "ConfigMap"]
    data: dict[str, str] = found["data"]
    return data


def test_the_hostfile_is_in_the_order_of_the_nodes_labels(tmp_path: Path) -> None:
    done = render(tmp_path, ordered_job(), as_list(cluster()))
    assert (done.returncode, done.stderr) == (0, "")
    header = f"# mpi-operator-hook: hostfile ordered by node labels {BLOCK}, {RACK}"
    data = config(done)
    assert data["hostfile"] == header + "\n" + "".join(f"pi-worker-{i}.pi.default.svc\n" for i in ORDER)
    rows = data["hostfile-order"].splitlines()
    assert rows[0] == f"# line host node {BLOCK} {RACK}"
    first, *_ = NODES[BOUND[ORDER[0]]]
    assert rows[1] == f"1 pi-worker-{ORDER[0]} {BOUND[ORDER[0]]} {first} r1"
    assert rows[4] == "4 pi-worker-2 n4 b1 -"  # no rack: after every rack of its block
    # The launcher Job is there: the ordered hostfile is stored, so the launcher may start on it.
    children = objects(done)
    assert [c["kind"] for c in children][-1] == "Job"
    assert all(schema_errors(child) == [] for child in children)
    # Where the order stands, as a comment kubectl ignores (stdout stays YAML).
    comments = [line for line in done.stdout.splitlines() if line.startswith("# ")]
    assert comments[:2] == ["# MPIJob default/pi: Created=True", header]


def test_the_order_of_the_files_objects_changes_nothing(tmp_path: Path) -> None:
    items = cluster()
    expected = config(render(tmp_path, ordered_job(), as_list(items)))
    for seed in range(3):
        random.Random(seed).shuffle(items)
        assert config(render(tmp_path, ordered_job(), as_list(items))) == expected
    # A stream of the same objects, as `kubectl get node/a pod/b -o yaml` never prints but a user may write.
    assert config(render(tmp_path, ordered_job(), yaml.safe_dump_all(items))) == expected


def test_a_job_that_keeps_upstreams_order_says_so(tmp_path: Path) -> None:
    plain = PI.read_text()
    done = render(tmp_path, plain, as_list(cluster()))
    assert done.returncode == 0
    assert done.stderr == (
        f"mpijob render: {tmp_path / 'job.yaml'}: MPIJob pi keeps upstream's hostfile order, so the nodes in"
        f" {tmp_path / 'nodes.yaml'} change nothing: annotate it {ORDER_ANNOTATION}: topology to order its"
        " hostfile by them\n"
    )
    assert config(done) == config(mpijob("render", str(PI)))


def test_hosts_the_file_does_not_bind_keep_the_order_pending(tmp_path: Path) -> None:
    bound = {i: n for i, n in BOUND.items() if i not in (2, 4)}
    done = render(tmp_path, ordered_job(), as_list(cluster(bound)))
    assert done.returncode == 0
    assert "pi-worker-2, pi-worker-4 not bound to a node" in done.stderr
    hostfile = config(done)["hostfile"]
    assert hostfile.startswith("# mpi-operator-hook: hostfile order pending, 4 of 6 hosts bound to nodes\n")
    assert hostfile.splitlines()[1:] == [
        f"pi-worker-{i}.pi.default.svc" for i in range(6)
    ]  # pending: index order, Open MPI's ordered form (a line per slot)
    assert "Job" not in {c["kind"] for c in objects(done)}  # the launcher waits for the final order


def test_a_node_the_file_does_not_list_is_named(tmp_path: Path) -> None:
    done = render(tmp_path, ordered_job(), as_list(cluster({**BOUND, 0: "gone"})))
    assert done.returncode == 0
    assert "has no Node gone, so its Pods sort as if it had no labels: add the Node to" in done.stderr
    assert config(done)["hostfile"].splitlines()[-1] == "pi-worker-0.pi.default.svc"


def test_the_launcher_as_worker_is_placed_by_its_pods_node(tmp_path: Path) -> None:
    role = {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "launcher"}
    launchers = [
        pod("pi-launcher-old", "n1", role, creationTimestamp="2024-01-01T00:00:00Z"),
        pod("pi-launcher-new", "n3", role, creationTimestamp="2024-01-01T00:05:00Z"),
    ]
    job = ordered_job(ranks=len(BOUND) + 1, runLauncherAsWorker=True)  # a rank on the launcher too
    done = render(tmp_path, job, as_list(cluster(extra=launchers)))
    assert (done.returncode, done.stderr) == (0, "")
    lines = config(done)["hostfile"].splitlines()
    assert lines[0].endswith("; launcher Pod pi-launcher-new")  # the newest Pod that has not ended
    assert lines[1:3] == ["pi-launcher", "pi-worker-3.pi.default.svc"]  # n3 (b1, r1), launcher first by index


NOT_YAML = "items: [unclosed\n"
EXPECTED = re.escape("give what `kubectl get nodes,pods -o yaml` prints")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (NOT_YAML, r"nodes\.yaml:2:1: "),
        (as_list([{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}]),
         r"nodes\.yaml: document 1 \(Deployment\) is neither a Node nor a Pod: " + EXPECTED),
        ("- a\n- b\n", r"document 1 \(list\) is neither a Node nor a Pod"),
        (as_list([pod("pi-worker-0", "n1")]), r"nodes\.yaml: no Node in it"),
        (as_list([node("n1"), {**pod("pi-worker-0", "n1"), "spec": {"nodeName": 5}}]),
         r"nodes\.yaml:\d+: not a Pod: Expected `str`, got `int` - at `\$\.spec\.nodeName`"),
        (as_list([node("n1"), {"kind": "Node", "metadata": {}}]), r"a Node without metadata\.name"),
    ],
    ids=["not-yaml", "wrong-kind", "not-objects", "no-node", "bad-pod", "no-name"],
)  # fmt: skip
def test_a_bad_nodes_file_is_unusable_input(tmp_path: Path, text: str, message: str) -> None:
    done = render(tmp_path, ordered_job(), text)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("mpijob render: ") and re.search(message, line), line


def test_job_and_nodes_cannot_both_be_standard_input() -> None:
    done = mpijob("render", "-", "--nodes", "-", stdin=ordered_job())
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "mpijob render: FILE and --nodes cannot both be standard input (-): give one of them as a file\n"
    )
