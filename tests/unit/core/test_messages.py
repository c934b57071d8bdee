"""``app/core/messages.py``: upstream's message limit (``truncate``, in bytes) and failure messages a user
can act on (who failed, how, and the last words)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.core.messages import failure_message, truncate
from app.core.observed import Exit, failed_exit
from app.kube.request import ObservedPod, SyncRequest, decode_request

HEAD = "Job has reached the specified backoff limit"
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
CUT = "..."

# (case, message, what upstream's rule leaves: the first 1,021 bytes and "..." when over 1,024 bytes)
CASES = [
    ("empty", "", ""),
    ("1,024 ASCII bytes stay", "x" * 1024, "x" * 1024),
    ("1,025 ASCII bytes are cut", "x" * 1025, "x" * 1021 + CUT),
    ("1,024 bytes in 512 two-byte characters stay", "é" * 512, "é" * 512),
    # 600 characters, under 1,024 characters but 1,200 bytes: a character count would keep them all.
    ("two-byte characters over 1,024 bytes are cut", "é" * 600, "é" * 510 + CUT),
    ("a four-byte character is never split", "😀" * 300, "😀" * 255 + CUT),
    ("the cut lands after a whole character", "x" * 1019 + "é" * 10, "x" * 1019 + "é" + CUT),
    ("a line break is kept as written", "a\nb", "a\nb"),
]


def observed_pod(pod: dict[str, object]) -> ObservedPod:
    """``pod`` as the hook decodes an observed child from Metacontroller's request."""
    parent = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "pi"}}
    request = decode_request(json.dumps({"parent": parent, "children": {"Pod.v1": {"p": pod}}}).encode())
    assert isinstance(request, SyncRequest) and request.children.pods is not None
    return request.children.pods["p"]


def worker(index: int, code: int = 137, reason: str = "OOMKilled") -> Exit:
    return Exit(f"pi-worker-{index}", "worker", code, reason, "")


def test_nothing_more_known_is_upstreams_message_as_it_is() -> None:
    assert failure_message(HEAD + ": ", None, []) == HEAD + ": "


def test_failed_workers_are_named_three_at_most() -> None:
    message = failure_message(HEAD, None, [worker(i) for i in range(5)])
    assert message == (
        f"{HEAD}. Failed workers: pi-worker-0: container worker exited with code 137 (OOMKilled),"
        " pi-worker-1: container worker exited with code 137 (OOMKilled), pi-worker-2: container worker"
        " exited with code 137 (OOMKilled) and 2 more"
    )


def test_the_launchers_last_words_keep_their_end() -> None:
    words = "x" * 5000 + " | the end"
    launcher = Exit("pi-launcher-abcde", "launcher", 1, "Error", words)
    message = failure_message(HEAD, launcher, [])
    assert message.startswith(f"{HEAD}. Launcher pi-launcher-abcde: container launcher exited with code 1")
    assert message.endswith("x | the end") and "last output: ..." in message
    assert len(message.encode()) == 1024


@given(
    head=st.text(max_size=300),
    words=st.text(max_size=3000),
    reason=st.text(max_size=40),
    workers=st.integers(0, 6),
)
def test_any_failure_fits_upstreams_limit_on_one_clean_line(
    head: str, words: str, reason: str, workers: int
) -> None:
    launcher = Exit("pi-launcher-abcde", "launcher", 2, reason, words)
    message = failure_message(head, launcher, [worker(i, reason=reason) for i in range(workers)])
    assert len(message.encode()) <= 1024
    assert not CONTROL.search(message)


def test_a_failed_container_is_read_from_the_kubelets_status() -> None:
    pod = {
        "metadata": {"name": "pi-launcher-abcde"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "sidecar", "state": {"running": {}}},
                # restartPolicy OnFailure: the failed run is in lastState while the next one runs.
                {"name": "launcher", "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 3}}},
            ],
        },
    }
    assert failed_exit(observed_pod(pod)) == Exit("pi-launcher-abcde", "launcher", 3, "", "")


def test_container_statuses_of_the_wrong_shape_tell_nothing() -> None:
    pod = {"metadata": {"name": "p"}, "status": {"phase": "Failed", "containerStatuses": [{"name": 5}]}}
    assert failed_exit(observed_pod(pod)) is None


@pytest.mark.parametrize(("message", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_truncate_counts_bytes_as_upstream(message: str, expected: str) -> None:
    assert truncate(message) == expected
    assert len(truncate(message).encode()) <= 1024
