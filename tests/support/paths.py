"""Where the repository and the suite's shared data are, for test modules at any depth under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
GOLDEN = TESTS / "golden"  # recorded sync requests and the hook's exact answers, one folder per case
FIXTURES = TESTS / "fixtures"
WIRE = FIXTURES / "wire"  # sync requests as Metacontroller sends them
