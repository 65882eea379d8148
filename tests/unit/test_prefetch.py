"""``connectrt.testing.prefetch``: every step runs, a failing one is reported in one line and
counted, never raised, and the lanes run at once."""

from __future__ import annotations

import threading

from connectrt.testing.prefetch import LANES, prepare


def test_a_failing_step_is_reported_and_the_rest_still_run() -> None:
    ran: list[str] = []
    lines: list[str] = []
    both_lanes_in = threading.Barrier(2, timeout=10)  # breaks unless the lanes overlap

    def ok(name: str) -> tuple[str, object]:
        return name, lambda: ran.append(name)

    def meet() -> None:
        both_lanes_in.wait()

    def broken() -> None:
        raise RuntimeError("no Java\nhere")

    failed = prepare(
        {
            "a": [("meet a", meet), ("broken", broken), ok("after broken")],  # type: ignore[list-item]
            "b": [("meet b", meet), ok("b1")],  # type: ignore[list-item]
        },
        out=lines.append,
    )
    assert failed == 1
    assert sorted(ran) == ["after broken", "b1"]
    assert "prefetch: broken: not prepared (no Java here)" in lines
    assert sum("ready" in line for line in lines) == 4


def test_the_lanes_name_what_the_suite_fetches_or_builds() -> None:
    names = {name for steps in LANES.values() for name, _ in steps}
    assert {"Apache Kafka jars", "Jaeger binary", "Chromium", "PostgreSQL"} <= names
