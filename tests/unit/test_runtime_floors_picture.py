"""docs/images/runtime-floors.svg shows the runtime's floors as the code has them today.

The picture's figures (lines, import counts) drift with every edit and are not checked; its
boxes (the contract's floors) and which box imports which are: a new arrow between floors, or a
floor added or removed, means ``python scripts/runtime_floors.py --write``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ARROW = re.compile(r"<title>(\S+) imports (\S+): \d+</title>")
_BOX = re.compile(r'font-weight="bold">([^<]+)</text>')


def _structure(svg: str) -> tuple[set[tuple[str, str]], list[str]]:
    return set(_ARROW.findall(svg)), _BOX.findall(svg)


def test_the_committed_picture_has_the_floors_and_arrows_of_the_code() -> None:
    spec = importlib.util.spec_from_file_location(
        "runtime_floors", ROOT / "scripts/runtime_floors.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    drawn_now = _structure(script.draw())
    committed = _structure((ROOT / "docs/images/runtime-floors.svg").read_text())
    assert drawn_now[0], "the script found no arrows between floors"
    assert committed == drawn_now, "run: python scripts/runtime_floors.py --write"
