"""``gang_setting``: the one rule for ``MPI_OPERATOR_GANG_SCHEDULING`` and ``--gang-scheduling``.

Upstream's rule stays: any name other than ``volcano`` (and ours, ``kubernetes``) is a scheduler-plugins
scheduler of that name. A name a typo away from ``volcano`` or ``kubernetes`` (in any case) is refused with
the name meant, as no real scheduler is named so close to them: a typo would otherwise deploy a PodGroup no
scheduler reads, and Pods that wait for a scheduler that does not exist.
"""

from __future__ import annotations

import pytest

from app.kube.gang import gang_setting

# (setting, what the hook runs with)
TAKEN = [
    ("", ""),
    ("  ", ""),
    ("volcano", "volcano"),
    (" volcano ", "volcano"),
    ("kubernetes", "kubernetes"),
    ("scheduler-plugins-scheduler", "scheduler-plugins-scheduler"),
    ("coscheduler", "coscheduler"),
    ("default-scheduler", "default-scheduler"),
    ("volcano-scheduler", "volcano-scheduler"),  # 10 letters from volcano: a name of its own
    ("kube-batch", "kube-batch"),
    ("yunikorn", "yunikorn"),
    ("koord-scheduler", "koord-scheduler"),
    ("sched.example.com", "sched.example.com"),
]
# (setting, the backend it is taken for a typo of)
TYPOS = [
    ("volcanoo", "volcano"),  # a letter too many
    ("volcan", "volcano"),  # one too few
    ("vulcano", "volcano"),  # one other
    ("vlocano", "volcano"),  # two swapped
    ("Volcano", "volcano"),  # a capital: the DNS rule would refuse it without saying what was meant
    ("VOLCANO", "volcano"),
    ("volcano2", "volcano"),
    ("kubernets", "kubernetes"),
    ("kubernete", "kubernetes"),
    ("kubenretes", "kubernetes"),
    ("kubernetis", "kubernetes"),
    ("Kubernetes", "kubernetes"),
    (" kubernetess ", "kubernetes"),
]
NOT_NAMES = ["Volcano Scheduler", "Bad_Name", "-leading-dash", "dot..dot", "a" * 254]


@pytest.mark.parametrize(("setting", "taken"), TAKEN, ids=[s or "empty" for s, _ in TAKEN])
def test_a_backend_or_a_scheduler_name_is_taken(setting: str, taken: str) -> None:
    assert gang_setting(setting) == taken


@pytest.mark.parametrize(("setting", "meant"), TYPOS, ids=[s for s, _ in TYPOS])
def test_a_name_a_typo_away_from_a_backend_is_refused_with_the_one_meant(setting: str, meant: str) -> None:
    with pytest.raises(ValueError, match=rf": did you mean {meant}\?$") as caught:
        gang_setting(setting)
    assert "scheduler-plugins" in str(caught.value)  # what it would have been taken for


@pytest.mark.parametrize("setting", NOT_NAMES, ids=lambda s: s[:16])
def test_what_is_no_scheduler_name_is_refused(setting: str) -> None:
    with pytest.raises(ValueError, match="DNS subdomain"):
        gang_setting(setting)
