"""Golden files that repeat another case are stored as a JSON Patch onto it (tests/support/golden_store.py).

The tree must be exactly as ``--update-golden`` leaves it (each shared file patched onto its final base, and
kept whole where that is smaller), and reading a patched file must fail loudly rather than guess: a missing
base, a base that changed since the patch was made, or an operation that does not apply is a failed test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import golden_store, json_patch
from tests.support.golden_store import BASES, GoldenError
from tests.support.paths import GOLDEN

JOB = {"kind": "Job", "metadata": {"name": "pi-launcher"}, "spec": {"parallelism": 1}}


CONTAINERS = [
    {"name": "worker", "image": "mpioperator/mpi-pi:openmpi", "env": [{"name": f"E{i}"} for i in range(9)]}
]


def pod(name: str, scheduler: str = "default-scheduler") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, "containers": CONTAINERS},
    }


# --- the tree ---------------------------------------------------------------------------------------------


def test_shared_goldens_are_stored_as_update_golden_leaves_them() -> None:
    """Every patch is the one ``compact`` makes now (against its base's current content), and every whole
    file of a shared case is one whose patch would not be smaller."""
    assert sorted(str(p.relative_to(GOLDEN)) for p in golden_store.plan()) == []


def test_every_base_is_a_case_folder_and_none_goes_round_in_a_circle() -> None:
    for folder in BASES:
        seen = [folder]
        while seen[-1] in BASES:
            seen.append(BASES[seen[-1]])
            assert seen[-1] not in seen[:-1], f"bases go round: {seen}"
        assert all((GOLDEN / f).is_dir() for f in seen), seen


def test_every_shared_case_is_patched_and_every_patch_is_a_shared_case() -> None:
    """A base that saves a case nothing is not worth naming; a patch outside ``BASES`` is not the tool's."""
    patched = {str(golden_store.whole_path(p).parent.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.patch.*")}
    assert sorted(set(BASES) - patched) == []
    assert sorted(patched - set(BASES)) == []


# --- reading: loud -----------------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small golden tree: ``plain`` whole, ``gang`` the same children under another scheduler."""
    tmp_path = tmp_path.resolve()
    monkeypatch.setattr(golden_store, "GOLDEN", tmp_path)
    golden_store.write(tmp_path / "plain" / "response.json", {"children": [pod("w-0"), pod("w-1"), JOB]})
    gang = {
        "children": [
            pod("w-0", "volcano"),
            pod("w-1", "volcano"),
            JOB,
            {"kind": "PodGroup", "metadata": {"name": "pi"}},
        ]
    }
    golden_store.write(tmp_path / "gang" / "response.json", gang)
    golden_store.compact(tmp_path, {"gang": "plain"})
    return tmp_path


def stored_patch(tree: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((tree / "gang" / "response.patch.json").read_text())
    return loaded


def test_a_patched_file_names_its_base_and_reads_whole(tree: Path) -> None:
    assert not (tree / "gang" / "response.json").exists()
    patch = stored_patch(tree)
    assert patch["base"] == "../plain/response.json"
    assert [(op["op"], op["path"]) for op in patch["patch"]] == [
        ("replace", "/children/0/spec/schedulerName"),
        ("replace", "/children/1/spec/schedulerName"),
        ("add", "/children/3"),
    ]
    assert golden_store.load(tree / "gang" / "response.json")["children"][1] == pod("w-1", "volcano")


def test_a_missing_base_fails_loudly(tree: Path) -> None:
    (tree / "plain" / "response.json").unlink()
    with pytest.raises(
        GoldenError, match=r"gang/response.patch.json: its base \.\./plain/response.json is missing"
    ):
        golden_store.load(tree / "gang" / "response.json")


def test_a_base_that_changed_since_the_patch_was_made_fails_loudly(tree: Path) -> None:
    plain = tree / "plain" / "response.json"
    plain.write_text(plain.read_text().replace("pi-launcher", "pi-launcher-2"))
    with pytest.raises(GoldenError, match="changed since the patch was made: run --update-golden"):
        golden_store.load(tree / "gang" / "response.json")


def test_a_patch_that_does_not_apply_fails_loudly(tree: Path) -> None:
    patch = stored_patch(tree)
    patch["patch"].append({"op": "remove", "path": "/children/0/spec/nodeName"})
    (tree / "gang" / "response.patch.json").write_text(json.dumps(patch))
    with pytest.raises(GoldenError, match=r"does not apply .* /children/0/spec/nodeName does not exist"):
        golden_store.load(tree / "gang" / "response.json")


def test_a_file_stored_twice_or_not_at_all_fails_loudly(tree: Path) -> None:
    with pytest.raises(GoldenError, match="missing: run pytest --update-golden"):
        golden_store.load(tree / "gang" / "request.json")
    (tree / "gang" / "response.json").write_text("{}")
    with pytest.raises(GoldenError, match="stored twice"):
        golden_store.load(tree / "gang" / "response.json")


def test_a_base_outside_the_tree_is_refused(tree: Path) -> None:
    patch = stored_patch(tree)
    patch["base"] = "../../elsewhere/response.json"
    (tree / "gang" / "response.patch.json").write_text(json.dumps(patch))
    with pytest.raises(GoldenError, match="is missing"):
        golden_store.load(tree / "gang" / "response.json")


# --- writing: --update-golden -----------------------------------------------------------------------------


def test_update_makes_files_whole_then_shares_them_again_in_any_order(tree: Path) -> None:
    before = (tree / "gang" / "response.patch.json").read_text()
    golden_store.expand(tree)
    assert sorted(p.name for p in tree.rglob("*.json")) == ["response.json", "response.json"]
    # The base is rewritten after its patch was expanded: the patch is made against the new base.
    plain = golden_store.load(tree / "plain" / "response.json")
    plain["children"][2]["spec"]["parallelism"] = 2
    golden_store.write(tree / "plain" / "response.json", plain)
    golden_store.compact(tree, {"gang": "plain"})
    after = stored_patch(tree)
    assert (tree / "gang" / "response.patch.json").read_text() != before
    assert golden_store.load(tree / "gang" / "response.json")["children"][2] == JOB
    assert {"op": "replace", "path": "/children/2/spec/parallelism", "value": 1} in after["patch"]
    assert golden_store.plan(tree, {"gang": "plain"}) == {}


def test_a_patch_larger_than_its_file_is_not_kept(tree: Path) -> None:
    golden_store.write(tree / "other" / "response.json", {"x": 1})
    golden_store.compact(tree, {"gang": "plain", "other": "plain"})
    assert (tree / "other" / "response.json").is_file()
    assert not (tree / "other" / "response.patch.json").exists()
    # And a case no longer shared becomes whole again.
    golden_store.compact(tree, {})
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*.patch.*")) == []
    assert golden_store.load(tree / "gang" / "response.json")["children"][0] == pod("w-0", "volcano")


# --- JSON Patch: strict to apply, exact to make -------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "error"),
    [
        ({"op": "add", "path": "/a", "value": 2}, "/a exists already"),
        ({"op": "remove", "path": "/b"}, "/b does not exist"),
        ({"op": "replace", "path": "/list/3", "value": 0}, "index 3 is past the end"),
        ({"op": "add", "path": "/list/01", "value": 0}, "not a list index"),
        ({"op": "move", "from": "/list", "path": "/list/0"}, "into itself"),
        ({"op": "test", "path": "/a", "value": True}, "the value differs"),
        ({"op": "merge", "path": "/a"}, "not an operation"),
        ({"op": "add", "path": "a", "value": 1}, "not a JSON pointer"),
    ],
)
def test_apply_refuses_what_the_rfc_would_let_pass_or_guess(operation: dict[str, Any], error: str) -> None:
    with pytest.raises(json_patch.PatchError, match=error):
        json_patch.apply({"a": 1, "list": [1, 2]}, [operation])


def test_diff_keeps_types_apart_and_aligns_lists_by_what_their_items_are() -> None:
    assert json_patch.diff({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]
    assert json_patch.diff({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    group = {"kind": "PodGroup", "metadata": {"name": "pi"}}
    assert json_patch.diff([pod("w-0"), JOB], [pod("w-0"), group, JOB]) == [
        {"op": "add", "path": "/1", "value": group}
    ]
    # Hook v1 keys children by name, v2 by namespace/name: one move each.
    assert json_patch.diff({"default/w-0": pod("w-0")}, {"w-0": pod("w-0")}) == [
        {"op": "move", "from": "/default~1w-0", "path": "/w-0"}
    ]
