"""``validate`` against upstream ``ValidateMPIJob`` (pkg/apis/kubeflow/validation/validation_test.go).

Upstream's test compares each error's type, field and origin in order; we compare ``(field, kind)`` in order
and, in addition, every error rendered the way apimachinery's ``field.Error.Error()`` renders it (that text
ends up in the ``ValidationError`` event). The first ten cases carry upstream's names and run on the job as
written. The controller validates a *defaulted* job, so the "defaulted:" cases run ``with_defaults`` first.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.child_names import dns1035_label_errors
from app.api.defaults import with_defaults
from app.api.types import MPIJob
from app.api.validation import FieldError, aggregate, validate

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
TOO_LONG = "must be no more than 63 characters"
BAD_LABEL = "will not able to create pod and service with invalid DNS label"
IMPLEMENTATIONS = 'supported values: "Intel", "MPICH", "OpenMPI"'
RESTART_POLICIES = 'supported values: "Never", "OnFailure"'
CLEAN_POLICIES = 'supported values: "All", "None", "Running"'
MANAGERS = 'supported values: "kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"'

NON_NEGATIVE = "must be greater than or equal to 0"
LONG_NAME = "this-name-is-waaaaaaaay-too-long-for-a-worker-hostname"  # 54 characters


def rep(replicas: int | None = None, restart: str | None = None, containers: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if replicas is not None:
        spec["replicas"] = replicas
    if restart is not None:
        spec["restartPolicy"] = restart
    if containers:
        spec["template"] = {"spec": {"containers": [{}]}}
    return spec


def job(name: str | None = "foo", **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "spec": spec}
    if name is not None:
        obj["metadata"] = {"name": name, "namespace": "bar"}
    return obj


def valid_spec(**overrides: Any) -> dict[str, Any]:
    """A spec that passes validation as written (upstream's "valid" cases), with ``overrides`` applied."""
    spec: dict[str, Any] = {
        "slotsPerWorker": 2,
        "runPolicy": {"cleanPodPolicy": "Running"},
        "sshAuthMountPath": "/root/.ssh",
        "mpiImplementation": "OpenMPI",
        "mpiReplicaSpecs": {"Launcher": rep(1, "Never")},
    }
    spec.update(overrides)
    return spec


def workers(n: int | None, restart: str | None = None) -> dict[str, Any]:
    """Replica specs with a valid launcher and ``n`` workers (``None``: replicas not set)."""
    return {"Launcher": rep(1, "OnFailure"), "Worker": rep(n, restart)}


# (id, MPIJob as stored, defaulted first?, [(field, kind), ...], [rendered error, ...])
Case = tuple[str, dict[str, Any], bool, list[tuple[str, str]], list[str]]

UPSTREAM_CASES: list[Case] = [
    (
        "valid (intel)",
        job(**valid_spec(sshAuthMountPath="/home/mpiuser/.ssh", mpiImplementation="Intel")),
        False,
        [],
        [],
    ),
    (
        "valid with worker (intel)",
        job(
            **valid_spec(
                sshAuthMountPath="/home/mpiuser/.ssh",
                mpiImplementation="Intel",
                mpiReplicaSpecs={"Launcher": rep(1, "OnFailure"), "Worker": rep(3, "Never")},
            )
        ),
        False,
        [],
        [],
    ),
    (
        "valid (mpich)",
        job(**valid_spec(sshAuthMountPath="/home/mpiuser/.ssh", mpiImplementation="MPICH")),
        False,
        [],
        [],
    ),
    (
        "valid with worker (mpich)",
        job(
            **valid_spec(
                sshAuthMountPath="/home/mpiuser/.ssh",
                mpiImplementation="MPICH",
                mpiReplicaSpecs={"Launcher": rep(1, "OnFailure"), "Worker": rep(3, "Never")},
            )
        ),
        False,
        [],
        [],
    ),
    (
        "invalid fields",
        job(
            LONG_NAME,
            slotsPerWorker=2,
            runPolicy={
                "cleanPodPolicy": "unknown",
                "ttlSecondsAfterFinished": -1,
                "activeDeadlineSeconds": -1,
                "backoffLimit": -1,
                "managedBy": "invalid.com/controller",
            },
            sshAuthMountPath="/root/.ssh",
            mpiImplementation="Unknown",
            mpiReplicaSpecs={"Launcher": rep(1, "Never"), "Worker": rep(1000, "Never")},
        ),
        False,
        [
            ("metadata.name", "Invalid"),
            ("spec.runPolicy.cleanPodPolicy", "NotSupported"),
            ("spec.runPolicy.ttlSecondsAfterFinished", "Invalid"),
            ("spec.runPolicy.activeDeadlineSeconds", "Invalid"),
            ("spec.runPolicy.backoffLimit", "Invalid"),
            ("spec.runPolicy.managedBy", "NotSupported"),
            ("spec.mpiImplementation", "NotSupported"),
        ],
        [
            f'metadata.name: Invalid value: "{LONG_NAME}": {BAD_LABEL} "{LONG_NAME}-worker-999": {TOO_LONG}',
            f'spec.runPolicy.cleanPodPolicy: Unsupported value: "unknown": {CLEAN_POLICIES}',
            "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            f'spec.runPolicy.managedBy: Unsupported value: "invalid.com/controller": {MANAGERS}',
            f'spec.mpiImplementation: Unsupported value: "Unknown": {IMPLEMENTATIONS}',
        ],
    ),
    (
        "empty replica specs",
        job(**valid_spec(mpiReplicaSpecs={})),
        False,
        [("spec.mpiReplicaSpecs[Launcher]", "Required")],
        ["spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec"],
    ),
    (
        "invalid replica fields",
        job(**valid_spec(mpiReplicaSpecs={"Launcher": rep(2, "Always"), "Worker": rep(0, "Invalid")})),
        False,
        [
            ("spec.mpiReplicaSpecs[Launcher].restartPolicy", "NotSupported"),
            ("spec.mpiReplicaSpecs[Launcher].replicas", "Invalid"),
            ("spec.mpiReplicaSpecs[Worker].restartPolicy", "NotSupported"),
            ("spec.mpiReplicaSpecs[Worker].replicas", "Invalid"),
        ],
        [
            f'spec.mpiReplicaSpecs[Launcher].restartPolicy: Unsupported value: "Always": {RESTART_POLICIES}',
            "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1",
            f'spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: "Invalid": {RESTART_POLICIES}',
            "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1",
        ],
    ),
    (
        "invalid mpiJob name",
        job(
            "1-foo",
            **valid_spec(sshAuthMountPath="/home/mpiuser/.ssh", mpiImplementation="Intel"),
        ),
        False,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "1-foo": {BAD_LABEL} "1-foo-worker-0": {DNS1035}'],
    ),
]

N54 = "n" * 54  # longest name that still fits "-worker-9"
N52 = "n" * 52  # longest name that still fits "-worker-999"

DEFAULTED_CASES: list[Case] = [
    (
        "defaulted: empty job",
        job(name=None),
        True,
        [("metadata.name", "Invalid"), ("spec.mpiReplicaSpecs", "Required")],
        [
            f'metadata.name: Invalid value: "": {BAD_LABEL} "-worker-0": {DNS1035}',
            "spec.mpiReplicaSpecs: Required value: must have replica specs",
        ],
    ),
    (
        "defaulted: no replica specs",  # upstream TestDoNothingWithInvalidMPIJob
        job(),
        True,
        [("spec.mpiReplicaSpecs", "Required")],
        ["spec.mpiReplicaSpecs: Required value: must have replica specs"],
    ),
    (
        "defaulted: empty replica specs",
        job(mpiReplicaSpecs={}),
        True,
        [("spec.mpiReplicaSpecs[Launcher]", "Required")],
        ["spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec"],
    ),
    (
        "defaulted: null launcher spec",
        job(mpiReplicaSpecs={"Launcher": None, "Worker": rep(1)}),
        True,
        [("spec.mpiReplicaSpecs[Launcher]", "Required")],
        ["spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec"],
    ),
    (
        "defaulted: missing replica spec fields",
        job(mpiReplicaSpecs={"Launcher": {}, "Worker": {}}),
        True,
        [
            ("spec.mpiReplicaSpecs[Launcher].template.spec.containers", "Required"),
            ("spec.mpiReplicaSpecs[Worker].template.spec.containers", "Required"),
            ("spec.mpiReplicaSpecs[Worker].replicas", "Invalid"),
        ],
        [
            "spec.mpiReplicaSpecs[Launcher].template.spec.containers: Required value: "
            "must define at least one container",
            "spec.mpiReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must define at least one container",
            "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1",
        ],
    ),
    (
        "defaulted: worker without replicas",
        job(mpiReplicaSpecs=workers(None)),
        True,
        [("spec.mpiReplicaSpecs[Worker].replicas", "Invalid")],
        ["spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1"],
    ),
    ("defaulted: launcher only", job(mpiReplicaSpecs={"Launcher": rep()}), True, [], []),
    ("defaulted: launcher and two workers", job(mpiReplicaSpecs=workers(2)), True, [], []),
    (
        "defaulted: invalid fields",
        UPSTREAM_CASES[4][1],
        True,
        UPSTREAM_CASES[4][3],
        UPSTREAM_CASES[4][4],
    ),
    (
        "defaulted: launcher replicas 0",
        job(mpiReplicaSpecs={"Launcher": rep(0)}),
        True,
        [("spec.mpiReplicaSpecs[Launcher].replicas", "Invalid")],
        ["spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 0: must be 1"],
    ),
    (
        "defaulted: negative workers",
        job(mpiReplicaSpecs=workers(-3)),
        True,
        [("spec.mpiReplicaSpecs[Worker].replicas", "Invalid")],
        ["spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -3: must be greater than or equal to 1"],
    ),
    (
        "defaulted: ExitCode restart policy rejected",
        job(mpiReplicaSpecs=workers(2, "ExitCode")),
        True,
        [("spec.mpiReplicaSpecs[Worker].restartPolicy", "NotSupported")],
        [f'spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: "ExitCode": {RESTART_POLICIES}'],
    ),
    (
        "defaulted: Always restart policy rejected",
        job(mpiReplicaSpecs={"Launcher": rep(1, "Always")}),
        True,
        [("spec.mpiReplicaSpecs[Launcher].restartPolicy", "NotSupported")],
        [f'spec.mpiReplicaSpecs[Launcher].restartPolicy: Unsupported value: "Always": {RESTART_POLICIES}'],
    ),
    (
        "defaulted: negative slotsPerWorker",
        job(slotsPerWorker=-1, mpiReplicaSpecs=workers(1)),
        True,
        [("spec.slotsPerWorker", "Invalid")],
        ["spec.slotsPerWorker: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        "defaulted: zero slots, ttl, deadline and backoff allowed",
        job(
            slotsPerWorker=0,
            runPolicy={"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 0, "backoffLimit": 0},
            mpiReplicaSpecs=workers(1),
        ),
        True,
        [],
        [],
    ),
    (
        # Ours: upstream panics computing the PodGroup of a negative minAvailable (docs/compatibility.md).
        "defaulted: negative minAvailable and scheduleTimeoutSeconds",
        job(
            runPolicy={"schedulingPolicy": {"minAvailable": -1, "scheduleTimeoutSeconds": -5}},
            mpiReplicaSpecs=workers(1),
        ),
        True,
        [
            ("spec.runPolicy.schedulingPolicy.minAvailable", "Invalid"),
            ("spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "Invalid"),
        ],
        [
            f"spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: -1: {NON_NEGATIVE}",
            f"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: Invalid value: -5: {NON_NEGATIVE}",
        ],
    ),
    (
        "defaulted: zero minAvailable and scheduleTimeoutSeconds allowed",
        job(
            runPolicy={"schedulingPolicy": {"minAvailable": 0, "scheduleTimeoutSeconds": 0}},
            mpiReplicaSpecs=workers(1),
        ),
        True,
        [],
        [],
    ),
    (
        "defaulted: managedBy multikueue allowed",
        job(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}, mpiReplicaSpecs=workers(1)),
        True,
        [],
        [],
    ),
    (
        "defaulted: managedBy mpi-operator allowed",
        job(runPolicy={"managedBy": "kubeflow.org/mpi-operator"}, mpiReplicaSpecs=workers(1)),
        True,
        [],
        [],
    ),
    (
        "defaulted: launcherCreationPolicy is not validated",
        job(launcherCreationPolicy="Whenever", mpiReplicaSpecs=workers(1)),
        True,
        [],
        [],
    ),
    (
        "defaulted: runLauncherAsWorker without workers",
        job(runLauncherAsWorker=True, mpiReplicaSpecs={"Launcher": rep()}),
        True,
        [],
        [],
    ),
    ("defaulted: 54-char name, 10 workers", job(N54, mpiReplicaSpecs=workers(10)), True, [], []),
    ("defaulted: 54-char name, no worker spec", job(N54, mpiReplicaSpecs={"Launcher": rep()}), True, [], []),
    (
        "defaulted: 55-char name, 10 workers",
        job(N54 + "n", mpiReplicaSpecs=workers(10)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "{N54}n": {BAD_LABEL} "{N54}n-worker-9": {TOO_LONG}'],
    ),
    (
        "defaulted: 54-char name, 11 workers",
        job(N54, mpiReplicaSpecs=workers(11)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "{N54}": {BAD_LABEL} "{N54}-worker-10": {TOO_LONG}'],
    ),
    ("defaulted: 52-char name, 1000 workers", job(N52, mpiReplicaSpecs=workers(1000)), True, [], []),
    (
        "defaulted: 53-char name, 1000 workers",
        job(N52 + "n", mpiReplicaSpecs=workers(1000)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "{N52}n": {BAD_LABEL} "{N52}n-worker-999": {TOO_LONG}'],
    ),
    (
        "defaulted: name length uses 1 replica when workers are 0",
        job(N54, mpiReplicaSpecs=workers(0)),
        True,
        [("spec.mpiReplicaSpecs[Worker].replicas", "Invalid")],
        ["spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1"],
    ),
    (
        "defaulted: name starting with a digit",
        job("1-foo", mpiReplicaSpecs=workers(2)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "1-foo": {BAD_LABEL} "1-foo-worker-1": {DNS1035}'],
    ),
    (
        "defaulted: upper-case name",
        job("Foo", mpiReplicaSpecs=workers(1)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "Foo": {BAD_LABEL} "Foo-worker-0": {DNS1035}'],
    ),
    (
        "defaulted: dotted name is a valid object name but not a valid host name",
        job("foo.bar", mpiReplicaSpecs=workers(1)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "foo.bar": {BAD_LABEL} "foo.bar-worker-0": {DNS1035}'],
    ),
    (
        "defaulted: name too long and starting with a digit",
        job("9" + N54, mpiReplicaSpecs=workers(1)),
        True,
        [("metadata.name", "Invalid")],
        [f'metadata.name: Invalid value: "9{N54}": {BAD_LABEL} "9{N54}-worker-0": {TOO_LONG}, {DNS1035}'],
    ),
    (
        "defaulted: cleanPodPolicy with HTML characters",
        job(runPolicy={"cleanPodPolicy": "<All>"}, mpiReplicaSpecs=workers(1)),
        True,
        [("spec.runPolicy.cleanPodPolicy", "NotSupported")],
        # Go renders a named string type through json.Marshal, which escapes <, > and &.
        [f'spec.runPolicy.cleanPodPolicy: Unsupported value: "\\u003cAll\\u003e": {CLEAN_POLICIES}'],
    ),
    (
        "defaulted: managedBy with HTML characters",
        job(runPolicy={"managedBy": "a<b>&c"}, mpiReplicaSpecs=workers(1)),
        True,
        [("spec.runPolicy.managedBy", "NotSupported")],
        # A plain Go string is rendered with %q, which does not escape <, > or &.
        [f'spec.runPolicy.managedBy: Unsupported value: "a<b>&c": {MANAGERS}'],
    ),
    (
        "defaulted: restartPolicy with non-ASCII characters",
        job(mpiReplicaSpecs=workers(1, "Jamáis")),
        True,
        [("spec.mpiReplicaSpecs[Worker].restartPolicy", "NotSupported")],
        # json.Marshal keeps non-ASCII UTF-8 as is.
        [f'spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: "Jamáis": {RESTART_POLICIES}'],
    ),
]

ALL_CASES = UPSTREAM_CASES + DEFAULTED_CASES


def _validate(raw: dict[str, Any], defaulted: bool) -> list[FieldError]:
    """Upstream's cases validate as written; ours default first, as the controller does. Both work here
    because defaulting leaves every value a case sets alone (upstream's raw "Required" cases for fields
    defaulting fills cannot happen in a controller and are left out). Upstream has no Metacontroller
    annotation to fit: its cases are judged by the 1 MiB ConfigMap limit."""
    return validate(with_defaults(MPIJob.model_validate(raw)), annotation_budget=False)


@pytest.mark.parametrize(
    ("raw", "defaulted", "want"),
    [(c[1], c[2], c[3]) for c in ALL_CASES],
    ids=[c[0] for c in ALL_CASES],
)
def test_validate_fields_and_kinds(raw: dict[str, Any], defaulted: bool, want: list[tuple[str, str]]) -> None:
    assert [(e.field, e.kind) for e in _validate(raw, defaulted)] == want


@pytest.mark.parametrize(
    ("raw", "defaulted", "want"),
    [pytest.param(c[1], c[2], c[4], id=c[0]) for c in ALL_CASES],
)
def test_validate_rendered_messages(raw: dict[str, Any], defaulted: bool, want: list[str]) -> None:
    assert [str(e) for e in _validate(raw, defaulted)] == want


@pytest.mark.parametrize("raw", [c[1] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES])
def test_validate_does_not_mutate_the_job(raw: dict[str, Any]) -> None:
    parsed = MPIJob.model_validate(raw)
    before = parsed.model_dump(by_alias=True)
    validate(with_defaults(parsed))
    assert parsed.model_dump(by_alias=True) == before


E_NAME = FieldError("metadata.name", "Invalid", f'{BAD_LABEL} "1-foo-worker-0": {DNS1035}', "1-foo")
E_SPECS = FieldError("spec.mpiReplicaSpecs", "Required", "must have replica specs")
E_WORKERS = FieldError(
    "spec.mpiReplicaSpecs[Worker].replicas", "Invalid", "must be greater than or equal to 1", 0
)
E_IMPL = FieldError("spec.mpiImplementation", "NotSupported", "", "Foo", ("Intel", "MPICH", "OpenMPI"))


@pytest.mark.parametrize(
    ("error", "want"),
    [
        (E_SPECS, "spec.mpiReplicaSpecs: Required value: must have replica specs"),
        (
            E_WORKERS,
            "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1",
        ),
        (E_NAME, f'metadata.name: Invalid value: "1-foo": {BAD_LABEL} "1-foo-worker-0": {DNS1035}'),
        (E_IMPL, f'spec.mpiImplementation: Unsupported value: "Foo": {IMPLEMENTATIONS}'),
        (
            FieldError("spec.runPolicy.managedBy", "NotSupported", "", 'a"b', ("x",)),
            'spec.runPolicy.managedBy: Unsupported value: "a\\"b": supported values: "x"',
        ),
    ],
    ids=["required", "invalid int", "invalid string", "not supported", "not supported, quote escaped"],
)
def test_field_error_str(error: FieldError, want: str) -> None:
    assert str(error) == want


@pytest.mark.parametrize(
    ("errors", "want"),
    [
        (
            [E_WORKERS],
            "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1",
        ),
        (
            [E_SPECS, E_IMPL],
            "[spec.mpiReplicaSpecs: Required value: must have replica specs, "
            f'spec.mpiImplementation: Unsupported value: "Foo": {IMPLEMENTATIONS}]',
        ),
        ([E_SPECS, E_SPECS], "spec.mpiReplicaSpecs: Required value: must have replica specs"),
        (
            [E_SPECS, E_IMPL, E_SPECS],
            "[spec.mpiReplicaSpecs: Required value: must have replica specs, "
            f'spec.mpiImplementation: Unsupported value: "Foo": {IMPLEMENTATIONS}]',
        ),
        (
            _validate(UPSTREAM_CASES[4][1], True),
            f'[metadata.name: Invalid value: "{LONG_NAME}": '
            f'{BAD_LABEL} "{LONG_NAME}-worker-999": {TOO_LONG}, '
            f'spec.runPolicy.cleanPodPolicy: Unsupported value: "unknown": {CLEAN_POLICIES}, '
            "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0, "
            "spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0, "
            "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0, "
            f'spec.runPolicy.managedBy: Unsupported value: "invalid.com/controller": {MANAGERS}, '
            f'spec.mpiImplementation: Unsupported value: "Unknown": {IMPLEMENTATIONS}]',
        ),
    ],
    ids=[
        "one error alone",
        "two errors bracketed",
        "duplicates collapse to one",
        "duplicates dropped",
        "invalid fields",
    ],
)
def test_aggregate(errors: list[FieldError], want: str) -> None:
    assert aggregate(errors) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("foo-worker-0", [], id="valid"),
        pytest.param("a" * 63, [], id="63 characters"),
        pytest.param("a" * 64, [TOO_LONG], id="64 characters"),
        pytest.param("", [DNS1035], id="empty"),
        pytest.param("1-foo", [DNS1035], id="starts with a digit"),
        pytest.param("foo-", [DNS1035], id="ends with a dash"),
        pytest.param("Foo", [DNS1035], id="upper case"),
        pytest.param("-" + "a" * 63, [TOO_LONG, DNS1035], id="too long and starts with a dash"),
        pytest.param("abc\n", [DNS1035], id="trailing newline"),
    ],
)
def test_dns1035_label_errors(value: str, want: list[str]) -> None:
    assert dns1035_label_errors(value) == want


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("topology.kubernetes.io/zone", True),
        ("rack", True),
        ("example.com/Rack_1.a", True),
        ("example.com/" + "r" * 63, True),
        ("example.com/" + "r" * 64, False),
        ("Example.com/rack", False),
        ("a/b/c", False),
        ("example.com/", False),
        ("-rack", False),
        ("rack zone", False),
    ],
)
def test_gang_topology_key_is_a_label_key(key: str, valid: bool) -> None:
    """Ours: the annotation's value becomes a PodGroup's topology key, which the apiserver checks so."""
    job = with_defaults(
        MPIJob.model_validate(
            {
                "metadata": {"name": "pi", "annotations": {"mpi-operator-hook/gang-topology-key": key}},
                "spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {}}}}},
            }
        )
    )
    fields = [e.field for e in validate(job)]
    assert ("metadata.annotations[mpi-operator-hook/gang-topology-key]" not in fields) == valid
