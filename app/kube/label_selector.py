"""A label selector written as ``kubectl get -l`` takes it, turned into the ``labelSelector`` object
Metacontroller's customize hook answers with.

The forms: ``key=value`` (or ``==``), ``key!=value``, ``key`` (exists), ``!key`` (does not exist),
``key in (a,b)`` and ``key notin (a,b)``, joined by commas, all of which must hold.
"""

from __future__ import annotations

import re
from typing import Any

from app.api.child_names import QUALIFIED_NAME_MAX, is_label_key

_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_KEY = r"[^\s=!,()]+"
_REQUIREMENT = re.compile(
    rf"\s*(?:(?P<not>!)\s*(?P<absent>{_KEY})"
    rf"|(?P<key>{_KEY})\s*(?:(?P<op>==|=|!=)\s*(?P<value>{_VALUE})"
    rf"|\s+(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*(?:,|$)"
)


def parse_selector(text: str) -> dict[str, Any]:
    """``ValueError`` (saying what to write) unless ``text`` is a selector of the forms above."""
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    position, text = 0, text.strip()
    while position < len(text):
        found = _REQUIREMENT.match(text, position)
        if found is None or found.end() == position:
            raise ValueError(
                f"not a label selector at {text[position : position + 40]!r}: write e.g. 'a=b,c'"
            )
        position = found.end()
        key = found["absent"] or found["key"]
        if not is_label_key(key):
            raise ValueError(f"{key!r} is not a label key")
        if found["absent"]:
            expressions.append({"key": key, "operator": "DoesNotExist"})
        elif found["op"] in ("=", "=="):
            match_labels[key] = _value(found["value"])
        elif found["op"] == "!=":
            expressions.append({"key": key, "operator": "NotIn", "values": [_value(found["value"])]})
        elif found["set"]:
            values = [_value(v.strip()) for v in found["values"].split(",")]
            expressions.append(
                {"key": key, "operator": "In" if found["set"] == "in" else "NotIn", "values": values}
            )
        else:
            expressions.append({"key": key, "operator": "Exists"})
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


def _value(value: str) -> str:
    if len(value) > QUALIFIED_NAME_MAX or not re.fullmatch(_VALUE, value):
        raise ValueError(f"{value!r} is not a label value")
    return value
