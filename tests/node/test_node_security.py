"""Only Metacontroller may ask: on the real node, with deploy/ as installed (its caller token Secret, the
hook's mount of it, the CompositeController's ``authorization``), forged calls are refused with 401 and post
no Event, Metacontroller's calls succeed, and a rotated token is taken up.

Forged calls come two ways. From a Pod in another namespace: the node this suite starts (CNI ``bridge``) does
not enforce NetworkPolicy, as many clusters', so every such call reaches the hook and must be answered 401;
against a given cluster (``MPI_HOOK_NODE_KUBECONFIG``) whose network plugin enforces deploy/'s NetworkPolicy,
a call may be dropped on the way instead (status 0). And from inside a hook Pod to its own port, where no
NetworkPolicy applies on any cluster: there the token alone stands in the way, and every call must get 401.
The hook's refusal counter must count exactly the 401s seen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.hook import CALLER_NAMESPACE, CALLER_SECRET, caller_token
from tests.e2e.kube import Kube, wait_for
from tests.node import recipes, runs
from tests.node.conftest import RealNode
from tests.node.hookpods import NAMESPACE, hook_metric, hook_pods
from tests.node.metacontroller import restart_metacontroller

ROOT = Path(__file__).resolve().parents[2]
FIRST_SYNC = ROOT / "tests" / "fixtures" / "wire" / "sync-request-01-first-sync-no-children.json"
HOOK_URL = "http://mpi-operator-hook.mpi-operator.svc:8080"
LOCAL_URL = "http://127.0.0.1:8080"
FORGED = 20
# Run with the hook image's Python (nothing else needed): FORGED syncs of made-up MPIJobs in kube-system
# and one customize, as the week's report had them; with no credential, a wrong one, or the Authorization
# header in another scheme. The first sync request comes from SOURCE. Prints each answer's status as JSON.
ATTACK = """
import json, sys, urllib.error, urllib.request
base = json.load(SOURCE)
def post(path, body, header):
    headers = {"Content-Type": "application/json", **({"Authorization": header} if header else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(URL + path, body, headers), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0  # never answered: dropped on the way (a NetworkPolicy enforced) or unreachable
statuses = []
for i in range(COUNT):
    parent = dict(base["parent"], metadata=dict(base["parent"]["metadata"], name=f"PREFIX-{i}",
                  namespace="kube-system", uid=f"00000000-0000-4000-8000-UID{i:09d}"))
    body = json.dumps(dict(base, parent=parent)).encode()
    statuses.append(post("/sync", body, [None, "Bearer forged", "Basic Zm9yZ2Vk"][i % 3]))
customize = {"controller": base["controller"], "parent": base["parent"]}
statuses.append(post("/customize", json.dumps(customize).encode(), None))
print(json.dumps(statuses))
"""
# Every forged job's name starts with this; the two ways use names of their own.
FORGED_PREFIX = "forged-"


def _attack(url: str, source: str, prefix: str, uid: int) -> str:
    replaced = {
        "URL": repr(url),
        "COUNT": str(FORGED),
        "SOURCE": source,
        "PREFIX": prefix,
        "UID": f"{uid:03d}",
    }
    script = ATTACK
    for word, value in replaced.items():
        script = script.replace(word, value)
    return script


def _attacker(ns: str) -> list[dict[str, Any]]:
    script = _attack(HOOK_URL, 'open("/forged/request.json")', f"{FORGED_PREFIX}pod", 0)
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "forged"},
        "data": {"request.json": FIRST_SYNC.read_text()},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "forger"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "forger",
                    "image": recipes.HOOK_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["python3", "-c", script],
                    "volumeMounts": [{"name": "forged", "mountPath": "/forged"}],
                    "resources": {"limits": {"cpu": "200m", "memory": "128Mi"}},
                }
            ],
            "volumes": [{"name": "forged", "configMap": {"name": "forged"}}],
        },
    }
    return [config, pod]


def _forged_events(kube: Kube) -> list[str]:
    found = kube.list("events", "kube-system")
    return [e["reason"] for e in found if e["involvedObject"].get("name", "").startswith(FORGED_PREFIX)]


def _from_another_namespace(kube: Kube, ns: str) -> list[int]:
    kube.kubectl("-n", ns, "apply", "-f", "-", stdin=yaml.safe_dump_all(_attacker(ns)))

    def finished() -> dict[str, Any] | None:
        pod = kube.get("pods", ns, "forger") or {}
        return pod if pod.get("status", {}).get("phase") in ("Succeeded", "Failed") else None

    assert wait_for(finished, 120, "the forging Pod to finish")["status"]["phase"] == "Succeeded"
    statuses: list[int] = json.loads(kube.kubectl("-n", ns, "logs", "forger").stdout)
    return statuses


def _from_inside_a_hook_pod(kube: Kube) -> list[int]:
    """The same forgery sent by a hook Pod to its own port: no NetworkPolicy stands between them."""
    pod = hook_pods(kube)[0]
    script = _attack(LOCAL_URL, "sys.stdin", f"{FORGED_PREFIX}local", 1)
    done = kube.kubectl(
        "-n", NAMESPACE, "exec", "-i", pod, "--", "python3", "-c", script, stdin=FIRST_SYNC.read_text()
    )
    statuses: list[int] = json.loads(done.stdout)
    return statuses


def test_forged_calls_are_refused_with_401_and_post_no_event(real_node: RealNode, ns: str) -> None:
    kube = real_node.kube
    refused_before = hook_metric(kube, "mpi_operator_hook_unauthorized_requests_total")
    remote = _from_another_namespace(kube, ns)
    assert len(remote) == FORGED + 1, remote
    if real_node.cluster is not None:  # this suite's node: no NetworkPolicy enforced, every call arrives
        assert remote == [401] * (FORGED + 1), remote
    else:  # a given cluster may drop them on the way (0); none may be answered otherwise
        assert set(remote) <= {401, 0}, remote
    local = _from_inside_a_hook_pod(kube)
    assert local == [401] * (FORGED + 1), local
    refused = hook_metric(kube, "mpi_operator_hook_unauthorized_requests_total") - refused_before
    assert refused == remote.count(401) + local.count(401)
    # Metacontroller's own calls, with the token, still run a job to the end (and post its Events).
    runs.apply(kube, ns, runs.example("pi.yaml", "pi", cpu="300m"))
    runs.succeeded(kube, ns, "pi")
    assert _forged_events(kube) == []


def test_a_rotated_token_is_taken_up_by_the_hook_and_metacontroller(real_node: RealNode, ns: str) -> None:
    """The rotation docs/operations.md (Security) describes: remove the token, the token controller writes a
    new one, every hook replica takes it up, then Metacontroller is restarted."""
    kube = real_node.kube
    old = caller_token(kube)
    remove = json.dumps([{"op": "remove", "path": "/data/token"}])
    kube.kubectl("-n", CALLER_NAMESPACE, "patch", "secret", CALLER_SECRET, "--type=json", "-p", remove)
    new = caller_token(kube, previous=old)
    assert new != old

    def logs() -> list[str]:
        return [kube.kubectl("-n", CALLER_NAMESPACE, "logs", pod).stdout for pod in hook_pods(kube)]

    def every_replica_changed() -> bool:
        found = logs()
        return bool(found) and all("caller credential changed" in log for log in found)

    wait_for(every_replica_changed, 240, "every hook replica to take up the new caller token")
    restart_metacontroller(kube)
    runs.apply(kube, ns, runs.example("pi.yaml", "pi", cpu="300m"))
    runs.succeeded(kube, ns, "pi")
    assert not any(new.decode() in log or old.decode() in log for log in logs())
