"""Gang scheduling through the fake Metacontroller: the PodGroup over a job's life, for each scheduler.

The CompositeController is the shipped one with the PodGroup child added exactly as each overlay's patch
adds it, and the hook runs with the overlay's setting. Every PodGroup the fake creates or updates passes
our schema for that kind (tests/schemas/), and the Volcano CRD's default queue is filled in as the
apiserver would. Each step's request and response digest is recorded under
``tests/golden/lifecycle/gang-*/`` (``--update-golden``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from app.settings import Settings
from tests.hook.test_lifecycle import (
    CONFIGMAP,
    LAUNCHER,
    RESUMED,
    RUNNING,
    SECRET,
    SERVICE,
    SUCCEEDED,
    SUSPENDED,
    assert_conditions,
    pod,
    steady,
    workers,
)
from tests.support import paths
from tests.support.builders import mpijob
from tests.support.metacontroller import (
    COMPOSITE_CONTROLLER,
    ContractViolation,
    FakeMetacontroller,
    Golden,
    Writes,
)
from tests.support.paths import ROOT

GOLDEN = paths.GOLDEN / "lifecycle"
SCHEDULERS = {
    "volcano": ("deploy/overlays/volcano", "PodGroup.scheduling.volcano.sh/v1beta1/pi"),
    "scheduler-plugins": ("deploy/overlays/scheduler-plugins", "PodGroup.scheduling.x-k8s.io/v1alpha1/pi"),
}


def overlay(directory: str) -> tuple[dict[str, Any], Settings]:
    """The CompositeController and hook setting an overlay produces, read from its kustomization."""
    kustomization = yaml.safe_load((ROOT / directory / "kustomization.yaml").read_text())
    controller = yaml.safe_load(COMPOSITE_CONTROLLER.read_text())
    setting = ""
    for patch in kustomization["patches"]:
        body = yaml.safe_load(patch["patch"])
        if patch["target"]["kind"] == "CompositeController":
            for op in body:
                assert (op["op"], op["path"]) == ("add", "/spec/childResources/-")
                controller["spec"]["childResources"].append(op["value"])
        else:
            (container,) = body["spec"]["template"]["spec"]["containers"]
            (env,) = container["env"]
            assert env["name"] == "MPI_OPERATOR_GANG_SCHEDULING"
            setting = env["value"]
    return controller, Settings(gang_scheduling=setting)


def gang_fake(scheduler: str, scenario: str, update_golden: bool) -> tuple[FakeMetacontroller, str]:
    directory, podgroup = SCHEDULERS[scheduler]
    controller, settings = overlay(directory)
    golden = Golden(GOLDEN / f"gang-{scheduler}-{scenario}", update_golden)
    return FakeMetacontroller(controller, settings=settings, golden=golden), podgroup


def job(replicas: int = 2, **run_policy: Any) -> dict[str, Any]:
    builder = mpijob("pi").workers(replicas)
    if run_policy:
        builder.run_policy(**run_policy)
    return builder.build()


def spec(mc: FakeMetacontroller) -> dict[str, Any]:
    found = mc.get("PodGroup", "pi")
    assert found is not None, "no PodGroup"
    return dict(found["spec"])


def joined(mc: FakeMetacontroller, scheduler: str) -> bool:
    """Every worker Pod and the launcher's template name the scheduler and the group."""
    templates = [mc.get("Pod", name) for name in mc.names("Pod")]
    launcher = mc.get("Job", "pi-launcher")
    if launcher is not None:
        templates.append(launcher["spec"]["template"])
    name = "volcano" if scheduler == "volcano" else "scheduler-plugins-scheduler"
    for template in templates:
        assert template is not None
        meta = template["metadata"]
        group = (
            (meta.get("annotations") or {}).get("scheduling.k8s.io/group-name")
            if scheduler == "volcano"
            else (meta.get("labels") or {}).get("scheduling.x-k8s.io/pod-group")
        )
        if template["spec"].get("schedulerName") != name or group != "pi":
            return False
    return bool(templates)


def run_workers_and_launcher(mc: FakeMetacontroller) -> None:
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    steady(mc)
    assert_conditions(mc, RUNNING)


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
@pytest.mark.parametrize(("policy", "kept"), [("None", True), ("Running", False), ("All", False)])
def test_create_run_finish(scheduler: str, policy: str, kept: bool, update_golden: bool) -> None:
    """The PodGroup comes in the response that creates the workers, stays while the job runs (a steady
    job writes nothing), and after success is kept under cleanPodPolicy None, deleted under Running/All
    together with the workers, once the finished status is stored (upstream 4.8, 5.7).
    """
    mc, podgroup = gang_fake(scheduler, f"finish-{policy.lower()}", update_golden)
    mc.apply_mpijob(job(cleanPodPolicy=policy))

    assert mc.sync() == Writes(
        status=1, created=[SERVICE, CONFIGMAP, SECRET, podgroup, pod(0), pod(1), LAUNCHER]
    )
    assert spec(mc)["minMember"] == 3
    assert joined(mc, scheduler)
    steady(mc)
    run_workers_and_launcher(mc)

    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, SUCCEEDED)
    mc.advance(10)
    writes = mc.sync()
    if kept:
        assert writes == Writes()
        assert mc.names("PodGroup") == ["pi"]
        assert mc.names("Pod") == workers(0, 1)
    else:
        assert writes == Writes(updated=[CONFIGMAP], deleted=[podgroup, pod(0), pod(1)])
        assert mc.names("PodGroup") == []
    steady(mc)
    assert mc.names("Job") == ["pi-launcher"]


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_wait_for_workers_ready(scheduler: str, update_golden: bool) -> None:
    """Fix of upstream #608: until the launcher exists the group is the workers, so the scheduler can
    place them; the response that creates the launcher also raises minMember to count it.
    """
    mc, podgroup = gang_fake(scheduler, "wait-for-workers-ready", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(3).wait_for_workers().build())

    assert mc.sync() == Writes(
        status=1, created=[SERVICE, CONFIGMAP, SECRET, podgroup, pod(0), pod(1), pod(2)]
    )
    assert spec(mc)["minMember"] == 3
    assert spec(mc)["minResources"] == {"cpu": "3", "memory": "3Gi"}
    steady(mc)

    mc.advance(10)
    mc.workers_running(ready=False)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])
    steady(mc)
    assert mc.get("Job", "pi-launcher") is None

    mc.advance(10)
    mc.workers_running(ready=True)
    assert mc.sync() == Writes(created=[LAUNCHER], updated=[podgroup])
    assert spec(mc)["minMember"] == 4
    assert spec(mc)["minResources"] == {"cpu": "4", "memory": "4Gi"}
    assert joined(mc, scheduler)
    steady(mc)
    mc.advance(10)
    mc.start_launcher_pod()
    steady(mc)
    assert_conditions(mc, RUNNING)


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_suspend_and_resume_with_changed_templates(scheduler: str, update_golden: bool) -> None:
    """Suspending drops the PodGroup with the workers and the launcher; while suspended the templates change
    (as Kueue or a user would); resuming re-creates the PodGroup from the current spec, in the same
    response as the workers.
    """
    mc, podgroup = gang_fake(scheduler, "suspend-resume", update_golden)
    mc.apply_mpijob(job())
    steady(mc)
    run_workers_and_launcher(mc)
    first = mc.get("PodGroup", "pi")["metadata"]["uid"]

    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", True)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP], deleted=[podgroup, pod(0), pod(1), LAUNCHER])
    steady(mc)
    assert_conditions(mc, SUSPENDED)
    assert (mc.names("PodGroup"), mc.names("Pod"), mc.names("Job")) == ([], [], [])

    mc.advance(10)
    edited = copy.deepcopy(mc.parent)
    resources = {"limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}
    edited["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = resources
    edited["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    mc.apply_mpijob(edited)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])  # the hostfile lists 3 workers
    assert mc.names("PodGroup") == []

    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", False)
    assert mc.sync() == Writes(status=1, created=[podgroup, pod(0), pod(1), pod(2), LAUNCHER])
    # 3 workers under `mpirun -n 2`, and GPUs with cleanPodPolicy unset: lint warns, first in the list.
    assert_conditions(mc, {"Warning": ("True", "LintWarnings"), **RESUMED})
    assert mc.get("PodGroup", "pi")["metadata"]["uid"] != first
    assert spec(mc)["minMember"] == 4
    assert spec(mc)["minResources"] == {"cpu": "13", "memory": "25Gi", "nvidia.com/gpu": "3"}
    assert joined(mc, scheduler)
    steady(mc)


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_scheduling_policy_and_replica_edits_update_the_podgroup_in_place(
    scheduler: str, update_golden: bool
) -> None:
    """schedulingPolicy edits change only the PodGroup (updated in place, same object); a scale-up
    updates it, and (ours) creates the new worker in the next sync, once the PodGroup counts it: upstream
    does both in one pass, PodGroup first, while Metacontroller would create the Pod first.
    """
    mc, podgroup = gang_fake(scheduler, "policy-edit", update_golden)
    mc.apply_mpijob(job())
    steady(mc)
    run_workers_and_launcher(mc)
    uid = mc.get("PodGroup", "pi")["metadata"]["uid"]
    before = spec(mc)

    mc.advance(10)
    policy = {"minAvailable": 2, "queue": "research", "priorityClass": "high", "scheduleTimeoutSeconds": 60}
    mc.edit_spec("runPolicy.schedulingPolicy", policy)
    assert mc.sync() == Writes(status=1, updated=[podgroup])
    steady(mc)
    after = spec(mc)
    assert after["minMember"] == 2
    if scheduler == "volcano":
        assert (after["queue"], after["priorityClassName"]) == ("research", "high")
    else:
        assert after["scheduleTimeoutSeconds"] == 60
    assert after["minResources"] == {"cpu": "2", "memory": "2Gi"}  # the launcher and one worker

    mc.advance(10)
    mc.edit_spec("runPolicy.schedulingPolicy", {})
    assert mc.sync() == Writes(status=1, updated=[podgroup])
    steady(mc)
    assert spec(mc) == before, "back to the defaults (Volcano's queue: the CRD default again)"

    mc.advance(10)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 3)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP, podgroup])
    assert spec(mc)["minMember"] == 4
    assert mc.sync() == Writes(created=[pod(2)])
    assert mc.get("PodGroup", "pi")["metadata"]["uid"] == uid
    steady(mc)


def test_priority_classes_rank_the_gang(update_golden: bool) -> None:
    """PriorityClasses come from the cluster (customize hook, v2): the higher-priority launcher is counted
    first; an unknown class counts as 0, as upstream.
    """
    mc, podgroup = gang_fake("volcano", "priority-classes", update_golden)
    mc.add_priority_class("high", 1_000)
    built = job(4, schedulingPolicy={"minAvailable": 2})
    built["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["priorityClassName"] = "high"
    built["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "8", "memory": "16Gi"}
    }
    built["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "missing"
    mc.apply_mpijob(built)
    steady(mc)
    assert spec(mc) == {
        "minMember": 2,
        "queue": "default",
        "priorityClassName": "high",
        "minResources": {"cpu": "9", "memory": "17Gi"},
    }
    # The class that was missing appears with a higher value: the workers now fill the gang.
    mc.add_priority_class("missing", 5_000)
    assert mc.sync() == Writes(updated=[podgroup])
    assert spec(mc)["minResources"] == {"cpu": "16", "memory": "32Gi"}
    steady(mc)


def test_podgroup_child_not_declared(update_golden: bool) -> None:
    """The setting names Volcano but the CompositeController is the base one: the job runs without a
    PodGroup and without scheduler decoration, and its status says which overlay to apply. Once the
    overlay is applied the running job gets its PodGroup and loses the notice (its existing Pods keep
    their scheduler: Pods are never updated).
    """
    mc = FakeMetacontroller(
        settings=Settings(gang_scheduling="volcano"),
        golden=Golden(GOLDEN / "gang-volcano-not-declared", update_golden),
    )
    mc.apply_mpijob(job())
    assert mc.sync() == Writes(status=1, created=[SERVICE, CONFIGMAP, SECRET, pod(0), pod(1), LAUNCHER])
    condition = mc.status["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "GangSchedulingUnavailable",
        "True",
        "PodGroupChildNotDeclared",
    )
    assert "scheduling.volcano.sh/v1beta1 podgroups" in condition["message"]
    assert "deploy/overlays/volcano" in condition["message"]
    assert "schedulerName" not in mc.get("Pod", "pi-worker-0")["spec"]
    steady(mc)
    run_workers_and_launcher_without_gang(mc)

    mc.advance(10)
    mc.replace_controller(overlay(SCHEDULERS["volcano"][0])[0])
    assert mc.sync() == Writes(status=1, created=[SCHEDULERS["volcano"][1]])
    assert_conditions(mc, RUNNING)
    steady(mc)


def run_workers_and_launcher_without_gang(mc: FakeMetacontroller) -> None:
    mc.advance(10)
    mc.workers_running()
    mc.start_launcher_pod()
    steady(mc)
    assert_conditions(
        mc,
        {"GangSchedulingUnavailable": ("True", "PodGroupChildNotDeclared"), **RUNNING},
    )


# --- ours: Kubernetes' Workload API (deploy/overlays/kubernetes) ------------------------------------------

WORKLOAD_API = "deploy/overlays/kubernetes"
WORKLOAD = "Workload.scheduling.k8s.io/v1beta1/pi"
K8S_PODGROUP = "PodGroup.scheduling.k8s.io/v1beta1/pi"
TOPOLOGY = "mpi-operator-hook/gang-topology-key"


def workload_fake(scenario: str, update_golden: bool) -> FakeMetacontroller:
    controller, settings = overlay(WORKLOAD_API)
    golden = Golden(GOLDEN / f"gang-kubernetes-{scenario}", update_golden)
    return FakeMetacontroller(controller, settings=settings, golden=golden)


def gang_of(mc: FakeMetacontroller) -> tuple[int, list[str]]:
    """The Workload's and the PodGroup's minCount (they must agree) and topology keys."""
    group, workload = mc.get("PodGroup", "pi"), mc.get("Workload", "pi")
    assert group is not None and workload is not None
    (template,) = workload["spec"]["podGroupTemplates"]
    assert group["spec"]["workloadRef"] == {"workloadName": "pi", "templateName": template["name"]}
    for key in ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "priorityClassName"):
        assert group["spec"].get(key) == template.get(key)
    keys = [t["key"] for t in (template.get("schedulingConstraints") or {}).get("topology", [])]
    return template["schedulingPolicy"]["gang"]["minCount"], keys


def in_group(mc: FakeMetacontroller) -> bool:
    """Every worker Pod and the launcher's template name the group and keep the default scheduler."""
    templates: list[Any] = [mc.get("Pod", name) for name in mc.names("Pod")]
    launcher = mc.get("Job", "pi-launcher")
    if launcher is not None:
        templates.append(launcher["spec"]["template"])
    return bool(templates) and all(
        t["spec"].get("schedulingGroup") == {"podGroupName": "pi"} and "schedulerName" not in t["spec"]
        for t in templates
    )


@pytest.mark.parametrize(("policy", "kept"), [("None", True), ("Running", False)])
def test_workload_api_create_run_finish(policy: str, kept: bool, update_golden: bool) -> None:
    """The Workload and its PodGroup come with the workers, as the other backends' PodGroup, and go with
    them under cleanPodPolicy Running."""
    mc = workload_fake(f"finish-{policy.lower()}", update_golden)
    mc.apply_mpijob(job(cleanPodPolicy=policy))
    assert mc.sync() == Writes(
        status=1, created=[SERVICE, CONFIGMAP, SECRET, WORKLOAD, K8S_PODGROUP, pod(0), pod(1), LAUNCHER]
    )
    assert gang_of(mc) == (3, [])
    assert in_group(mc)
    steady(mc)
    run_workers_and_launcher(mc)

    mc.advance(10)
    mc.finish_launcher("Complete")
    assert mc.sync() == Writes(status=1)
    mc.advance(10)
    writes = mc.sync()
    if kept:
        assert writes == Writes()
        assert (mc.names("Workload"), mc.names("PodGroup")) == (["pi"], ["pi"])
    else:
        assert writes == Writes(updated=[CONFIGMAP], deleted=[WORKLOAD, K8S_PODGROUP, pod(0), pod(1)])
    steady(mc)


def test_workload_api_wait_for_workers_ready_recreates_the_gang(update_golden: bool) -> None:
    """The gang counts the workers until the launcher exists; then minCount counts it too. Both specs are
    immutable: Metacontroller (Recreate) deletes both and creates them anew on the next sync, never a 422.
    """
    mc = workload_fake("wait-for-workers-ready", update_golden)
    mc.apply_mpijob(mpijob("pi").workers(3).wait_for_workers().build())
    steady(mc)
    assert gang_of(mc) == (3, [])
    mc.advance(10)
    mc.workers_running(ready=False)
    assert mc.sync() == Writes(status=1, updated=[CONFIGMAP])

    mc.advance(10)
    mc.workers_running(ready=True)
    assert mc.sync() == Writes(created=[LAUNCHER], deleted=[WORKLOAD, K8S_PODGROUP])
    assert mc.sync() == Writes(status=1, created=[WORKLOAD, K8S_PODGROUP])  # the launcher Job observed
    assert gang_of(mc) == (4, [])
    assert in_group(mc)
    steady(mc)


def test_workload_api_suspend_resume_and_edits(update_golden: bool) -> None:
    """Suspending drops the group with the Pods; resuming makes it from the current spec. A running job's
    schedulingPolicy or topology edit makes a new group (same name) instead of an update."""
    mc = workload_fake("suspend-resume", update_golden)
    mc.apply_mpijob(job())
    steady(mc)
    run_workers_and_launcher(mc)

    mc.advance(10)
    mc.edit_spec("runPolicy.suspend", True)
    assert mc.sync() == Writes(
        status=1, updated=[CONFIGMAP], deleted=[WORKLOAD, K8S_PODGROUP, pod(0), pod(1), LAUNCHER]
    )
    steady(mc)
    assert (mc.names("Workload"), mc.names("PodGroup")) == ([], [])

    mc.advance(10)
    mc.edit_spec("mpiReplicaSpecs.Worker.replicas", 3)
    mc.edit_spec("runPolicy.suspend", False)
    assert mc.sync() == Writes(
        status=1, updated=[CONFIGMAP], created=[WORKLOAD, K8S_PODGROUP, pod(0), pod(1), pod(2), LAUNCHER]
    )
    assert gang_of(mc) == (4, [])
    steady(mc)

    mc.advance(10)
    mc.edit_spec("runPolicy.schedulingPolicy", {"minAvailable": 2})
    assert mc.sync() == Writes(status=1, deleted=[WORKLOAD, K8S_PODGROUP])
    steady(mc)
    assert gang_of(mc) == (2, [])

    mc.advance(10)
    assert mc.parent is not None
    mc.parent["metadata"].setdefault("annotations", {})[TOPOLOGY] = "topology.kubernetes.io/zone"  # annotate
    assert mc.sync() == Writes(deleted=[WORKLOAD, K8S_PODGROUP])
    steady(mc)
    assert gang_of(mc) == (2, ["topology.kubernetes.io/zone"])
    assert in_group(mc)


def test_workload_api_in_place_would_be_refused_for_ever() -> None:
    """Why the overlay says Recreate: with InPlace the changed minCount is an update of an immutable spec."""
    controller, settings = overlay(WORKLOAD_API)
    for child in controller["spec"]["childResources"]:
        if child["apiVersion"] == "scheduling.k8s.io/v1beta1":
            child["updateStrategy"] = {"method": "InPlace"}
    mc = FakeMetacontroller(controller, settings=settings)
    mc.apply_mpijob(job())
    steady(mc)
    mc.edit_spec("runPolicy.schedulingPolicy", {"minAvailable": 2})
    with pytest.raises(ContractViolation, match="spec is immutable"):
        mc.sync()


def scheduler_says(
    mc: FakeMetacontroller,
    status: str,
    reason: str,
    message: str = "",
    kind: str = "PodGroupInitiallyScheduled",
) -> None:
    """kube-scheduler writes the PodGroup's condition (its status subresource): ``kind``, 1.36's
    PodGroupScheduled renamed in 1.37."""
    group = mc.get("PodGroup", "pi")
    assert group is not None
    condition = {"type": kind, "status": status, "reason": reason, "message": message}
    group["status"] = {"conditions": [{**condition, "lastTransitionTime": "2026-05-04T09:00:05Z"}]}
    mc._bump(group)


def test_workload_api_a_held_gang_says_why_until_it_is_placed(update_golden: bool) -> None:
    """The scheduler cannot place the gang: the job says so (GangScheduled=False, its reason and message)
    first, STATE still Created, one status write and then none; once placed the condition goes."""
    mc = workload_fake("held", update_golden)
    mc.apply_mpijob(job())
    steady(mc)
    mc.advance(5)
    scheduler_says(mc, "False", "Unschedulable", "pod group is unschedulable")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, {"GangScheduled": ("False", "Unschedulable"), "Created": ("True", "MPIJobCreated")})
    assert "pod group is unschedulable" in mc.status["conditions"][0]["message"]
    steady(mc)

    mc.advance(10)
    scheduler_says(mc, "True", "Scheduled")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, {"Created": ("True", "MPIJobCreated")})
    steady(mc)
    run_workers_and_launcher(mc)


def test_workload_api_on_1_36_the_overlay_declares_v1alpha2_and_the_hook_writes_it() -> None:
    """deploy/overlays/kubernetes-1.36: the same gang in 1.36's shape (podGroupTemplateRef, no priority, no
    disruption mode), and 1.36's condition read while it is held."""
    controller, settings = overlay("deploy/overlays/kubernetes-1.36")
    mc = FakeMetacontroller(controller, settings=settings)
    mc.apply_mpijob(job())
    steady(mc)
    group, workload = mc.get("PodGroup", "pi"), mc.get("Workload", "pi")
    assert group is not None and workload is not None
    assert {group["apiVersion"], workload["apiVersion"]} == {"scheduling.k8s.io/v1alpha2"}
    assert group["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": "pi", "podGroupTemplateName": "mpijob"}},
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }
    assert workload["spec"] == {
        "podGroupTemplates": [{"name": "mpijob", "schedulingPolicy": {"gang": {"minCount": 3}}}]
    }
    assert in_group(mc)
    mc.advance(5)
    scheduler_says(mc, "False", "Unschedulable", "pod group is unschedulable", kind="PodGroupScheduled")
    assert mc.sync() == Writes(status=1)
    assert_conditions(mc, {"GangScheduled": ("False", "Unschedulable"), "Created": ("True", "MPIJobCreated")})
    assert "(scheduling.k8s.io/v1alpha2)" in mc.status["conditions"][0]["message"]
