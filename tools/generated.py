"""Write a generated file, or with ``--check`` say whether the checked-in one is stale (and how)."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path


def write_or_check(path: Path, rendered: str, *, root: Path, check: bool, regenerate: str) -> int:
    """0 when written or up to date; 1 (with the start of a diff) when ``check`` finds ``path`` stale."""
    relative = path.relative_to(root)
    if check:
        current = path.read_text() if path.exists() else ""
        if current == rendered:
            print(f"{relative} is up to date")
            return 0
        diff = list(
            difflib.unified_diff(
                current.splitlines(), rendered.splitlines(), str(relative), "generated", lineterm="", n=1
            )
        )
        print("\n".join(diff[:40]) + ("\n..." if len(diff) > 40 else ""), file=sys.stderr)
        print(f"{relative} is stale: run `{regenerate}`", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rendered)
    print(f"wrote {relative} ({len(rendered.encode()):,} bytes)")
    return 0
