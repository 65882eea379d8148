"""LogTail (connectrt.spark.topic_logs): the thread that follows the Spark signal and status
topics. A stand-in log records the calls; no broker."""

from __future__ import annotations

import threading
from typing import Any, cast

from connectrt.errors import ConnectError
from connectrt.spark.topic_logs import LogTail
from connectrt.storage.kafka_log import TopicLog

WAIT_S = 30.0


class _Log:
    """Answers read_to_end with the next of ``outcomes`` (an exception is raised)."""

    topic = "signals"

    def __init__(self, outcomes: list[BaseException | None]) -> None:
        self.outcomes = outcomes
        self.calls: list[str] = []
        self.live_at_start: bool | None = None
        self.tail: LogTail | None = None
        self.reads_done = threading.Event()

    def start(self) -> None:
        assert self.tail is not None
        self.live_at_start = self.tail.live
        self.calls.append("start")

    def read_to_end(self) -> None:
        self.calls.append("read")
        if not self.outcomes:
            self.reads_done.set()
            return
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome

    def stop(self, timeout: float) -> None:
        self.calls.append("stop")


def test_replays_before_going_live_and_reads_on_through_failures() -> None:
    fake = _Log([ConnectError("broker away"), RuntimeError("callback broke"), None])
    tail = LogTail(cast(TopicLog, fake), "signals-test", "task signals")
    fake.tail = tail
    assert not tail.live
    tail.start()
    assert fake.live_at_start is False  # the replay runs before the tail is live
    assert tail.live
    assert fake.reads_done.wait(WAIT_S), "the tail stopped reading after a failed read"
    tail.stop()
    assert fake.calls[0] == "start"
    assert fake.calls[-1] == "stop"
    assert fake.calls.count("read") >= 4


def test_stop_without_start_stops_the_log() -> None:
    fake: Any = _Log([])
    tail = LogTail(cast(TopicLog, fake), "signals-test", "task signals")
    tail.stop()
    assert fake.calls == ["stop"]
