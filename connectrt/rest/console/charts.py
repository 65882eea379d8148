"""Inline SVG sparklines for the console: no chart library, no script.

:func:`sparkline` draws a series of numbers as a polyline over a filled area in a fixed
viewBox that scales with its box. The SVG holds numbers and an escaped title only, so it is
safe to insert into a template as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

__all__ = ["sparkline"]

WIDTH = 300
HEIGHT = 60


def sparkline(values: Sequence[float], title: str) -> Markup:
    """An SVG of ``values`` (oldest first) scaled to the largest one; an empty chart (a flat
    line with a note) for fewer than two values."""
    label = escape(title)
    if len(values) < 2:
        return Markup(
            f'<svg class="spark" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{label}">'
            f"<title>{label}: collecting samples</title>"
            f'<line x1="0" y1="{HEIGHT - 1}" x2="{WIDTH}" y2="{HEIGHT - 1}" class="base"/></svg>'
        )
    top = max(values) or 1.0
    step = WIDTH / (len(values) - 1)
    points = [
        (round(i * step, 1), round(HEIGHT - 2 - (v / top) * (HEIGHT - 6), 1))
        for i, v in enumerate(values)
    ]
    line = " ".join(f"{x},{y}" for x, y in points)
    area = f"0,{HEIGHT} {line} {WIDTH},{HEIGHT}"
    return Markup(
        f'<svg class="spark" viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none" '
        f'role="img" aria-label="{label}"><title>{label}</title>'
        f'<polygon points="{area}" class="area"/>'
        f'<polyline points="{line}" class="line"/></svg>'
    )
