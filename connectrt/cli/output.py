"""What the management commands print: errors, raw JSON, aligned tables, statuses, offsets.

Everything goes to stdout except :func:`fail`'s ``error: ...`` lines, which go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = [
    "compact_json",
    "fail",
    "first_line",
    "print_json",
    "print_offsets",
    "print_status",
    "print_table",
]


def fail(message: str, more: Sequence[str] = ()) -> int:
    """Print ``error: message`` (and ``more``, indented) to stderr; the exit status 1."""
    print(f"error: {message}", file=sys.stderr)
    for line in more:
        print(f"  {line}", file=sys.stderr)
    return 1


def print_json(value: Any) -> None:
    """``value`` as indented JSON (the ``--json`` output)."""
    print(json.dumps(value, indent=2))


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """``rows`` (the first is the header, if any) in columns two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip())


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
    rows = [["PARTITION", "OFFSET"]]
    for entry in offsets:
        rows.append([compact_json(entry["partition"]), compact_json(entry["offset"])])
    print_table(rows)
