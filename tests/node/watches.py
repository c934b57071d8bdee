"""Every version of a namespace's objects of one kind, as ``kubectl get -w`` sees them: what a test asserts
about the order in which things were written.

``kubectl get <kind> -w --output-watch-events -o json`` lists the kind, then watches from the list's
resourceVersion, printing each event with the object as it was written. On this suite's control plane (one
etcd) a resourceVersion is etcd's revision, one counter for every write of every kind: comparing two objects'
versions orders their writes. Kubernetes promises clients nothing about that ordering; a test that relies on
it holds only for this cluster.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.kube import Kube


@dataclass(frozen=True)
class Event:
    kind: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def version(self) -> int:
        return int(self.obj["metadata"]["resourceVersion"])


@dataclass
class Watched:
    """The events of one ``kubectl get -w`` (read from its output file)."""

    output: Path
    events: list[Event] = field(default_factory=list)

    def read(self) -> list[Event]:
        text = self.output.read_text()
        decoder = json.JSONDecoder()
        found, at = [], 0
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at >= len(text):
                break
            try:
                item, at = decoder.raw_decode(text, at)
            except json.JSONDecodeError:
                break  # an event still being written
            found.append(Event(item["type"], item["object"]))
        self.events = found
        return found

    def of(self, name: str) -> list[Event]:
        return [e for e in self.read() if e.name == name]


@contextmanager
def watching(kube: Kube, ns: str, kind: str, workdir: Path) -> Iterator[Watched]:
    """Watch ``kind`` in ``ns`` for the block's duration; the process is stopped at the end."""
    output = workdir / f"watch-{kind}.json"
    argv = ["kubectl", f"--kubeconfig={kube.kubeconfig}", "-n", ns, "get", kind, "-w"]
    argv += ["--output-watch-events", "-o", "json"]
    with output.open("w") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # the list is done and the watch open before anything of the test is created
        yield Watched(output)
    finally:
        process.terminate()
        process.wait(timeout=10)
