"""What ``connectrt demo`` prints while it runs and when it stops: one progress line that fits
80 columns, a line when a connector or task changes state, and the stop summary.

Pure functions of the counts they are given, so their wording and width are unit-tested.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "WIDTH",
    "DemoCounts",
    "in_order",
    "progress_line",
    "state_changes",
    "summary_lines",
]

WIDTH = 80


@dataclass(frozen=True)
class DemoCounts:
    """The demo's figures at one moment."""

    elapsed_s: float
    lines_in: int  # lines in the input file
    lines_out: int  # lines the sink has written to the output file
    orders: int  # datagen records acknowledged by the broker
    running: int  # connectors whose connector and tasks are all RUNNING
    connectors: int


def progress_line(c: DemoCounts) -> str:
    """``  12s  lines 1120 in, 1098 out  orders 600  connectors 3/3 running``, at most
    :data:`WIDTH` characters."""
    line = (
        f"{c.elapsed_s:5.0f}s  lines {c.lines_in} in, {c.lines_out} out  "
        f"orders {c.orders}  connectors {c.running}/{c.connectors} running"
    )
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def state_changes(
    before: Mapping[str, str], now: Mapping[str, str], details: Mapping[str, str]
) -> list[str]:
    """A line per instance (``demo-file-sink`` or ``demo-file-sink task 0``) whose state
    changed since ``before`` to anything but RUNNING, or back to RUNNING from such a state;
    ``details`` gives a failed instance's first trace line. Each line fits :data:`WIDTH`."""
    lines = []
    for name, state in now.items():
        previous = before.get(name)
        if state == previous or (previous is None and state == "RUNNING"):
            continue
        if state == "RUNNING" and previous in (None, "UNASSIGNED"):
            continue  # starting up is not news
        text = f"  {name}: {state}"
        if details.get(name):
            text += f" ({details[name]})"
        lines.append(text if len(text) <= WIDTH else text[: WIDTH - 3] + "...")
    return lines


def in_order(lines_in: Sequence[bytes], lines_out: Sequence[bytes]) -> bool:
    """Whether the output is the input's first lines, in the input's order."""
    return list(lines_out) == list(lines_in[: len(lines_out)])


def summary_lines(
    c: DemoCounts, ordered: bool, output: str, orders_topic: str, waited_s: float | None
) -> list[str]:
    """The stop summary: what went through each pipeline and what became of the lines still
    in flight. ``waited_s`` is how long the demo waited for them after the stop (None: the
    wait was cut short by a second Ctrl-C)."""
    order = "in order" if ordered else "NOT in input order"
    lines = [
        f"demo stopped after {c.elapsed_s:.0f}s",
        f"  lines:  {c.lines_in} in, {c.lines_out} out, {order} ({output})",
    ]
    in_flight = c.lines_in - c.lines_out
    if in_flight > 0:
        were = "s were" if in_flight != 1 else " was"
        why = (
            "a second Ctrl-C cut the wait short"
            if waited_s is None
            else f"not written {waited_s:.0f}s after the stop"
        )
        lines += [
            f"          {in_flight} line{were} still in flight ({why});",
            "          the embedded broker keeps nothing: they are not delivered later",
        ]
    elif in_flight < 0:
        lines.append(
            f"          {-in_flight} line(s) written twice: at-least-once delivery "
            "after a task restart"
        )
    lines.append(f"  orders: {c.orders} Avro records in topic {orders_topic}")
    return lines
