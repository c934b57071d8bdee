"""tests/golden stays under 1.5 MB, as ``du -sb tests/golden`` counts it (issue 41): expected files a reviewer
can still read. A case that repeats another is kept as a patch onto it (``BASES`` in
tests/support/golden_store.py); the way back under the budget is more sharing, never fewer cases.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support import golden_store
from tests.support.paths import GOLDEN

BUDGET = 1_500_000


def test_the_golden_tree_stays_under_its_budget() -> None:
    size = golden_store.tree_bytes()
    assert size <= BUDGET, (
        f"tests/golden is {size:,} bytes (du -sb), over its {BUDGET:,}: share what a new case repeats"
        " (BASES in tests/support/golden_store.py) and run --update-golden"
    )


def test_the_count_is_what_du_reports() -> None:
    """``tree_bytes`` counts a folder as the 4 KiB ext4 gives it, on any filesystem; where the folders are
    4 KiB, it is exactly ``du -sb``."""
    du = shutil.which("du")
    folders = [GOLDEN, *(p for p in GOLDEN.rglob("*") if p.is_dir())]
    if du is None or any(p.stat().st_size != golden_store.FOLDER_BYTES for p in folders):
        pytest.skip("no du, or folders here are not 4 KiB: nothing to compare with")
    done = subprocess.run([du, "-sb", str(GOLDEN)], capture_output=True, text=True, timeout=30, check=True)
    assert int(done.stdout.split()[0]) == golden_store.tree_bytes()
