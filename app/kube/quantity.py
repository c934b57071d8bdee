"""Kubernetes resource quantities in the canonical form the apiserver prints.

A pod template stored in the MPIJob keeps whatever the user wrote (``cpu: 1``, ``memory: 1024Mi``);
the apiserver returns the child's copy canonicalised (``"1"``, ``"1Gi"``). Emitting the canonical
form keeps Metacontroller's 3-way merge from seeing a difference that isn't there.
"""

from __future__ import annotations

import functools
import re
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    Context,
    Decimal,
    InvalidOperation,
    Overflow,
    localcontext,
)
from typing import Any

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_NANO = Decimal("1e-9")
_MAX_ALLOWED = Decimal(2**63 - 1)
# Room for any int64 quantity at nano precision. A value needing more (``1e1000000``, 60 digits) is
# returned as written: the apiserver canonicalises it, and a big number must not cost us memory or time.
_CONTEXT = Context(prec=64, Emax=64, Emin=-64, traps=None)
_MAX_TEXT = 64


@functools.lru_cache(maxsize=4096, typed=True)
def canonical_quantity(value: int | float | str) -> str:
    """Return ``value`` as the apiserver would print it; unparsable input is returned unchanged.

    Cached: a cluster's templates repeat the same few quantities, and every sync canonicalises them."""
    parsed = parse_quantity(value)
    if parsed is None:
        return str(value).strip() if not isinstance(value, bool | int) else str(value)
    with localcontext(_CONTEXT) as context:
        text = format_quantity(*parsed)
        failed = context.flags[Overflow] or context.flags[InvalidOperation]
    return str(value).strip() if failed else text


def parse_quantity(value: int | float | str) -> tuple[Decimal, str] | None:
    """The amount (rounded as the apiserver rounds) and the form it prints in, or None if unparsable
    or beyond what any int64 quantity needs.

    The form is ``binary`` (Ki, Mi, ...), ``decimal`` (m, k, M, ... or none) or ``exponent`` (1e3).
    """
    text = str(value).strip() if not isinstance(value, bool | int) else str(value)
    match = _QUANTITY.match(text) if len(text) <= _MAX_TEXT else None
    if match is None:
        return None
    with localcontext(_CONTEXT) as context:
        parsed = _parse(match.group(1), match.group(2) or "")
        failed = context.flags[Overflow] or context.flags[InvalidOperation]
    return None if failed else parsed


def _parse(number: str, suffix: str) -> tuple[Decimal, str] | None:
    amount = Decimal(number)
    if suffix in _BINARY:
        amount *= 2 ** _BINARY[suffix]
        form = "binary"
    elif len(suffix) > 1 and suffix[0] in "eE":  # a lone "E" is the exa suffix
        if abs(int(suffix[1:])) > _CONTEXT.Emax:
            return None
        amount = amount.scaleb(int(suffix[1:]))
        form = "exponent"
    else:
        amount = amount.scaleb(_DECIMAL[suffix])
        form = "decimal"
    # The apiserver keeps nano precision and rounds anything finer up (away from zero).
    rounding = ROUND_CEILING if amount >= 0 else ROUND_FLOOR
    amount = amount.quantize(_NANO, rounding=rounding) if amount.as_tuple().exponent < -9 else amount  # type: ignore[operator]
    if form == "binary" and abs(amount) > _MAX_ALLOWED:
        amount = _MAX_ALLOWED.copy_sign(amount)  # the apiserver caps binary quantities at int64
    return amount, form


def format_quantity(amount: Decimal, form: str) -> str:
    """Print ``amount`` in ``form`` (see ``parse_quantity``) as resource.Quantity.String() does."""
    if amount == 0:
        return "0"
    if form == "binary" and (abs(amount) < 1024 or amount != amount.to_integral_value()):
        form = "decimal"
    if form == "binary":
        return _binary(int(amount))
    mantissa, exponent = _base10(amount)
    if form == "decimal" and exponent in _DECIMAL_SUFFIX:
        return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def _binary(amount: int) -> str:
    exponent = 0
    while amount % 1024 == 0 and exponent < 60:
        amount //= 1024
        exponent += 10
    suffix = {0: ""} | {bits: name for name, bits in _BINARY.items()}
    return f"{amount}{suffix[exponent]}"


def _base10(amount: Decimal) -> tuple[int, int]:
    """Integer mantissa and an exponent that is a multiple of three, with no removable zeros."""
    sign, digits, exponent = amount.normalize().as_tuple()
    mantissa = int("".join(map(str, digits)) or "0")
    assert isinstance(exponent, int)
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    return (-mantissa if sign else mantissa), exponent


def _canonical_list(resources: Any) -> Any:
    if not isinstance(resources, dict):
        return resources
    return {
        name: canonical_quantity(v) if isinstance(v, int | float | str) else v
        for name, v in resources.items()
    }


def _canonical_requirements(requirements: Any) -> Any:
    if not isinstance(requirements, dict):
        return requirements
    out = dict(requirements)
    for key in ("limits", "requests"):
        if key in out:
            out[key] = _canonical_list(out[key])
    return out


def canonical_pod_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``spec`` with every quantity canonicalised (containers, overhead, volumes)."""
    out = dict(spec)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        if isinstance(out.get(key), list):
            out[key] = [_canonical_container(c) for c in out[key]]
    if "overhead" in out:
        out["overhead"] = _canonical_list(out["overhead"])
    if "resources" in out:
        out["resources"] = _canonical_requirements(out["resources"])
    if isinstance(out.get("volumes"), list):
        out["volumes"] = [_canonical_volume(v) for v in out["volumes"]]
    return out


def _canonical_container(container: Any) -> Any:
    if not isinstance(container, dict) or "resources" not in container:
        return container
    return {**container, "resources": _canonical_requirements(container["resources"])}


def _canonical_volume(volume: Any) -> Any:
    if not isinstance(volume, dict):
        return volume
    empty_dir = volume.get("emptyDir")
    if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
        volume = {
            **volume,
            "emptyDir": {**empty_dir, "sizeLimit": canonical_quantity(empty_dir["sizeLimit"])},
        }
    claim = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") if isinstance(volume, dict) else None
    if isinstance(claim, dict) and isinstance(claim.get("spec"), dict) and "resources" in claim["spec"]:
        spec = {**claim["spec"], "resources": _canonical_requirements(claim["spec"]["resources"])}
        volume = {
            **volume,
            "ephemeral": {**volume["ephemeral"], "volumeClaimTemplate": {**claim, "spec": spec}},
        }
    return volume
