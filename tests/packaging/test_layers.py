"""What the import-linter contracts (pyproject.toml, run by ``scripts/test``) cannot see: the clock.

``datetime`` is imported by the core for its types, so importing it is allowed; calling ``now()`` is not:
the shell injects ``now``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import paths

APP = paths.ROOT / "app"
PURE = sorted(p for layer in ("api", "kube", "children", "core") for p in (APP / layer).rglob("*.py"))


@pytest.mark.parametrize("path", PURE, ids=[str(p.relative_to(APP)) for p in PURE])
def test_pure_layers_do_not_read_the_clock(path: Path) -> None:
    source = path.read_text()
    assert "datetime.now(" not in source and "utcnow(" not in source and "date.today(" not in source
