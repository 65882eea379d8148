"""Where a record-at-a-time task's time goes: CPU per record of each step, no broker.

Not a throughput bench (no ``RESULT`` line): a profile of what ``bench_source.py
--records-path`` and ``bench_sink.py --records-path`` measure end to end, step by step, on the
task thread, in process, so that it holds on a busy machine (thread CPU time, the minimum over
many repeats, steps interleaved):

* source: the raw loop's ``produce`` per value; building ``SourceRecord`` s (positional, with
  ``value=`` as the README does, all keywords); the runtime's list path over built records
  (``SourceBatchSender.send``: the C pass over the list, ``produce`` with the at-least-once
  delivery callback as a worker passes it, offsets); a ``SourceRecordBatch``. The producer
  points at no broker: ``produce`` only enqueues, and the queue is purged between repeats
  outside the clock.
* sink: over real ``confluent_kafka.Message`` s (500 per batch, ByteArrayConverter), the raw
  loop's per-message work (``error()``, ``value()``, ``len``); ``put()`` reading the values
  column; ``put()`` iterating ``SinkRecord`` s (reading the value; then 7 fields), and that
  path's parts: the batch's error check and partitions (one accessor call per message each),
  each column, the records built from them and freed (the C extension's filler where in use,
  and the Python loop), the floor of one slotted record (``object.__new__``, 13 slot stores);
  and the runner's own per-batch work beside the conversion (the end-to-end latency sample:
  32 timestamps read and filed). ``CONNECTRT_PURE_PYTHON=1`` profiles the pure-Python paths.

``consume()``/``produce()``'s own C work and the broker are the same on both sides of the
benches and are not in these figures except ``produce``'s enqueueing (source rows).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import _common as c  # puts the repository root on sys.path
from confluent_kafka import Message, Producer

from connectrt.api import SinkRecord, SourceRecord, SourceRecordBatch, SourceTask, record_batch
from connectrt.api.record_batch import _FIELDS
from connectrt.api.records import SOURCE_FILLER
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.runtime.clients.settings import PRODUCER_DEFAULTS
from connectrt.runtime.executors.gc_tuning import tune_gc
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.sink.conversion import SinkConversion
from connectrt.runtime.sink.latency import observe_put, timestamps_sample
from connectrt.runtime.sink.message_batch import partition_positions, split_errors
from connectrt.runtime.source.sender import SourceBatchSender
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId

TOPIC = "t"


def best_ns(
    cases: list[tuple[str, Callable[[], Any], int]],
    repeats: int,
    after: Callable[[], Any] | None = None,
) -> dict[str, float]:
    """The minimum thread CPU time per record of each case (name, step, records per call),
    the cases interleaved, their order alternating; ``after`` runs after each step, outside the
    clock."""
    best = {name: float("inf") for name, _, _ in cases}
    for r in range(repeats):
        for name, step, n in cases if r % 2 else cases[::-1]:
            t0 = time.thread_time_ns()
            step()
            best[name] = min(best[name], (time.thread_time_ns() - t0) / n)
            if after is not None:
                after()
    return best


class _Task(SourceTask):
    def start(self, config: Any) -> None:
        pass

    def poll(self) -> None:
        return None

    def stop(self) -> None:
        pass


def _converters() -> TaskConverters:
    key, value = ByteArrayConverter(), ByteArrayConverter()
    key.configure({}, True)
    value.configure({}, False)
    return TaskConverters(key, value, None)  # type: ignore[arg-type]  # headers: none


class _Offsets:
    def __init__(self) -> None:
        self.pending: dict[bytes, Any] = {}
        self.pending_records = 0
        # at-least-once: every record produced with its epoch's callback (ack_epochs.AckEpoch),
        # as in a worker: confluent-kafka holds it per queued record
        self.delivery_callback = _on_delivery


def _on_delivery(err: Any, msg: Any) -> None:
    """The delivery callback the sender passes to ``produce`` (never called here)."""


def source_profile(repeats: int, batch: int = 2000) -> dict[str, float]:
    producer = Producer(
        {
            **PRODUCER_DEFAULTS,
            "bootstrap.servers": "127.0.0.1:9",  # nobody: produce() only enqueues
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "enable.idempotence": False,
            "log_level": 0,
        }
    )
    tid = TaskId("profile", 0)
    metrics = TaskMetrics("profile", 0)
    sender = SourceBatchSender(
        tid,
        _Task(),
        converters=_converters(),
        errors=ErrorHandler(tid, ErrorPolicy(), metrics),
        metrics=metrics,
        offsets=_Offsets(),
        topic_creator=None,
        on_topic=lambda topic: None,
        stopping=lambda: False,
    )
    sender.topics.add(TOPIC)
    values = [bytes([i % 256]) * 100 for i in range(batch)]
    part = {"task": "0"}
    plain_values = (lambda records: None) if SOURCE_FILLER is None else SOURCE_FILLER.plain_values
    produce = producer.produce

    def purge() -> None:
        # Outside the clock: purged records hold their place in the queue (and its
        # queue.buffering.max.messages bound) until their delivery reports are served
        # (about 130 ns a record, which no side pays in a real run's produce call).
        producer.purge(in_queue=True)
        producer.poll(0)

    def raw() -> None:
        for v in values:
            produce(TOPIC, v)

    def build_positional() -> list[SourceRecord]:
        off = {"n": 1}
        return [SourceRecord(part, off, TOPIC, None, None, None, None, v) for v in values]

    def build_value_keyword() -> list[SourceRecord]:
        off = {"n": 1}
        return [SourceRecord(part, off, TOPIC, value=v) for v in values]

    def build_keywords() -> list[SourceRecord]:
        off = {"n": 1}
        return [
            SourceRecord(source_partition=part, source_offset=off, topic=TOPIC, value=v)
            for v in values
        ]

    built = build_positional()
    return best_ns(
        [
            ("source raw produce loop", raw, batch),
            ("SourceRecord(...) positional", build_positional, batch),
            ("SourceRecord(..., value=v) (README)", build_value_keyword, batch),
            ("SourceRecord(all keywords)", build_keywords, batch),
            (
                "runtime list path over built records",
                lambda: sender.send(built, producer),
                batch,
            ),
            ("  of which the C pass (plain_values)", lambda: plain_values(built), batch),
            (
                "  of which offsets noted",
                lambda: sender._note_offsets(built, batch, one_partition=True),
                batch,
            ),
            (
                "task list + runtime (bench --records-path)",
                lambda: sender.send(build_positional(), producer),
                batch,
            ),
            (
                "SourceRecordBatch + runtime (bench default)",
                lambda: sender.send(
                    SourceRecordBatch(part, [{"n": 1}] * batch, TOPIC, values[:]), producer
                ),
                batch,
            ),
        ],
        repeats,
        purge,
    )


def sink_profile(repeats: int, batch: int = 500) -> dict[str, float]:
    values = [bytes([i % 256]) * 100 for i in range(batch)]
    msgs = [
        Message(
            topic=TOPIC,
            partition=0,
            offset=i,
            key=None,
            value=values[i],
            timestamp=(1, 1_700_000_000_000 + i),
            headers=None,
        )
        for i in range(batch)
    ]

    class _Headers:
        READ_NEVER_FAILS = True

        def to_connect_header(self, topic: str, key: str, value: Any) -> tuple[Any, Any]:
            return None, value

    key, value = ByteArrayConverter(), ByteArrayConverter()
    key.configure({}, True)
    value.configure({}, False)
    tid = TaskId("profile", 0)
    metrics = TaskMetrics("profile", 0)
    conversion = SinkConversion(
        TaskConverters(key, value, _Headers()),  # type: ignore[arg-type]
        ErrorHandler(tid, ErrorPolicy(), metrics),
        metrics,
        TOPIC,
        None,
    )

    def raw() -> int:
        nbytes = 0
        for m in msgs:
            if m.error() is None:
                v = m.value()
                nbytes += len(v) if v else 0
        return nbytes

    def convert() -> Any:
        return conversion.convert(split_errors(msgs)[0]).batch

    def put_values() -> int:
        return sum(map(len, convert().values))

    def put_records() -> int:
        return sum(len(r.value) for r in convert())

    def put_records_all_fields() -> int:
        n = 0
        for r in convert():
            r.topic, r.kafka_partition, r.kafka_offset, r.key, r.timestamp, r.headers  # noqa: B018
            n += len(r.value)
        return n

    def column(name: str) -> Callable[[], Any]:
        def step() -> None:
            b = convert()
            t0 = time.thread_time_ns()
            b._base(name)
            column_ns[name] = min(column_ns.get(name, 1e18), time.thread_time_ns() - t0)

        return step

    column_ns: dict[str, float] = {}
    new = object.__new__

    def floor() -> list[Any]:
        out = []
        x = None
        for _ in range(batch):
            r = new(SinkRecord)
            r.topic = x
            r.kafka_partition = x
            r.key_schema = x
            r.key = x
            r.value_schema = x
            r.value = x
            r.kafka_offset = x
            r.timestamp = x
            r.timestamp_type = x
            r.headers = x
            r.original_topic = x
            r.original_kafka_partition = x
            r.original_kafka_offset = x
            out.append(r)
        return out

    built = convert()
    columns = tuple([built._base(name) for name, _ in _FIELDS])

    out = best_ns(
        [
            ("sink raw per-message loop", raw, batch),
            ("put() reading the values column", put_values, batch),
            ("put() iterating SinkRecords", put_records, batch),
            ("  the same, reading 7 fields of each", put_records_all_fields, batch),
            ("  of which the batch (no columns read)", convert, batch),
            ("    of which the error check", lambda: split_errors(msgs), batch),
            ("    of which the partitions", lambda: partition_positions(msgs, TOPIC), batch),
            (
                "  of which records from built columns",
                lambda: record_batch._make_records(columns),
                batch,
            ),
            (
                "    the same, pure-Python loop",
                lambda: record_batch._make_records_py(columns),
                batch,
            ),
            ("  floor: new + 13 slot stores + append", floor, batch),
            (
                "runner per batch: latency sample + e2e histogram",
                lambda: observe_put(metrics, timestamps_sample(msgs), batch),
                batch,
            ),
        ],
        repeats,
    )
    for name, _ in _FIELDS:
        if not name.startswith("original"):
            best_ns([(name, column(name), batch)], max(repeats // 4, 10))
    for name, ns in column_ns.items():
        shared = " (one computation with timestamps)" if name == "timestamp_types" else ""
        out[f"  column {name}{shared}"] = ns / batch
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--side", choices=("both", "source", "sink"), default="both")
    args = ap.parse_args()
    tune_gc()
    one, five, fifteen = os.getloadavg()
    print(
        f"profile_record_paths: CPU ns per record (thread time, min of {args.repeats}); "
        f"{c.machine()}; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"
    )
    for title, profile in (("source", source_profile), ("sink", sink_profile)):
        if args.side not in ("both", title):
            continue
        print(f"== {title}")
        for name, ns in profile(args.repeats).items():
            print(f"  {ns:8.1f} ns  {name}")


if __name__ == "__main__":
    main()
