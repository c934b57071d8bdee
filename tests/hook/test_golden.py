"""Golden files: recorded-style sync requests → the exact responses, one folder per scenario.

Regenerate with ``pytest tests/hook/test_golden.py --update-golden`` and review the diff: every change to a
response is a change in what the hook tells Metacontroller to create, keep or delete. A case that repeats
another is stored as a patch onto it (tests/support/golden_store.py); every file is read, and compared, whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.config import SyncConfig
from app.core.sync import sync
from app.kube.keys import SeededKeys
from app.kube.request import decode_request
from app.settings import Settings
from tests.support import golden_store
from tests.support.golden_cases import (
    CASES,
    NOW,
    SEED,
    all_cases,
    case_meta,
    case_path,
    dump,
    request_path,
    response_path,
    run,
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_request_files_match_builders(name: str, update_golden: bool) -> None:
    path = request_path(name)
    built = CASES[name].build()
    if update_golden:
        golden_store.write(path, built)
    stale = f"{golden_store.stored_as(path)} is stale: run pytest --update-golden and review the diff"
    assert golden_store.text(path) == dump(built), stale


@pytest.mark.parametrize(("name", "request_file", "settings"), all_cases(), ids=[c[0] for c in all_cases()])
def test_golden_response(
    name: str, request_file: Path, settings: dict[str, str], update_golden: bool
) -> None:
    response = run(golden_store.read_bytes(request_file), Settings(**settings))
    path = response_path(name)
    if update_golden:
        golden_store.write(path, response)
    expected = golden_store.load(path)
    where = golden_store.stored_as(path)
    assert response == expected, f"{name}: response differs from {where}; run --update-golden and review"


@pytest.mark.parametrize(("name", "request_file", "settings"), all_cases(), ids=[c[0] for c in all_cases()])
def test_case_files_say_the_settings_of_the_answer(
    name: str, request_file: Path, settings: dict[str, str], update_golden: bool
) -> None:
    """Each folder's ``case.json`` names the settings its ``response.json`` was made with: the same request
    sent to a hook with other settings (the defaults, say) is answered differently."""
    path = case_path(name)
    expected = dump(case_meta(name, request_file, settings))
    if update_golden:
        path.write_text(expected)
    assert path.read_text() == expected, f"{path} is stale: run pytest --update-golden and review the diff"


def test_a_case_file_says_what_a_default_hook_would_not_answer() -> None:
    """The settings in case.json matter: volcano-podgroup-not-declared's request gets another answer from a
    hook at the defaults, and the recorded one from a hook with the file's settings."""
    name = "volcano-podgroup-not-declared"
    request = golden_store.read_bytes(request_path(name))
    recorded = golden_store.load(response_path(name))
    said = json.loads(case_path(name).read_text())["settings"]
    assert said == {"MPI_OPERATOR_GANG_SCHEDULING": "volcano"}
    fields = {variable.removeprefix("MPI_OPERATOR_").lower(): value for variable, value in said.items()}
    assert run(request, Settings(**fields)) == recorded
    assert run(request) != recorded


@pytest.mark.parametrize(
    "name",
    [
        "running-steady",
        "hook-v1-keys-no-customize",
        "managed-by-multikueue",
        "scheduler-plugins-running-steady",
    ],
)
def test_steady_state_writes_nothing(name: str) -> None:
    """Once a job is steady, the status we return equals the stored one: no write, no sync loop."""
    request = golden_store.load(request_path(name))
    response = run(request, Settings(**CASES[name].settings))
    assert response["status"] == request["parent"]["status"]
    assert response["resyncAfterSeconds"] == 0


def test_response_is_stable_across_hook_versions() -> None:
    """Hook v1 keys children by name, v2 by namespace/name: the answer must not depend on it."""
    v1 = golden_store.load(request_path("hook-v1-keys-no-customize"))
    v2 = json.loads(json.dumps(v1))
    for kind, objects in v1["children"].items():
        v2["children"][kind] = {f"default/{name}": obj for name, obj in objects.items()}
    assert run(v1) == run(v2)


@pytest.mark.parametrize("name", ["openmpi-first-sync", "invalid-new-job", "managed-by-multikueue"])
def test_result_names_its_job_for_the_logs(name: str) -> None:
    request = golden_store.read_bytes(request_path(name))
    result = sync(decode_request(request), now=NOW, keys=SeededKeys(SEED), config=SyncConfig())
    assert (result.namespace, result.name) == ("default", "pi")
