"""What the commands print: errors, raw JSON, tables, statuses, offsets.

Everything goes to stdout except :func:`fail`'s ``error: ...`` lines, which go to stderr.
Tables are drawn by ``rich`` without borders: on a terminal with a bold header and coloured
states; piped, as plain columns two spaces apart with no colour and no trailing spaces, so
``awk``/``cut`` and tests can read them. A cell is never cut: a table wider than the terminal
is printed whole and the terminal wraps its lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "compact_json",
    "fail",
    "first_line",
    "print_json",
    "print_offsets",
    "print_status",
    "print_table",
]

# A connector or task state's colour on a terminal.
_STATE_STYLES = {
    "RUNNING": "green",
    "FAILED": "bold red",
    "PAUSED": "yellow",
    "STOPPED": "yellow",
    "UNASSIGNED": "dim",
    "RESTARTING": "cyan",
}
_PIPED_WIDTH = 1 << 16  # no wrapping when the output is not a terminal


def fail(message: str, more: Sequence[str] = ()) -> int:
    """Print ``error: message`` (and ``more``, indented) to stderr; the exit status 1."""
    print(f"error: {message}", file=sys.stderr)
    for line in more:
        print(f"  {line}", file=sys.stderr)
    return 1


def print_json(value: Any) -> None:
    """``value`` as indented JSON (the ``--json`` output)."""
    print(json.dumps(value, indent=2))


def print_table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> None:
    """``rows`` in columns under ``header`` (if any); a cell that is a state is coloured on a
    terminal. Cells are plain text: ``[`` in a connector name is never read as markup."""
    if not rows and header is None:
        return
    tty = sys.stdout.isatty()
    table = Table(
        box=None,
        show_header=header is not None,
        header_style="bold" if tty else "",
        pad_edge=False,
        padding=(0, 1),
        highlight=False,
    )
    columns = len(header) if header is not None else max((len(r) for r in rows), default=0)
    for i in range(columns):
        table.add_column(header[i] if header is not None else "", no_wrap=True)
    for row in rows:
        table.add_row(*(Text(cell, style=_STATE_STYLES.get(cell, "")) for cell in row))
    if tty:
        console = Console(highlight=False)
        needed = Console(width=_PIPED_WIDTH).measure(table).maximum
        if needed > console.width:  # never cut or drop a cell: let the terminal wrap the line
            console = Console(highlight=False, width=needed)
        console.print(table)
        return
    console = Console(width=_PIPED_WIDTH, color_system=None, highlight=False)
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        print(line.rstrip())


def first_line(trace: str | None) -> str:
    """The first line of a stack trace (its exception), or ``""``."""
    return (trace or "").strip().splitlines()[0] if (trace or "").strip() else ""


def compact_json(value: Any) -> str:
    """``value`` as one line of JSON with sorted keys (partitions and offsets in tables)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def print_status(status: Any) -> None:
    """A connector status answer: the connector's line, then one line per task."""
    connector = status["connector"]
    rows = [
        [
            f"connector {status['name']}",
            str(status.get("type", "")),
            connector["state"],
            connector.get("worker_id", ""),
            first_line(connector.get("trace")),
        ]
    ]
    for task in status.get("tasks", []):
        rows.append(
            [
                f"  task {task['id']}",
                "",
                task["state"],
                task.get("worker_id", ""),
                first_line(task.get("trace")),
            ]
        )
    print_table(rows)


def print_offsets(name: str, offsets: Sequence[Any]) -> None:
    """Connector ``name``'s offsets as a PARTITION/OFFSET table (or a line saying none)."""
    if not offsets:
        print(f"Connector {name} has no committed offsets")
        return
    rows = [[compact_json(e["partition"]), compact_json(e["offset"])] for e in offsets]
    print_table(rows, header=["PARTITION", "OFFSET"])
