"""tests/e2e/controlplane.py's ``_extract_safely`` without binaries: on a Python that lacks tarfile's
``data`` filter (before 3.11.4) it refuses, before extracting anything, every member that is absolute,
climbs out with ``..``, or is a link or a FIFO; with the filter, nothing lands outside either.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.controlplane import _extract_safely

# A tar member (its header, and its data for a file), made for a test's temporary directory.
Member = Callable[[Path], tuple[tarfile.TarInfo, bytes | None]]


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _archive(tmp_path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    path = tmp_path / "archive.tar"
    with tarfile.open(path, "w") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _fifo(name: str) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.FIFOTYPE
    return info, None


@pytest.fixture
def old_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tarfile without ``data_filter``, which extracts whatever it is given (as before 3.11.4): made so on
    a newer Python, and the real thing on an older one (Debian 12's 3.11.2), where the fallback is for."""
    if hasattr(tarfile, "data_filter"):
        monkeypatch.delattr(tarfile, "data_filter")
        monkeypatch.setattr(tarfile.TarFile, "extraction_filter", staticmethod(tarfile.fully_trusted_filter))


UNSAFE: dict[str, Member] = {
    "..": lambda tmp: _file("bin/../../escaped"),
    "absolute": lambda tmp: _file(str(tmp / "absolute")),
    "symlink": lambda tmp: _link("bin/link", "/etc/passwd", tarfile.SYMTYPE),
    "hard link": lambda tmp: _link("bin/hard", "bin/etcd", tarfile.LNKTYPE),
    "fifo": lambda tmp: _fifo("bin/fifo"),
}


@pytest.mark.usefixtures("old_python")
@pytest.mark.parametrize("unsafe", UNSAFE.values(), ids=UNSAFE.keys())
def test_without_the_filter_an_unsafe_member_refuses_the_whole_archive(
    tmp_path: Path, unsafe: Member
) -> None:
    into = tmp_path / "into"
    into.mkdir()
    path = _archive(tmp_path, _file("bin/etcd"), unsafe(tmp_path))
    with tarfile.open(path) as archive, pytest.raises(RuntimeError, match="refusing to extract"):
        _extract_safely(archive, into)
    assert list(into.iterdir()) == []  # not even the safe member before it
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "absolute").exists()


@pytest.mark.usefixtures("old_python")
def test_without_the_filter_a_plain_archive_extracts(tmp_path: Path) -> None:
    path = _archive(tmp_path, _file("bin/etcd", b"etcd"), _file("bin/kube-apiserver", b"apiserver"))
    with tarfile.open(path) as archive:
        _extract_safely(archive, tmp_path / "into")
    assert (tmp_path / "into" / "bin" / "etcd").read_bytes() == b"etcd"
    assert (tmp_path / "into" / "bin" / "kube-apiserver").read_bytes() == b"apiserver"


@pytest.mark.skipif(not hasattr(tarfile, "data_filter"), reason="this Python has no data filter")
def test_with_the_filter_nothing_lands_outside(tmp_path: Path) -> None:
    into = tmp_path / "into"
    path = _archive(tmp_path, _file("../escaped"))
    with tarfile.open(path) as archive, pytest.raises(tarfile.OutsideDestinationError):
        _extract_safely(archive, into)
    path = _archive(tmp_path, _file(str(tmp_path / "absolute")))
    with tarfile.open(path) as archive:
        _extract_safely(archive, into)  # the filter strips the leading slash: extracted inside
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "absolute").exists()
    assert (into / str(tmp_path / "absolute").lstrip("/")).is_file()
