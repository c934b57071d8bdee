"""Every manifest in examples/ applies unchanged; ``kubectl get mpijob`` shows the printer columns."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from app.api.hostfile_order_annotations import asks_topology_order
from app.children.hostfile_order_lines import PENDING
from app.kube.names import GANG_TOPOLOGY_ANNOTATION
from tests.e2e import jobs
from tests.e2e.conftest import E2E

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.yaml"))
HOST_FORMAT = {"OpenMPI": "{host} slots={slots}", "Intel": "{host}:{slots}", "MPICH": "{host}:{slots}"}


def test_examples_apply_unchanged_and_start(e2e: E2E, ns: str) -> None:
    kube = e2e.kube
    assert len(EXAMPLES) >= 4
    for path in EXAMPLES:
        kube.kubectl("apply", "-n", ns, "-f", str(path))
    manifests = [yaml.safe_load(p.read_text()) for p in EXAMPLES]
    specs = {d["metadata"]["name"]: d["spec"] for d in manifests}
    # This hook runs without the Workload API backend: a job asking for a topology domain runs without it and
    # says so (GangSchedulingUnavailable, reason TopologyNeedsWorkloadAPI).
    topology = {
        d["metadata"]["name"]
        for d in manifests
        if GANG_TOPOLOGY_ANNOTATION in d["metadata"].get("annotations", {})
    }
    # A job in topology order gets its launcher once its workers are bound: never here, without a scheduler.
    ordered = {
        d["metadata"]["name"] for d in manifests if asks_topology_order(d["metadata"].get("annotations", {}))
    }
    want: dict[str, set[str]] = {kind: set() for kind in jobs.CHILD_KINDS}
    for name, spec in specs.items():
        job = jobs.wait_condition(kube, ns, name, "Created")
        expected = {"Created": "True"} | ({"GangSchedulingUnavailable": "True"} if name in topology else {})
        assert jobs.condition_status(job) == expected
        at_startup = spec.get("launcherCreationPolicy", "AtStartup") == "AtStartup" and name not in ordered
        replicas = spec["mpiReplicaSpecs"]["Worker"]["replicas"]
        for kind, found in jobs.expected_children(name, replicas, launcher=at_startup).items():
            want[kind] |= found
        if at_startup:  # the Job controller creates the launcher Pod at once
            want["pods"].add(jobs.wait_launcher_pod(kube, ns, name)["metadata"]["name"])
        hostfile = kube.get("configmaps", ns, f"{name}-config")["data"]["hostfile"]  # type: ignore[index]
        implementation = spec.get("mpiImplementation", "OpenMPI")
        fmt = HOST_FORMAT[implementation]
        header = ""
        if name in ordered:
            header = f"{PENDING}, 0 of {replicas} hosts bound to nodes\n"
            if implementation == "OpenMPI":
                fmt = "\n".join(["{host}"] * spec["slotsPerWorker"])
        hosts = [f"{name}-worker-{i}.{name}.{ns}.svc.cluster.local" for i in range(replicas)]
        assert hostfile == header + "".join(
            fmt.format(host=h, slots=spec["slotsPerWorker"]) + "\n" for h in hosts
        )
    jobs.wait_children(kube, ns, want)

    table = kube.kubectl("get", "mpijob", "-n", ns).stdout.splitlines()
    assert re.split(r"\s+", table[0].strip()) == ["NAME", "WORKERS", "SLOTS", "STATE", "AGE"]
    rows = {cells[0]: cells[1:4] for cells in (re.split(r"\s+", line.strip()) for line in table[1:])}
    assert rows == {
        name: [str(spec["mpiReplicaSpecs"]["Worker"]["replicas"]), str(spec["slotsPerWorker"]), "Created"]
        for name, spec in specs.items()
    }
    wide = kube.kubectl("get", "mpijob", "-n", ns, "-o", "wide").stdout.splitlines()
    assert re.split(r"\s+", wide[0].strip()) == ["NAME", "WORKERS", "SLOTS", "IMPL", "STATE", "AGE"]


def test_installed_controller_is_ours_but_for_the_hook_urls(e2e: E2E) -> None:
    """The overlay changes exactly the two hook URLs of metacontroller/; the cluster has that object."""
    base = yaml.safe_load(e2e.kube.kubectl("kustomize", str(ROOT / "metacontroller")).stdout)
    installed = yaml.safe_load(e2e.installed_controller)
    hooks = installed["spec"]["hooks"]
    assert (hooks["sync"]["webhook"]["url"], hooks["customize"]["webhook"]["url"]) == (
        f"{e2e.hook.url}/sync",
        f"{e2e.hook.url}/customize",
    )
    for name in ("sync", "customize"):
        hooks[name]["webhook"]["url"] = base["spec"]["hooks"][name]["webhook"]["url"]
    assert installed == base
    live = e2e.kube.get("compositecontrollers", None, "mpi-operator-hook")
    assert live is not None
    assert live["spec"]["hooks"]["sync"]["webhook"]["url"] == f"{e2e.hook.url}/sync"
    assert live["spec"]["childResources"] == base["spec"]["childResources"]


def test_deploy_passes_the_apiservers_server_side_dry_run(e2e: E2E) -> None:
    """Everything in deploy/ (Namespace, CRD, ServiceAccount and its Events RBAC, the caller token's account
    and Secret, Deployment, Service, PDB, NetworkPolicy and CompositeController, and Metacontroller's own
    install with our flags) passes the real apiserver's validation and admission, as `kubectl apply
    --server-side -k` sends it.
    Only a dry run: applied for real, its CompositeController would point Metacontroller at a Service that
    nothing serves here."""
    namespaces = ("mpi-operator", "metacontroller")
    created = [n for n in namespaces if e2e.kube.get("namespaces", None, n) is None]
    for name in created:  # objects in a namespace that a dry run does not create would be rejected
        e2e.kube.create("namespaces", None, {"metadata": {"name": name}})
    try:
        done = e2e.kube.kubectl("apply", "--server-side", "--dry-run=server", "-k", str(ROOT / "deploy"))
    finally:
        for name in created:
            e2e.kube.delete("namespaces", None, name)
    applied = sorted(line.split()[0] for line in done.stdout.splitlines())
    metacontroller_crds = [
        f"customresourcedefinition.apiextensions.k8s.io/{kind}.metacontroller.k8s.io"
        for kind in ("compositecontrollers", "controllerrevisions", "decoratorcontrollers")
    ]
    assert applied == sorted(
        [
            "namespace/metacontroller",
            *metacontroller_crds,
            "serviceaccount/metacontroller",
            "clusterrole.rbac.authorization.k8s.io/metacontroller",
            "clusterrolebinding.rbac.authorization.k8s.io/metacontroller",
            "statefulset.apps/metacontroller",
            "namespace/mpi-operator",
            "customresourcedefinition.apiextensions.k8s.io/mpijobs.kubeflow.org",
            "serviceaccount/mpi-operator-hook",
            "serviceaccount/mpi-operator-hook-caller",
            "secret/mpi-operator-hook-caller",
            "clusterrole.rbac.authorization.k8s.io/mpi-operator-hook-events",
            "clusterrolebinding.rbac.authorization.k8s.io/mpi-operator-hook-events",
            "service/mpi-operator-hook",
            "deployment.apps/mpi-operator-hook",
            "poddisruptionbudget.policy/mpi-operator-hook",
            "networkpolicy.networking.k8s.io/mpi-operator-hook",
            "compositecontroller.metacontroller.k8s.io/mpi-operator-hook",
        ]
    )
    assert all(line.endswith("serverside-applied (server dry run)") for line in done.stdout.splitlines())
