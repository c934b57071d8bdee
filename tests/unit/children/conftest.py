"""SSH keys from the suite's fixed seed, for the children that carry them."""

from __future__ import annotations

import pytest

from app.kube.keys import SeededKeys
from tests.support.golden_cases import SEED


@pytest.fixture
def keys() -> SeededKeys:
    return SeededKeys(SEED)
