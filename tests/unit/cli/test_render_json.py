"""``mpijob render -o json``: the same objects as the YAML, as the one ``List`` that ``kubectl get -o json``
prints (the schema in docs/user-guide.md), so ``jq`` and ``kubectl apply -f -`` read it; what the hook would
say about a job stays on stderr, as with YAML.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.kube_schema import schema_errors
from tests.support.paths import ROOT
from tests.unit.cli.test_cli import GPU, INTEL, PI, mpijob, objects
from tests.unit.cli.test_render_warnings import LOWERCASE_WORKER, error_lines

GUIDE = ROOT / "docs" / "user-guide.md"
SCHEMAS = "### `render` and `replay` as JSON"


def documented(index: int) -> Any:
    """The ``index``-th JSON example of the guide's section on render's and replay's JSON."""
    text = GUIDE.read_text()
    section = text[text.index(SCHEMAS) :].split("\n## ", 1)[0]
    return json.loads(re.findall(r"^```json\n(.*?)^```$", section, re.M | re.S)[index])


def as_json(*args: str, stdin: str | None = None) -> tuple[Any, Any]:
    done = mpijob("render", "-o", "json", *args, stdin=stdin)
    return done, json.loads(done.stdout)


def test_the_objects_are_one_list_as_kubectl_prints_it() -> None:
    done, printed = as_json(str(GPU))
    assert done.returncode == 0, done.stderr
    assert set(printed) == {"apiVersion", "kind", "metadata", "items"}
    assert (printed["apiVersion"], printed["kind"]) == ("v1", "List")
    assert printed["metadata"] == {"resourceVersion": ""}
    assert printed["items"] == objects(mpijob("render", str(GPU)))  # the YAML's objects, in its order
    assert all(schema_errors(item) == [] for item in printed["items"])
    secret = next(item for item in printed["items"] if item["kind"] == "Secret")
    assert set(secret["data"].values()) == {"<redacted>"}


def test_every_job_of_a_file_is_in_the_one_list() -> None:
    text = PI.read_text() + "---\n" + PI.read_text().replace("name: pi\n", "name: pi2\n", 1)
    _, printed = as_json("-", stdin=text)
    launchers = [item["metadata"]["name"] for item in printed["items"] if item["kind"] == "Job"]
    assert launchers == ["pi-launcher", "pi2-launcher"]


def test_warnings_stay_on_stderr() -> None:
    done, printed = as_json("-", stdin=LOWERCASE_WORKER)
    assert done.returncode == 0
    assert [item["kind"] for item in printed["items"]] == ["Service", "ConfigMap", "Secret", "Job"]
    [line] = error_lines(done.stderr)
    assert "the hook would set Warning" in line
    _, waiting = as_json(str(INTEL))
    assert "Job" not in {item["kind"] for item in waiting["items"]}


def test_an_invalid_job_is_an_empty_list_and_exit_1() -> None:
    done, printed = as_json("-", stdin=PI.read_text().replace("replicas: 2", "replicas: 0"))
    assert done.returncode == 1 and printed["items"] == []
    assert "is invalid, nothing would be created" in done.stderr


def test_status_comments_cannot_be_json() -> None:
    done = mpijob("render", "-o", "json", "--status", str(PI))
    assert (done.returncode, done.stdout) == (2, "")
    [line] = error_lines(done.stderr)
    assert "--status" in line


def test_yaml_is_the_default_and_may_be_asked_for() -> None:
    assert mpijob("render", "-o", "yaml", str(PI)).stdout == mpijob("render", str(PI)).stdout


def test_the_list_is_as_the_guide_shows_it() -> None:
    shown = documented(0)
    _, printed = as_json(str(PI))
    assert set(shown) == set(printed)
    assert {k: v for k, v in shown.items() if k != "items"} == {
        k: v for k, v in printed.items() if k != "items"
    }
    names = {(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in printed["items"]}
    assert {(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in shown["items"]} <= names
