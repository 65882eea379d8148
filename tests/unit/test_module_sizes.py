"""Every module of connectrt and the bundled connectors over 450 lines says why at its top.

The house size is 450 lines; a module past it carries a ``# Why one module ...`` comment in its
first lines, so that a reader knows the size is meant and a reviewer can weigh the reason.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOUSE_SIZE = 450


def modules_without_a_reason(root: Path) -> list[str]:
    """Paths (relative to ``root``) of modules over the house size without the comment."""
    missing = []
    for package in ("connectrt", "connectors"):
        for path in sorted((root / package).rglob("*.py")):
            lines = path.read_text().splitlines()
            if len(lines) <= HOUSE_SIZE:
                continue
            if not any(line.startswith("# Why one module") for line in lines[:3]):
                missing.append(f"{path.relative_to(root)} ({len(lines)} lines)")
    return missing


def test_every_module_over_the_house_size_says_why() -> None:
    assert modules_without_a_reason(ROOT) == []


def test_a_long_module_without_the_comment_is_named(tmp_path: Path) -> None:
    (tmp_path / "connectrt").mkdir()
    (tmp_path / "connectors").mkdir()
    (tmp_path / "connectrt" / "long.py").write_text("x = 1\n" * (HOUSE_SIZE + 1))
    (tmp_path / "connectors" / "said.py").write_text(
        "# Why one module over 450 lines: a test.\n" + "x = 1\n" * HOUSE_SIZE
    )
    assert modules_without_a_reason(tmp_path) == ["connectrt/long.py (451 lines)"]
