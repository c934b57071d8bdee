"""The ``mpijob`` flags that name something in a cluster, checked as argparse types by the rules the cluster
(or the hook's settings) applies, so a bad one is a usage error naming the flag (exit code 2) before
anything is read or written, on every command alike.

The rules live below (``app.api.child_names``, ``app.kube.gang``); these only word them for a flag.
"""

from __future__ import annotations

import argparse

from app.api.child_names import DNS1123_LABEL_RULE, cluster_domain_setting, is_dns1123_label
from app.kube.gang import gang_setting


def namespace_name(text: str) -> str:
    """``-n/--namespace``: a DNS-1123 label; empty is as if not given, as kubectl takes it."""
    if text and not is_dns1123_label(text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a namespace: {DNS1123_LABEL_RULE}")
    return text


def gang_scheduling(text: str) -> str:
    """``--gang-scheduling``: what the hook's ``MPI_OPERATOR_GANG_SCHEDULING`` accepts."""
    try:
        return gang_setting(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text[:80]!r} {err}") from None


def cluster_domain(text: str) -> str:
    """``--cluster-domain``: what the hook's ``MPI_OPERATOR_CLUSTER_DOMAIN`` accepts."""
    try:
        return cluster_domain_setting(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text[:80]!r} {err}") from None


def runtime(text: str) -> str:
    """``convert --runtime``: an existing file (``-``: standard input), else a runtime's name in one of
    the forms kubectl takes, the name a DNS subdomain as the cluster's object names are."""
    from app.cli.runtimes import RuntimeName, is_file

    if is_file(text):
        return text
    from app.kube.yamltext import InputError

    try:
        RuntimeName.parse(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--runtime ")) from None
    return text
