"""What ``connectrt demo`` prints: the progress line fits 80 columns whatever the counts, state
changes are news only when they matter, and the summary explains a tail still in flight."""

from __future__ import annotations

import re

from connectrt.cli.demo_report import (
    WIDTH,
    DemoCounts,
    in_order,
    progress_line,
    state_changes,
    summary_lines,
)
from tests.docs_support import DOCS


def test_progress_line_is_short_and_plain():
    line = progress_line(DemoCounts(12.4, 1120, 1098, 600, 3, 3))
    assert line == "   12s  lines 1120 in, 1098 out  orders 600  connectors 3/3 running"
    assert len(line) <= WIDTH


def test_progress_line_fits_80_columns_with_huge_counts():
    big = DemoCounts(10**7, 10**12, 10**12, 10**15, 3, 3)
    line = progress_line(big)
    assert len(line) == WIDTH and line.endswith("...")


def test_state_changes_report_failures_and_recoveries_only():
    start = {"src": "RUNNING", "src task 0": "RUNNING"}
    assert state_changes({}, start, {}) == []  # starting up is not news
    failed = {"src": "RUNNING", "src task 0": "FAILED"}
    assert state_changes(start, failed, {"src task 0": "ValueError: boom"}) == [
        "  src task 0: FAILED (ValueError: boom)"
    ]
    assert state_changes(failed, start, {}) == ["  src task 0: RUNNING"]
    long = state_changes(start, failed, {"src task 0": "x" * 200})
    assert len(long[0]) == WIDTH


def test_in_order():
    assert in_order([b"a", b"b", b"c"], [b"a", b"b"])
    assert not in_order([b"a", b"b", b"c"], [b"b", b"a"])


def test_summary_without_tail():
    counts = DemoCounts(15, 1120, 1120, 606, 3, 3)
    assert summary_lines(counts, True, "demo-data/output.txt", "demo-orders", 1.2) == [
        "demo stopped after 15s",
        "  lines:  1120 in, 1120 out, in order (demo-data/output.txt)",
        "  orders: 606 Avro records in topic demo-orders",
    ]


def test_summary_explains_a_tail_in_flight():
    counts = DemoCounts(602, 6934, 6925, 30029, 3, 3)
    skipped = summary_lines(counts, True, "out.txt", "demo-orders", None)
    assert skipped[2:4] == [
        "          9 lines were still in flight (a second Ctrl-C cut the wait short);",
        "          the embedded broker keeps nothing: they are not delivered later",
    ]
    timed_out = summary_lines(counts, False, "out.txt", "demo-orders", 15.0)
    assert "NOT in input order" in timed_out[1]
    assert "(not written 15s after the stop);" in timed_out[2]
    assert all(len(line) <= WIDTH for line in skipped[2:] + timed_out[2:])


def test_summary_names_duplicates():
    lines = summary_lines(DemoCounts(5, 10, 12, 0, 3, 3), True, "o", "t", 0.0)
    assert "2 line(s) written twice" in lines[2]


def test_the_demo_output_in_the_docs_is_what_the_demo_prints():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- demo-output -->\n```text\n(.*?)```", text, re.S)
    assert block, "docs/index.md has no <!-- demo-output --> block"
    lines = block.group(1).splitlines()
    progress = re.compile(
        r" *(\d+)s  lines (\d+) in, (\d+) out  orders (\d+)  connectors (\d)/(\d)"
    )
    shown = [m for line in lines if (m := progress.match(line))]
    assert len(shown) >= 3
    for m in shown:  # each pasted line is exactly what progress_line renders for its counts
        counts = DemoCounts(*(int(g) for g in m.groups()))
        assert progress_line(counts) in lines
    stopped = lines.index(next(line for line in lines if line.startswith("demo stopped after")))
    m = re.fullmatch(r"  lines:  (\d+) in, (\d+) out, in order \((.*)\)", lines[stopped + 1])
    assert m, lines[stopped + 1]
    orders = re.fullmatch(r"  orders: (\d+) Avro records in topic demo-orders", lines[-1])
    assert orders, lines[-1]
    elapsed = int(lines[stopped].removeprefix("demo stopped after").removesuffix("s"))
    counts = DemoCounts(elapsed, int(m.group(1)), int(m.group(2)), int(orders.group(1)), 3, 3)
    assert summary_lines(counts, True, m.group(3), "demo-orders", 1.0) == lines[stopped:]
    assert "  note:    Debian's kcat (librdkafka 2.0.2) cannot talk to the embedded broker" in lines
