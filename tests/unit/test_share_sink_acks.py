"""The acknowledgement rules of a share-group sink task, on a real ShareSinkTaskRunner (no broker).

The runner's share consumer is a scripted in-memory one: each ``poll()`` hands over the next
scripted batch (messages with a delivery count), and once the script is done it asks the runner
to stop. What the consumer was told (acknowledgements, commits) and what the task saw (puts,
flushes) go to one event list, so the order is checked too:

* a written record is ACCEPTed only after ``put()`` and ``flush()`` returned, and the
  acknowledgements are sent (``commit_sync``) before the next poll;
* an acquisition larger than ``max.poll.records`` is written and acknowledged in chunks;
* a RetriableError from ``put()`` RELEASEs the batch; on a record's last delivery it goes
  through ``errors.*`` instead: tolerated without a dead letter queue it is REJECTed, with
  ``errors.tolerance=none`` the task fails;
* a record a converter failed on, tolerated without a dead letter queue, is REJECTed while the
  rest of its batch is ACCEPTed;
* the group's configs are set before the consumer is created, from the connector's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api import SinkRecord, SinkTask, TopicPartition
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers.converter import SimpleHeaderConverter
from connectrt.converters.json import JsonConverter
from connectrt.errors import RetriableError
from connectrt.runtime.clients.share_consumer import Ack, share_consumer_config
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.share_runner import ShareSinkRunnerSettings, ShareSinkTaskRunner
from connectrt.runtime.status import StatusBoard
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId
from connectrt.runtime.tasks.tap import TapSubscription

TASK = TaskId("c", 0)


class _Msg:
    """A share-consumed record: librdkafka's Message accessors plus ``delivery_count``."""

    def __init__(self, offset: int, value: bytes, deliveries: int = 1) -> None:
        self._offset = offset
        self._value = value
        self._deliveries = deliveries

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes:
        return self._value

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (1, 0)

    def error(self) -> None:
        return None

    def delivery_count(self) -> int:
        return self._deliveries


class _Consumer:
    """Scripted share consumer: ``batches`` one per poll, then it stops the runner."""

    def __init__(self, batches: list[list[_Msg]], events: list[tuple[str, Any]]) -> None:
        self.batches = batches
        self.events = events
        self.runner: ShareSinkTaskRunner | None = None
        self.config: dict[str, Any] = {}

    def subscribe(self, topics: list[str]) -> None:
        self.events.append(("subscribe", topics))

    def poll(self, timeout: float = -1) -> list[_Msg]:
        if not self.batches:
            assert self.runner is not None
            self.runner.stop()
            return []
        return self.batches.pop(0)

    def acknowledge(self, message: Any, ack_type: Any = Ack.ACCEPT) -> None:
        self.events.append((Ack(ack_type).name, message.offset()))

    def commit_sync(self, timeout: float = 60) -> dict[Any, Any]:
        self.events.append(("commit", None))
        return {}

    def close(self) -> None:
        self.events.append(("close", None))


class _Task(SinkTask):
    def __init__(self, events: list[tuple[str, Any]], fail: list[BaseException]) -> None:
        self.events = events
        self.fail = fail

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def open(self, partitions: Any) -> None:
        self.events.append(("open", sorted(tp.partition for tp in partitions)))

    def put(self, records: list[SinkRecord]) -> None:
        if self.fail:
            raise self.fail.pop(0)
        self.events.append(("put", [r.kafka_offset for r in records]))

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.events.append(("flush", {tp.partition: o for tp, o in offsets.items()}))

    def stop(self) -> None:
        pass


def _run(
    batches: list[list[_Msg]],
    *,
    fail: list[BaseException] | None = None,
    policy: ErrorPolicy | None = None,
    max_poll: int = 10,
    json_values: bool = False,
    connector: dict[str, str] | None = None,
    taps: tuple[TapSubscription, ...] = (),
) -> tuple[ShareSinkTaskRunner, list[tuple[str, Any]], list[tuple[str, dict[str, str]]]]:
    events: list[tuple[str, Any]] = []
    configured: list[tuple[str, dict[str, str]]] = []
    consumer = _Consumer(batches, events)
    header = SimpleHeaderConverter()
    header.configure({})
    value: Any = ByteArrayConverter()
    if json_values:
        value = JsonConverter()
        value.configure({"schemas.enable": "false"}, False)

    def configurer(
        admin: dict[str, Any], group: str, settings: dict[str, str], timeout: float
    ) -> dict[str, str]:
        configured.append((group, dict(settings)))
        events.append(("group configs", group))
        return {"share.delivery.count.limit": "3", "share.record.lock.duration.ms": "30000"}

    def factory(config: dict[str, Any]) -> Any:
        consumer.config = config
        return consumer

    errors = ErrorHandler(TASK, policy or ErrorPolicy(), TaskMetrics("c", 0))
    settings = ShareSinkRunnerSettings(
        task_config={"topics": "t"},
        converters=TaskConverters(ByteArrayConverter(), value, header),
        status=StatusBoard("test"),
        offset_flush_interval_ms=3_600_000,
        consumer_config={"group.id": "connect-c", "auto.offset.reset": "earliest"},
        max_poll_records=max_poll,
        errors=errors,
        group_id="connect-c",
        group_settings={"share.auto.offset.reset": "earliest", **(connector or {})},
        share_consumer_factory=factory,
        group_configurer=configurer,
    )
    runner = ShareSinkTaskRunner(TASK, _Task(events, list(fail or [])), settings)
    consumer.runner = runner
    for sub in taps:
        runner.tap_into(sub)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "the runner did not stop within 30 s"
    return runner, events, configured


def _acks(events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [e for e in events if e[0] in ("ACCEPT", "RELEASE", "REJECT")]


def test_records_are_accepted_after_put_and_flush_returned() -> None:
    runner, events, configured = _run([[_Msg(0, b"a"), _Msg(1, b"b")], [_Msg(2, b"c")]])
    assert runner.failed is None
    assert configured == [("connect-c", {"share.auto.offset.reset": "earliest"})]
    assert events[:2] == [("group configs", "connect-c"), ("subscribe", ["t"])]
    body = [e for e in events if e[0] not in ("group configs", "subscribe", "close")]
    assert body == [
        ("open", [0]),
        ("put", [0, 1]),
        ("flush", {0: 2}),
        ("ACCEPT", 0),
        ("ACCEPT", 1),
        ("commit", None),
        ("put", [2]),
        ("flush", {0: 3}),
        ("ACCEPT", 2),
        ("commit", None),
    ]
    m = runner.metrics
    assert (m.share_acquired, m.share_accepted, m.share_released, m.share_rejected) == (3, 3, 0, 0)


def test_a_large_acquisition_is_written_and_acknowledged_in_chunks() -> None:
    runner, events, _ = _run([[_Msg(i, b"x") for i in range(5)]], max_poll=2)
    assert runner.failed is None
    puts = [e[1] for e in events if e[0] == "put"]
    assert puts == [[0, 1], [2, 3], [4]]
    # each chunk acknowledged (and sent) before the next is put
    order = [e[0] for e in events if e[0] in ("put", "ACCEPT", "commit")]
    assert order == ["put", "ACCEPT", "ACCEPT", "commit"] * 2 + ["put", "ACCEPT", "commit"]


def test_a_retriable_put_releases_the_batch_for_redelivery() -> None:
    batches = [[_Msg(0, b"a"), _Msg(1, b"b")], [_Msg(0, b"a", 2), _Msg(1, b"b", 2)]]
    runner, events, _ = _run(batches, fail=[RetriableError("busy")])
    assert runner.failed is None
    assert _acks(events) == [("RELEASE", 0), ("RELEASE", 1), ("ACCEPT", 0), ("ACCEPT", 1)]
    assert runner.metrics.share_released == 2 and runner.metrics.share_archived == 0


def test_last_delivery_tolerated_without_dlq_is_rejected() -> None:
    batches = [[_Msg(0, b"a", 3), _Msg(1, b"b", 1)]]  # limit 3: offset 0 is on its last one
    runner, events, _ = _run(
        batches, fail=[RetriableError("busy")], policy=ErrorPolicy(tolerate_all=True)
    )
    assert runner.failed is None
    assert sorted(_acks(events)) == [("REJECT", 0), ("RELEASE", 1)]
    assert runner.metrics.share_rejected == 1


def test_last_delivery_without_tolerance_fails_the_task() -> None:
    runner, events, _ = _run([[_Msg(0, b"a", 3)]], fail=[RetriableError("busy")])
    assert runner.failed is not None
    assert "Tolerance exceeded" in str(runner.failed)
    assert _acks(events) == [("RELEASE", 0)]
    assert runner.metrics.share_archived == 1


def test_a_tolerated_conversion_failure_without_dlq_is_rejected() -> None:
    batch = [_Msg(0, json.dumps(1).encode()), _Msg(1, b"{poison"), _Msg(2, b"3")]
    runner, events, _ = _run([batch], policy=ErrorPolicy(tolerate_all=True), json_values=True)
    assert runner.failed is None
    assert [e for e in events if e[0] == "put"] == [("put", [0, 2])]
    assert _acks(events) == [("ACCEPT", 0), ("REJECT", 1), ("ACCEPT", 2)]


def test_a_failed_put_fails_the_task_without_acknowledging() -> None:
    runner, events, _ = _run([[_Msg(0, b"a")]], fail=[OSError("disk full")])
    assert runner.failed is not None and "disk full" in str(runner.failed)
    assert _acks(events) == []
    assert events[-1] == ("close", None)  # the consumer leaves: its records go back


@pytest.mark.parametrize("key", ["auto.offset.reset", "enable.auto.commit", "session.timeout.ms"])
def test_the_share_consumer_config_leaves_out_consumer_group_settings(key: str) -> None:
    cfg = share_consumer_config({"group.id": "g", key: "x", "client.id": "c"}, 50)
    assert key not in cfg
    assert cfg["share.acknowledgement.mode"] == "explicit"
    assert cfg["max.poll.records"] == 50 and cfg["group.id"] == "g"


def test_the_record_inspector_samples_a_share_group_sink() -> None:
    read, written = TapSubscription("read"), TapSubscription("written")
    runner, _, _ = _run([[_Msg(0, b"a"), _Msg(1, b"b")]], taps=(read, written))
    assert runner.failed is None
    assert runner.tap_kind == "sink"
    assert read.events.get_nowait()["stage"] == "read"
    assert written.events.get_nowait()["stage"] == "written"
