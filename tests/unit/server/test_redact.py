"""What a record redacts, by what a value is (``app.server.redact``): Secrets by kind in any case, by
position and by shape; env values by a credential-like name; passwords in URLs; and the README's list of
names is the code's."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from app.server.redact import CREDENTIAL_FRAGMENTS, CREDENTIAL_WORDS, REDACTED, credential_name, redact
from tests.support.paths import ROOT

VALUE = "s3cr3t-value"


@pytest.mark.parametrize(
    ("obj", "redacted"),
    [
        ({"kind": "Secret", "data": {"a": VALUE}}, True),
        ({"kind": "secret", "data": {"a": VALUE}}, True),
        ({"kind": " SECRET ", "stringData": {"a": VALUE}}, True),
        ({"data": {"a": VALUE}}, True),  # no kind, a map of strings
        ({"stringData": {"a": VALUE}}, True),  # only Secrets have stringData
        ({"kind": None, "data": {"a": VALUE}}, True),
        ({"kind": ["Secret"], "data": {"a": VALUE}}, True),  # a kind that is no string says nothing
        ({"data": VALUE, "type": "Opaque"}, True),
        ({"data": {"a": VALUE, "n": 1}, "type": "kubernetes.io/tls"}, True),
        ({"data": [VALUE], "type": "example.com/custom"}, True),
        ({"kind": "Secret", "data": VALUE}, True),  # not a map: replaced whole
        ({"kind": "Secret", "data": {"a": {"nested": VALUE}}}, True),
        ({"kind": "ConfigMap", "data": {"a": VALUE}}, False),  # says what it is: not a Secret
        ({"data": {"a": VALUE, "n": 1}}, False),  # no kind, no type, not a map of strings
        ({"data": VALUE}, False),
        ({"data": VALUE, "type": "plain"}, False),
    ],
)
def test_a_secret_is_known_by_its_kind_in_any_case_or_by_its_shape(
    obj: dict[str, Any], redacted: bool
) -> None:
    out = json.dumps(redact({"children": [obj]}))
    assert (VALUE not in out) is redacted
    assert (REDACTED in out) is redacted


def test_a_secret_keeps_its_keys_and_everything_but_its_values() -> None:
    secret = {"data": {"a": VALUE, "b": VALUE}, "stringData": {"c": VALUE}, "type": "Opaque", "x": None}
    assert redact(secret) == {
        "data": {"a": REDACTED, "b": REDACTED},
        "stringData": {"c": REDACTED},
        "type": "Opaque",
        "x": None,
    }
    assert redact({"kind": "Secret", "data": None}) == {"kind": "Secret", "data": None}


def test_every_object_of_a_secret_children_group_is_a_secret_whatever_its_kind() -> None:
    request = {"children": {"secret.v1": {"ns/s": {"kind": "ConfigMap", "data": {"a": 1, "b": VALUE}}}}}
    assert redact(request)["children"]["secret.v1"]["ns/s"]["data"] == {"a": REDACTED, "b": REDACTED}
    others = {"children": {"ConfigMap.v1": {"ns/c": {"kind": "ConfigMap", "data": {"hostfile": "w-0"}}}}}
    assert redact(others) == others


REDACTED_NAMES = [
    "SSH_KEY", "DB_PASS", "MY_PASS", "BEARER", "GITHUB_PAT", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY",
    "db_password", "PASSWD", "PASSPHRASE", "api-key", "APIKEY", "githubPat", "PAT_FILE", "x.pat",
    "SENTRY_DSN", "DB_PW", "SESSION_ID", "COOKIE", "TLS_CERT", "PRIVATE", "OAUTH_CLIENT", "AUTHORIZATION",
    "JWT", "HMAC_SALT", "AZURE_STORAGE_CONNECTION_STRING", "REQUEST_SIGNATURE",
    "GOOGLE_APPLICATION_CREDENTIALS", "TOTP_OTP", "AWS_ACCESS_KEY_ID",
    "MONKEY", "AUTHOR", "BYPASS_CACHE", "OLDPWD",  # false positives, on purpose: errs on redacting
]  # fmt: skip
KEPT_NAMES = [
    "PATH", "LD_LIBRARY_PATH", "PATTERN", "PATCH_LEVEL", "SPATIAL", "DSNAME", "MODE", "REPLICAS",
    "OMPI_MCA_plm_rsh_args", "PRTE_MCA_plm_ssh_args", "K_MPI_JOB_ROLE", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES", "OMP_NUM_THREADS", "NCCL_DEBUG", "HOSTNAME", "PYTHONUNBUFFERED", "HOME",
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "redacted"), [(n, True) for n in REDACTED_NAMES] + [(n, False) for n in KEPT_NAMES]
)
def test_an_env_value_is_redacted_by_its_name(name: str, redacted: bool) -> None:
    assert credential_name(name) is redacted
    env = [{"name": name, "value": VALUE}]
    assert redact({"env": env})["env"][0]["value"] == (REDACTED if redacted else VALUE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgres://app:hunter2@db:5432/x", f"postgres://app:{REDACTED}@db:5432/x"),
        ("amqp://:p%40ss@mq", f"amqp://:{REDACTED}@mq"),
        ("--url=https://u:pw@host/path and more", f"--url=https://u:{REDACTED}@host/path and more"),
        ("https://user@host/x", "https://user@host/x"),  # no password
        ("https://host:8080/a@b", "https://host:8080/a@b"),  # a port and an @ in the path
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
    ],
)
def test_a_password_in_a_url_is_redacted_wherever_it_is(text: str, expected: str) -> None:
    assert redact({"env": [{"name": "DATABASE_URL", "value": text}], "args": [text]}) == {
        "env": [{"name": "DATABASE_URL", "value": expected}],
        "args": [expected],
    }


def test_an_embedded_copy_too_deep_to_decode_is_replaced_whole() -> None:
    deep = "[" * 500 + "]" * 500
    annotations = {"metacontroller.k8s.io/last-applied-configuration": deep}
    out = redact({"metadata": {"annotations": annotations}})
    assert out["metadata"]["annotations"] == {"metacontroller.k8s.io/last-applied-configuration": REDACTED}


def _listed(heading: str) -> set[str]:
    """The backticked words of the README's list item that starts with ``heading``, after its examples
    (in parentheses before the colon that starts the list)."""
    text = (ROOT / "examples" / "requests" / "README.md").read_text()
    item = re.search(rf"^- {re.escape(heading)}(.*?)(?=^- |^$)", text, re.MULTILINE | re.DOTALL)
    assert item, f"examples/requests/README.md has no item {heading!r}"
    return set(re.findall(r"`([A-Z_]+)`", item.group(1).split("):", 1)[1]))


def test_the_readme_lists_the_credential_names_the_code_redacts() -> None:
    assert _listed("**Env values by name, anywhere in it**") == set(CREDENTIAL_FRAGMENTS)
    assert _listed("**Env values by name, as a whole word**") == set(CREDENTIAL_WORDS)
