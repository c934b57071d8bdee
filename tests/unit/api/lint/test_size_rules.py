"""What the apiserver refuses in any object's labels and annotations, as lint reports it before apply.

The tables are k8s.io/apimachinery's own cases (util/validation's IsQualifiedName and IsValidLabelValue
tests, api/validation's annotation size), so lint and the apiserver agree on every one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.api.lint import IGNORE_ANNOTATION, Rule, Severity, lint_manifest
from app.api.lint.metadata_rules import (
    ANNOTATIONS_MAX_BYTES,
    annotations_bytes,
    label_value_errors,
    qualified_name_errors,
)
from tests.packaging.test_crd import pi
from tests.unit.cli.test_cli import mpijob

GOOD_KEYS = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes",
    "now.with.dots/now-with-dashes",
    "now-with.dashes-and.dots/now_with.dashes-and_dots",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo",
    "a" * 63,
    "a" * 253 + "/" + "b" * 63,
]
BAD_KEYS = {
    "nospecialchars%^=@": "name part must consist of",
    "cantendwithadash-": "name part must consist of",
    "-cantstartwithadash-": "name part must consist of",
    "only/one/slash": "a qualified name must consist of",
    "Example.com/abc": "prefix part a lowercase RFC 1123 subdomain",
    "example_com/abc": "prefix part a lowercase RFC 1123 subdomain",
    "example.com/": "name part must be non-empty",
    "/simple": "prefix part must be non-empty",
    "a" * 64: "name part must be no more than 63 characters",
    "a" * 254 + "/abc": "prefix part must be no more than 253 characters",
}
GOOD_VALUES = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "", "a" * 63]
GOOD_VALUES += ["Uppercase_Is_OK_123", "with.dots_and-dashes"]
BAD_VALUES = {
    "nospecialchars%^=@": "a valid label must be an empty string",
    "Tama-nui-te-rā.is_the_Māori_sun": "a valid label must be an empty string",
    "\\backslashes\\are\\bad": "a valid label must be an empty string",
    "-starts-with-dash": "a valid label must be an empty string",
    "ends-with-dash-": "a valid label must be an empty string",
    ".starts.with.dot": "a valid label must be an empty string",
    "ends.with.dot.": "a valid label must be an empty string",
    "a" * 64: "must be no more than 63 characters",
}


@pytest.mark.parametrize("key", GOOD_KEYS, ids=lambda key: key[:40])
def test_a_qualified_name_passes(key: str) -> None:
    assert qualified_name_errors(key) == []


@pytest.mark.parametrize(("key", "problem"), BAD_KEYS.items(), ids=lambda item: str(item)[:40])
def test_a_bad_key_is_refused_with_the_apiservers_reason(key: str, problem: str) -> None:
    errors = qualified_name_errors(key)
    assert errors and errors[0].startswith(problem), errors


@pytest.mark.parametrize("value", GOOD_VALUES, ids=lambda value: value[:40] or "empty")
def test_a_label_value_passes(value: str) -> None:
    assert label_value_errors(value) == []


@pytest.mark.parametrize(("value", "problem"), BAD_VALUES.items(), ids=lambda item: str(item)[:40])
def test_a_bad_label_value_is_refused_with_the_apiservers_reason(value: str, problem: str) -> None:
    errors = label_value_errors(value)
    assert errors and errors[0].startswith(problem), errors


def _with_metadata(**metadata: object) -> dict[str, object]:
    job = pi()
    job["metadata"] = {**job["metadata"], **metadata}  # type: ignore[dict-item]
    return job


def _rules(job: dict[str, object]) -> list[str]:
    return [f.rule for f in lint_manifest(job)]


# (annotations, refused): the limit counts keys and values together, in UTF-8 bytes, all of them.
SIZES = {
    "exactly the limit": ({"n": "x" * (ANNOTATIONS_MAX_BYTES - 1)}, False),
    "one byte over": ({"n": "x" * ANNOTATIONS_MAX_BYTES}, True),
    "the key counts": ({"n" * 2: "x" * (ANNOTATIONS_MAX_BYTES - 1)}, True),
    "two halves together": (
        {"a": "x" * (ANNOTATIONS_MAX_BYTES // 2), "b": "x" * (ANNOTATIONS_MAX_BYTES // 2)},
        True,
    ),
    "bytes, not characters": ({"n": "ā" * (ANNOTATIONS_MAX_BYTES // 2)}, True),  # 2 bytes each in UTF-8
    "characters that fit as bytes": ({"n": "ā" * (ANNOTATIONS_MAX_BYTES // 2 - 1)}, False),
}


@pytest.mark.parametrize(("annotations", "refused"), SIZES.values(), ids=SIZES.keys())
def test_annotations_over_256_kib_are_an_error(annotations: dict[str, str], refused: bool) -> None:
    assert (annotations_bytes(annotations) > ANNOTATIONS_MAX_BYTES) is refused
    findings = [f for f in lint_manifest(_with_metadata(annotations=annotations)) if f.rule != Rule.INVALID]
    assert [f.rule for f in findings] == ([Rule.ANNOTATIONS_TOO_LARGE] if refused else [])
    for finding in findings:
        assert finding.severity is Severity.ERROR and finding.path == "metadata.annotations"
        assert f"at most {ANNOTATIONS_MAX_BYTES} bytes" in finding.message
        assert len(finding.message) < 300  # names the largest key, never prints the value


def test_annotation_keys_are_checked_in_lower_case_and_label_keys_as_written() -> None:
    assert _rules(_with_metadata(annotations={"Example.com/Note": "x"})) == []
    assert _rules(_with_metadata(labels={"Example.com/team": "x"})) == [Rule.INVALID_LABEL]
    assert _rules(_with_metadata(annotations={"only/one/slash": "x"})) == [Rule.INVALID_ANNOTATION_KEY]


def test_a_label_finding_names_the_key_or_value_the_apiserver_names() -> None:
    [key, value] = lint_manifest(_with_metadata(labels={"bad key": "v" * 64}))
    assert key.message.startswith('Invalid value: "bad key": name part must consist of'), key.message
    assert value.message == f'Invalid value: "{"v" * 64}": must be no more than 63 characters'
    assert (key.path, value.path) == ("metadata.labels", "metadata.labels")


def test_the_ignore_annotation_cannot_silence_them() -> None:
    job = _with_metadata(labels={"team": "v" * 64}, annotations={IGNORE_ANNOTATION: "invalid-label"})
    assert _rules(job) == [Rule.INVALID_LABEL]


def test_the_name_is_left_to_the_rules_that_already_hold_it() -> None:
    """A name the apiserver refuses (over 253 characters, or not a DNS subdomain) is already refused by
    ``crd-rejected`` (a DNS-1035 label) or ``name-too-long``: one finding each, not two."""
    assert _rules(_with_metadata(name="a" * 254)) == [Rule.NAME_TOO_LONG]
    assert _rules(_with_metadata(name="Pi")) == [Rule.CRD_REJECTED]


def test_the_cli_reports_the_line_of_the_annotations(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    big = "x" * ANNOTATIONS_MAX_BYTES
    head = "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: pi\n"
    manifest.write_text(f"{head}  annotations:\n    note: {big}\n")
    done = mpijob("lint", "--fail-on", "error", str(manifest))
    assert done.returncode == 1, done.stderr
    assert f"{manifest}:5: error [annotations-too-large] metadata.annotations (MPIJob pi)" in done.stdout
