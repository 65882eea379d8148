"""Draw the floors of connectrt.runtime as an SVG, from the import contract and the code.

Usage: ``python scripts/runtime_floors.py [--write]``. The floors are the layers of the
``runtime-floors`` contract in ``pyproject.toml``; each box is one subpackage (or ground
module) with its module and line counts; each arrow is the direct imports from one box into
another, counted module by module with grimp (the import graph import-linter checks).
Without ``--write`` it prints the SVG; with it, it rewrites ``docs/images/runtime-floors.svg``,
which ``tests/unit/test_runtime_floors_picture.py`` keeps equal to what this script draws.
"""

from __future__ import annotations

import math
import sys
import tomllib
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

import grimp

ROOT = Path(__file__).resolve().parents[1]
PICTURE = ROOT / "docs" / "images" / "runtime-floors.svg"
CONTAINER = "connectrt.runtime"

_BOX_W, _BOX_H, _ROW_H, _MARGIN, _WIDTH = 150, 44, 78, 20, 820


def floors() -> list[list[str]]:
    """The contract's layers, top first, each a list of names under ``connectrt.runtime``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == "runtime-floors"]
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def _files(name: str) -> list[Path]:
    base = ROOT / "connectrt" / "runtime" / name
    return sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]


def _box_of(module: str, names: set[str]) -> str | None:
    if not module.startswith(CONTAINER + "."):
        return None
    head = module[len(CONTAINER) + 1 :].split(".")[0]
    return head if head in names else None


def arrows(names: set[str]) -> Counter[tuple[str, str]]:
    """Direct module imports from one box into another, counted."""
    graph = grimp.build_graph("connectrt", cache_dir=None)
    counts: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        src = _box_of(module, names)
        if src is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            dst = _box_of(imported, names)
            if dst is not None and dst != src:
                counts[(src, dst)] += 1
    return counts


def _spread(dx: float) -> float:
    """How far from a box's middle an arrow leaves or arrives, by where the other end is."""
    return max(-0.45, min(0.45, dx / (2 * _WIDTH))) * _BOX_W


def draw() -> str:
    """The SVG text of the floors picture."""
    layers = floors()
    names = {name for layer in layers for name in layer}
    places: dict[str, tuple[float, float]] = {}
    for row, layer in enumerate(layers):
        gap = (_WIDTH - 2 * _MARGIN - len(layer) * _BOX_W) / (len(layer) + 1)
        for col, name in enumerate(layer):
            x = _MARGIN + gap + col * (_BOX_W + gap)
            places[name] = (x, _MARGIN + row * _ROW_H)
    height = 2 * _MARGIN + (len(layers) - 1) * _ROW_H + _BOX_H + 20
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        '<defs><marker id="head" markerWidth="8" markerHeight="8" refX="7" refY="4" '
        'orient="auto" markerUnits="userSpaceOnUse">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#7a869a"/></marker></defs>',
    ]
    for (src, dst), count in sorted(arrows(names).items()):
        (sx, sy), (dx, dy) = places[src], places[dst]
        width = 0.6 + math.log2(count)
        # Leave from the side of the box facing the target, arrive on the side facing the
        # source, so that arrows into one box do not all meet at one point.
        x1 = sx + _BOX_W / 2 + _spread(dx - sx)
        x2 = dx + _BOX_W / 2 + _spread(sx - dx)
        out.append(
            f'<line x1="{x1:.0f}" y1="{sy + _BOX_H}" x2="{x2:.0f}" '
            f'y2="{dy}" stroke="#7a869a" stroke-opacity="0.55" stroke-width="{width:.1f}" '
            f'marker-end="url(#head)"><title>{src} imports {dst}: {count}</title></line>'
        )
    for name, (x, y) in places.items():
        files = _files(name)
        lines = sum(len(f.read_text().splitlines()) for f in files)
        label = f"{name}/" if len(files) > 1 or files[0].name == "__init__.py" else f"{name}.py"
        detail = f"{len(files)} modules, {lines} lines" if len(files) > 1 else f"{lines} lines"
        out += [
            f'<rect x="{x:.0f}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="6" '
            'fill="#eef3fb" stroke="#3d5a80"/>',
            f'<text x="{x + _BOX_W / 2:.0f}" y="{y + 19}" text-anchor="middle" '
            f'font-weight="bold">{escape(label)}</text>',
            f'<text x="{x + _BOX_W / 2:.0f}" y="{y + 35}" text-anchor="middle" '
            f'fill="#444">{escape(detail)}</text>',
        ]
    out.append(
        f'<text x="{_MARGIN}" y="{height - 8}" fill="#666">connectrt.runtime, top floor first; '
        "an arrow is a box's direct imports into another (width: how many)</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    svg = draw()
    if "--write" in sys.argv[1:]:
        PICTURE.parent.mkdir(parents=True, exist_ok=True)
        PICTURE.write_text(svg)
    else:
        sys.stdout.write(svg)
