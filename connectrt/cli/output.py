"""What the management commands print: errors, raw JSON, tables, statuses, offsets.

Tables are rich tables without borders: aligned and coloured on a terminal, plain columns
(never wrapped, no colour) when the output is piped, so ``awk``/``cut`` keep working; scripts
should still prefer ``--json``. Everything goes to stdout except :func:`fail`'s ``error: ...``
lines, which go to stderr. ``NO_COLOR`` turns colour off on a terminal too.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = [
    "compact_json",
    "console",
    "fail",
    "first_line",
    "print_json",
    "print_offsets",
    "print_status",
    "print_table",
]

_STATE_STYLES = {
    "RUNNING": "green",
    "PAUSED": "yellow",
    "RESTARTING": "yellow",
    "UNASSIGNED": "yellow",
    "STOPPED": "dim",
    "FAILED": "bold red",
}


def console() -> Console:
    """A console on the current stdout (looked up per call, so redirections apply)."""
    out = sys.stdout
    tty = out.isatty()
    return Console(
        file=out,
        highlight=False,
        width=None if tty else 10_000,  # piped: one line per row, whatever its length
        no_color=not tty or bool(os.environ.get("NO_COLOR")),
        emoji=False,
        markup=False,
    )


def fail(message: str, more: Sequence[str] = ()) -> int:
    """Print ``error: message`` (and ``more``, indented) to stderr; the exit status 1."""
    print(f"error: {message}", file=sys.stderr)
    for line in more:
        print(f"  {line}", file=sys.stderr)
    return 1


def print_json(value: Any) -> None:
    """``value`` as indented JSON (the ``--json`` output)."""
    print(json.dumps(value, indent=2))


def print_table(rows: Sequence[Sequence[str]], header: bool = True) -> None:
    """``rows`` in columns (the first row is the header when ``header``); a cell holding a
    connector or task state is coloured by it on a terminal."""
    table = Table(box=None, show_header=header, header_style="bold", pad_edge=False)
    head, body = (rows[0], rows[1:]) if header else (["" for _ in rows[0]], rows)
    for title in head:
        table.add_column(title, no_wrap=True, overflow="ignore")
    for row in body:
        table.add_row(*(_styled(cell) for cell in row))
    console().print(table)


def _styled(cell: str) -> Any:
    style = _STATE_STYLES.get(cell)
    if style is None:
        return cell
    from rich.text import Text

    return Text(cell, style=style)


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
    print_table(rows, header=False)


def print_offsets(name: str, offsets: Sequence[Any]) -> None:
    """Connector ``name``'s offsets as a PARTITION/OFFSET table (or a line saying none)."""
    if not offsets:
        print(f"Connector {name} has no committed offsets")
        return
    rows = [["PARTITION", "OFFSET"]]
    for entry in offsets:
        rows.append([compact_json(entry["partition"]), compact_json(entry["offset"])])
    print_table(rows)
