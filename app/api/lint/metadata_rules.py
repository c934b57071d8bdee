"""The lint rules for what the apiserver refuses in any object's metadata, whatever its kind: labels and
annotations (k8s.io/apimachinery's ValidateLabels and ValidateAnnotations, run on every create and update).

The CRD's schema cannot say these (they are the apiserver's own checks), the hook's validation never sees a
job they refuse, and the name needs no rule here: ``crd-rejected`` and ``name-too-long`` already hold it to
a DNS-1035 label, stricter than the DNS-1123 subdomain the apiserver asks of a custom resource's name.
Messages are the apiserver's, as ``kubectl apply`` prints them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping

from app.api.lint.catalog import Rule
from app.api.lint.findings import Finding, Severity
from app.api.types import MPIJob

# apimachinery's TotalAnnotationSizeLimitB: keys and values together, in bytes (UTF-8, as Go's len counts).
ANNOTATIONS_MAX_BYTES = 256 * 1024
# A qualified name's name part, and a label value (IsValidLabelValue): at most this many characters.
NAME_PART_MAX = 63
LABEL_VALUE_MAX = 63
PREFIX_MAX = 253  # a DNS-1123 subdomain

_NAME_PART = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_PART_RE = re.compile(_NAME_PART)
_LABEL_VALUE_RE = re.compile(f"({_NAME_PART})?")
_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN)

_NAME_PART_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric"
    f" character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_NAME_PART}')"
)
_QUALIFIED_NAME_RULE = (
    f"a qualified name {_NAME_PART_RULE} with an optional DNS subdomain prefix and '/'"
    " (e.g. 'example.com/MyName')"
)
_SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must"
    " start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is"
    f" '{_SUBDOMAIN}')"
)
_LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must"
    " start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used"
    f" for validation is '({_NAME_PART})?')"
)
_KEY_FIX = "use <prefix>/<name>: an optional DNS subdomain prefix, then at most 63 of [A-Za-z0-9-_.]"


def qualified_name_errors(key: str) -> list[str]:
    """What apimachinery's IsQualifiedName says of ``key`` (a label or annotation key): nothing if valid."""
    parts = key.split("/")
    if len(parts) > 2:
        return [_QUALIFIED_NAME_RULE]
    errors: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > PREFIX_MAX:
                errors.append(f"prefix part must be no more than {PREFIX_MAX} characters")
            if not _SUBDOMAIN_RE.fullmatch(prefix):
                errors.append(f"prefix part {_SUBDOMAIN_RULE}")
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > NAME_PART_MAX:
        errors.append(f"name part must be no more than {NAME_PART_MAX} characters")
    if name and not _NAME_PART_RE.fullmatch(name):
        errors.append(f"name part {_NAME_PART_RULE}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """What apimachinery's IsValidLabelValue says of ``value``: nothing if valid (empty is valid)."""
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(_LABEL_VALUE_RULE)
    return errors


def annotations_bytes(annotations: Mapping[str, str]) -> int:
    """The size the apiserver holds to ``ANNOTATIONS_MAX_BYTES``: every key and value, in UTF-8 bytes."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())


def rejections(job: MPIJob) -> Iterator[Finding]:
    """The apiserver's refusals of ``job.metadata``: labels first, then annotations (as it checks them)."""
    labels = job.metadata.labels
    for key, value in labels.items():
        for problem in qualified_name_errors(key):
            yield _invalid(Rule.INVALID_LABEL, "metadata.labels", key, problem, _KEY_FIX)
        for problem in label_value_errors(value):
            fix = f"shorten the value of label {_quoted(key)} to at most {LABEL_VALUE_MAX} of [A-Za-z0-9-_.]"
            yield _invalid(Rule.INVALID_LABEL, "metadata.labels", value, problem, fix)
    annotations = job.metadata.annotations
    for key in annotations:
        # The apiserver checks annotation keys in lower case: "Example.com/Note" is accepted.
        for problem in qualified_name_errors(key.lower()):
            yield _invalid(Rule.INVALID_ANNOTATION_KEY, "metadata.annotations", key, problem, _KEY_FIX)
    size = annotations_bytes(annotations)
    if size > ANNOTATIONS_MAX_BYTES:
        largest = max(annotations, key=lambda k: len(k.encode()) + len(annotations[k].encode()))
        yield Finding(
            Rule.ANNOTATIONS_TOO_LARGE,
            Severity.ERROR,
            "metadata.annotations",
            f"Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes (the keys and values hold {size};"
            f" the largest is {_quoted(largest)})",
            "move large data out of annotations (a ConfigMap the pods mount, or the image)",
        )


def _invalid(rule: Rule, path: str, value: str, problem: str, fix: str) -> Finding:
    return Finding(rule, Severity.ERROR, path, f"Invalid value: {_quoted(value)}: {problem}", fix)


def _quoted(text: str) -> str:
    """A user's string in a message, as Go's %q would show it, cut short: a value may be kilobytes."""
    return json.dumps(text if len(text) <= 80 else text[:77] + "...", ensure_ascii=False)
