"""What ``MPI_OPERATOR_RECORD_DIR`` records must not hold, judged by what a value is, not where it sits.

A request refused with 400 is as hostile as it gets: a Secret may come without ``kind`` or with
``kind: secret``, an env var may be called ``GITHUB_PAT``. So:

- a **Secret** is an object whose ``kind`` is Secret in any case, any object in a Metacontroller children
  group ``Secret.<version>``, or an object without a string ``kind`` shaped like one (``secret_shaped``);
  its ``data`` and ``stringData`` values are replaced (keys kept; a ``data`` that is not a map, whole);
- a **name/value pair** (an env var) whose name looks like a credential (``CREDENTIAL_FRAGMENTS`` anywhere
  in it, or ``CREDENTIAL_WORDS`` as a whole word) has its value replaced;
- a **URL with a password** (``scheme://user:password@host``) anywhere has its password replaced;
- the same inside last-applied annotations, which copy whole objects.

Where a rule could misfire it errs on redacting: a redacted request replays the same (the recorded answer
was redacted the same way), only less is learnt from it. ``examples/requests/README.md`` lists these rules;
its tests hold the lists to this module.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from app.kube import depth

REDACTED = "<redacted>"
# Anywhere in a name, any case: PASS also finds PASSWD, PASSWORD, PASSPHRASE (and BYPASS); KEY finds
# API_KEY, SSH_KEY, ACCESS_KEY (and MONKEY, KEYBOARD); AUTH finds OAUTH, AUTHORIZATION (and AUTHOR).
CREDENTIAL_FRAGMENTS = (
    "PASS", "PWD", "SECRET", "TOKEN", "KEY", "CRED", "AUTH", "BEARER", "PRIVATE", "CERT", "SESSION",
    "COOKIE", "SIGNATURE", "SALT", "HMAC", "JWT", "CONNECTION_STRING",
)  # fmt: skip
# Only as a whole word of a name (words split at ``_``, ``-``, ``.`` and lower-to-upper case): GITHUB_PAT,
# PAT_FILE and githubPat, not PATH or PATTERN; SENTRY_DSN, not DSNAME; DB_PW.
CREDENTIAL_WORDS = ("PAT", "PW", "DSN", "OTP")
CREDENTIAL_NAME = re.compile("|".join(CREDENTIAL_FRAGMENTS), re.IGNORECASE)
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# scheme://user:password@ : the password is replaced, the rest kept (where it points is not a secret).
URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)[^\s/?#@]+@")
SECRET_GROUP = re.compile(r"^secret\.", re.IGNORECASE)  # Metacontroller's children key: Secret.v1
SECRET_FIELDS = ("data", "stringData")
LAST_APPLIED_SUFFIX = "last-applied-configuration"
# Deeper than this, an annotation's embedded object is replaced whole (decoding it would recurse too far).
EMBEDDED_MAX_DEPTH = 100


def credential_name(name: str) -> bool:
    """Whether an env var (or any name/value pair) of this name likely holds a credential."""
    if CREDENTIAL_NAME.search(name):
        return True
    return any(word.upper() in CREDENTIAL_WORDS for word in _WORD_BREAK.split(name))


def secret_shaped(obj: dict[str, Any]) -> bool:
    """An object that says no kind (none, or not a string) but looks like a Secret: a ``stringData``
    (only Secrets have one), a ``data`` map of strings, or a ``data`` next to a Secret's ``type``
    (``Opaque`` or a ``domain/name`` such as ``kubernetes.io/dockerconfigjson``)."""
    if isinstance(obj.get("kind"), str):
        return False
    if "stringData" in obj:
        return True
    data, kind_of_secret = obj.get("data"), obj.get("type")
    if isinstance(data, dict) and all(isinstance(value, str) for value in data.values()):
        return bool(data)
    typed = isinstance(kind_of_secret, str) and (kind_of_secret.lower() == "opaque" or "/" in kind_of_secret)
    return data is not None and typed


def is_secret(obj: dict[str, Any]) -> bool:
    kind = obj.get("kind")
    return (isinstance(kind, str) and kind.strip().lower() == "secret") or secret_shaped(obj)


def redact(value: Any, secret: bool = False) -> Any:
    """``value`` (decoded JSON) with every secret in it replaced by ``<redacted>`` (the module's rules);
    keys are kept, so the shape replays the same. ``secret``: ``value`` is known to be a Secret."""
    if isinstance(value, str):
        return URL_PASSWORD.sub(rf"\1{REDACTED}@", value) if "@" in value else value
    if isinstance(value, list):
        return [redact(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {
        key: _redact_group(item) if SECRET_GROUP.match(key) and isinstance(item, dict) else redact(item)
        for key, item in value.items()
    }
    if secret or is_secret(out):
        for field in SECRET_FIELDS:
            if isinstance(out.get(field), dict):
                out[field] = dict.fromkeys(out[field], REDACTED)
            elif out.get(field) is not None:
                out[field] = REDACTED
    name = out.get("name")
    if isinstance(name, str) and "value" in out and credential_name(name):
        out["value"] = REDACTED
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("annotations"), dict):
        annotations = metadata["annotations"]
        for key, text in annotations.items():
            if key.endswith(LAST_APPLIED_SUFFIX):
                annotations[key] = _redact_embedded(text)
    return out


def _redact_group(group: dict[str, Any]) -> dict[str, Any]:
    """A children group of Secrets (``Secret.v1``: name -> object): each object is a Secret, whatever it
    says its kind is."""
    return {name: redact(obj, secret=isinstance(obj, dict)) for name, obj in group.items()}


def _redact_embedded(text: object) -> str:
    """A JSON object kept in an annotation, redacted and encoded again; anything else entirely."""
    if not isinstance(text, str) or depth.deeper_than(text.encode(), EMBEDDED_MAX_DEPTH):
        return REDACTED
    try:
        inner = orjson.loads(text)
    except orjson.JSONDecodeError:
        return REDACTED
    if not isinstance(inner, dict):
        return REDACTED
    return orjson.dumps(redact(inner)).decode()
