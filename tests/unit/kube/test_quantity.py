"""``canonical_quantity`` prints what the apiserver prints (k8s.io/apimachinery resource.Quantity.String()).

Cases beyond the obvious ones come from apimachinery's pkg/api/resource/quantity_test.go:
``TestQuantityParseEmit``, ``TestQuantityString`` (the "alternate" spellings must print the canonical
one), ``TestQuantityParse`` (parse, then print) and ``TestParseQuantity`` (``canonical`` column). Input
that the apiserver would reject is returned unchanged (the apiserver, not the hook, reports it).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.kube.quantity import canonical_pod_spec, canonical_quantity

# (input, what the apiserver prints)
BASICS: list[tuple[Any, str]] = [
    (1, "1"),
    ("1", "1"),
    ("1000m", "1"),
    (0.5, "500m"),
    (1.5, "1500m"),
    (2000, "2k"),
    ("1024Mi", "1Gi"),
    ("1.5Gi", "1536Mi"),
    ("1000", "1k"),
    ("1500", "1500"),
    ("0.5Ki", "512"),
    ("1e3", "1e3"),
    ("0.1n", "1n"),
    ("0Mi", "0"),
    ("100m", "100m"),
    ("2Ti", "2Ti"),
    ("1000M", "1G"),
    ("1024", "1024"),
    ("2048", "2048"),
    ("1Ki", "1Ki"),
    ("1023Ki", "1023Ki"),
    ("1048576Ki", "1Gi"),
    ("-1Gi", "-1Gi"),
    ("-1.5Ki", "-1536"),
    ("-0", "0"),
    ("0.0", "0"),
    ("+1k", "1k"),
]

# TestQuantityParseEmit, and its negated variants.
PARSE_EMIT: list[tuple[str, str]] = [
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
    ("-1024Mi", "-1Gi"),
    ("-1000M", "-1G"),
    ("-.001Ki", "-1024m"),
    ("-.000000000001Ki", "-2n"),
]

# TestQuantityString: (alternate spelling, canonical) and canonical strings that print as themselves.
STRING_ALTERNATES: list[tuple[str, str]] = [
    ("1024Mi", "1Gi"),
    ("307200Ki", "300Mi"),
    ("1025024Mi", "1001Gi"),
    ("1024Gi", "1Ti"),
    ("5000m", "5"),
    ("0.5", "500m"),
    ("1000M", "1G"),
    ("0.001T", "1G"),
    ("1000u", "1m"),
    ("1.08", "1080m"),
    ("1080000000n", "1080m"),
    (".001e12", "1e9"),
    ("0.001e0", "1e-3"),
    ("1000e-12", "1e-9"),
    ("00", "0"),
]
STRING_CANONICAL = [
    "6Ki",
    "300Mi",
    "1001Gi",
    "80m",
    "1080m",
    "300M",
    "1T",
    "1234567M",
    "1234567m",
    "3k",
    "1025",
    "80e-3",
    "300e6",
    "1e12",
    "1e3",
    "3e3",
    "1n",
    "80n",
    "1080n",
    "1u",
    "80u",
    "1080u",
]

# TestQuantityParse: the table's inputs, printed.
PARSE: list[tuple[str, str]] = [
    ("0n", "0"),
    ("0Ki", "0"),
    ("0T", "0"),
    ("8Ki", "8Ki"),
    ("7Mi", "7Mi"),
    ("6Gi", "6Gi"),
    ("5Ti", "5Ti"),
    ("4Pi", "4Pi"),
    ("3Ei", "3Ei"),
    ("100Ti", "100Ti"),
    ("5n", "5n"),
    ("4u", "4u"),
    ("50k", "50k"),
    ("40T", "40T"),
    ("300T", "300T"),
    ("2P", "2P"),
    ("1E-3", "1e-3"),
    ("1E6", "1e6"),
    ("1e15", "1e15"),
    ("1e14", "100e12"),
    ("1e13", "10e12"),
    ("100.035k", "100035"),
    ("0.0005k", "500m"),
    ("0.00050k", "500m"),
    ("0.05", "50m"),
    ("0.05000", "50m"),
    ("0.5e0", "500e-3"),
    ("0.5e-1", "50e-3"),
    ("0.5e-2", "5e-3"),
    ("10.035M", "10035k"),
    ("1.2e3", "1200"),
    ("1.3E+6", "1300e3"),
    ("1.40e9", "1400e6"),
    ("1.53E12", "1530e9"),
    ("1.7E18", "1700e15"),
    ("9.01", "9010m"),
    ("8.1k", "8100"),
    ("7.123456M", "7123456"),
    ("6.987654321G", "6987654321"),
    ("5.444T", "5444G"),
    ("40.1T", "40100G"),
    ("2.5P", "2500T"),
    ("3.001n", "4n"),
    ("1.1E-9", "2e-9"),
    ("0.0000000001", "1n"),
    ("0.0000000005", "1n"),
    ("0.5e-9", "1e-9"),
    ("0.9n", "1n"),
    ("0.00000012345", "124n"),
    ("0.00000012354", "124n"),
    ("-3.001n", "-4n"),
    ("100.035Ki", "102435840m"),
    ("0.5Mi", "512Ki"),
    ("0.05Gi", "53687091200m"),
    ("0.025Ti", "27487790694400m"),
    ("0.000000000001Ki", "2n"),
    (".001", "1m"),
    (".0001k", "100m"),
    ("1.", "1"),
    ("1.G", "1G"),
]

# TestParseQuantity: beyond int64, with its "canonical" column.
BIG: list[tuple[str, str]] = [
    ("999999999999999999.1", "999999999999999999100m"),
    ("-999999999999999999.0", "-999999999999999999"),
    ("1000000000000000000", "1E"),
    ("9999999999999999999000m", "9999999999999999999"),
    ("10000000000000000000", "10E"),
    ("10000000000000000000000m", "10E"),
    ("9223372036854775808", "9223372036854775808"),
    ("-9223372036854775809.1", "-9223372036854775809100m"),
]

# The exa suffix "E" (TestQuantityParse, TestParseQuantity); "1e3" and "1E6" are exponents, "1E" is 10^18.
EXA: list[tuple[str, str]] = [
    ("1E", "1E"),
    ("-1E", "-1E"),
    ("12E", "12E"),
    ("1.01E", "1010P"),
    ("-1.0E", "-1E"),
    ("1.0000000000000000001E", "1000000000000000000100m"),
    ("1.000000000000000001E", "1000000000000000001"),
    ("10.0000000000000000001E", "10000000000000000000100m"),
]

# apimachinery caps BinarySI quantities at 2^63-1 ("9Ei" and "9223372036854775807Ki" in TestQuantityParse).
SATURATION: list[tuple[str, str]] = [
    ("9Ei", "9223372036854775807"),
    ("9223372036854775807Ki", "9223372036854775807"),
    ("-9Ei", "-9223372036854775807"),
    ("8Ei", "9223372036854775807"),
    ("7Ei", "7Ei"),
]

# TestQuantityParse's invalid table (and other garbage): returned unchanged.
UNCHANGED: list[Any] = [
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    "1e",
    "",
    "1 Gi",
    "one",
    "1Gb",
    "1KiB",
]

ALL: list[tuple[Any, str]] = [
    *BASICS,
    *PARSE_EMIT,
    *STRING_ALTERNATES,
    *((s, s) for s in STRING_CANONICAL),
    *PARSE,
    *EXA,
    *BIG,
    *SATURATION,
    *((s, s) for s in UNCHANGED),
    (" 1 ", "1"),  # TestJSONWhitespace: JSON decoding trims spaces
]


@pytest.mark.parametrize(("value", "want"), ALL, ids=[repr(v) for v, _ in ALL])
def test_canonical_quantity(value: Any, want: str) -> None:
    assert canonical_quantity(value) == want


@pytest.mark.parametrize("want", sorted({w for _, w in ALL}), ids=repr)
def test_canonical_quantity_is_idempotent(want: str) -> None:
    assert canonical_quantity(want) == want


# (id, pod spec, canonical pod spec)
POD_SPECS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "containers, initContainers, ephemeralContainers",
        {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "limits": {
                            "cpu": 1,
                            "memory": "1024Mi",
                            "nvidia.com/gpu": 1,
                            "hugepages-2Mi": "1024Mi",
                        },
                        "requests": {"cpu": "1000m", "memory": "1.5Gi", "ephemeral-storage": "1000M"},
                        "claims": [{"name": "gpu"}],
                    },
                },
                {"name": "no-resources", "image": "busybox"},
            ],
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": 0.5}}}],
            "ephemeralContainers": [{"name": "debug", "resources": {"limits": {"memory": "2048Ki"}}}],
        },
        {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "limits": {
                            "cpu": "1",
                            "memory": "1Gi",
                            "nvidia.com/gpu": "1",
                            "hugepages-2Mi": "1Gi",
                        },
                        "requests": {"cpu": "1", "memory": "1536Mi", "ephemeral-storage": "1G"},
                        "claims": [{"name": "gpu"}],
                    },
                },
                {"name": "no-resources", "image": "busybox"},
            ],
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "500m"}}}],
            "ephemeralContainers": [{"name": "debug", "resources": {"limits": {"memory": "2Mi"}}}],
        },
    ),
    (
        "overhead and pod-level resources",
        {
            "containers": [{"name": "main"}],
            "overhead": {"cpu": "0.25", "memory": "131072Ki"},
            "resources": {"limits": {"cpu": 4}, "requests": {"memory": "4096Mi"}},
        },
        {
            "containers": [{"name": "main"}],
            "overhead": {"cpu": "250m", "memory": "128Mi"},
            "resources": {"limits": {"cpu": "4"}, "requests": {"memory": "4Gi"}},
        },
    ),
    (
        "emptyDir sizeLimit and ephemeral volume requests",
        {
            "containers": [{"name": "main"}],
            "volumes": [
                {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1024Mi"}},
                {"name": "scratch", "emptyDir": {}},
                {
                    "name": "ephemeral",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "metadata": {"labels": {"a": "b"}},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": "fast",
                                "resources": {
                                    "requests": {"storage": "1000Gi"},
                                    "limits": {"storage": "1024Gi"},
                                },
                            },
                        }
                    },
                },
                {"name": "cfg", "configMap": {"name": "cfg"}},
            ],
        },
        {
            "containers": [{"name": "main"}],
            "volumes": [
                {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                {"name": "scratch", "emptyDir": {}},
                {
                    "name": "ephemeral",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "metadata": {"labels": {"a": "b"}},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": "fast",
                                "resources": {
                                    "requests": {"storage": "1000Gi"},
                                    "limits": {"storage": "1Ti"},
                                },
                            },
                        }
                    },
                },
                {"name": "cfg", "configMap": {"name": "cfg"}},
            ],
        },
    ),
    (
        "already canonical and quantity-free specs unchanged",
        {
            "hostNetwork": True,
            "containers": [{"name": "main", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
            "nodeSelector": {"memory": "1024Mi"},
        },
        {
            "hostNetwork": True,
            "containers": [{"name": "main", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
            "nodeSelector": {"memory": "1024Mi"},
        },
    ),
    (
        "garbage left for the apiserver to reject",
        {"containers": [{"name": "main", "resources": {"limits": {"cpu": "lots", "memory": None}}}]},
        {"containers": [{"name": "main", "resources": {"limits": {"cpu": "lots", "memory": None}}}]},
    ),
    ("empty spec", {}, {}),
]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        *(pytest.param(*c[1:], id=c[0]) for c in POD_SPECS),
        pytest.param(
            {"containers": [{"name": "main", "resources": {"limits": {"memory": "1E", "cpu": 1}}}]},
            {"containers": [{"name": "main", "resources": {"limits": {"memory": "1E", "cpu": "1"}}}]},
            id="exa-sized limit",
        ),
    ],
)
def test_canonical_pod_spec(spec: dict[str, Any], want: dict[str, Any]) -> None:
    before = copy.deepcopy(spec)
    got = canonical_pod_spec(spec)
    assert got == want
    assert spec == before
    assert got is not spec
