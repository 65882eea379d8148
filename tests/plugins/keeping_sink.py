"""A sink that treats ``put()``'s batch as a third-party sink treats Kafka Connect's list.

It keeps every record it is given (as a buffering sink does), appends ``+kept`` to each string
value, and checks on every put that:

* the records it kept from earlier puts still carry their change;
* indexing gives the same object for the same index, and iterating gives those objects;
* the ``values`` column read before any record was built equals the records' values, and the
  column read after the change shows the change; the coordinates and timestamps columns agree
  with the records, whose timestamps are the producer's ``CreateTime``;
* with ``expect.headers=true``: each record at an even offset has the header ``n`` with its
  offset as value (converted by the header converter), the others none.

Anything wrong is appended to ``PROBLEMS[store.id]`` (the test asserts it stays empty). Each put
is logged in ``PUTS[store.id]`` as (offsets, whether the batch came as columns: it has the raw
bytes, which a batch of already-built records does not). ``flush`` publishes the kept values
in ``KEPT[store.id]``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping

from connectrt.api import (
    ConfigDef,
    SinkConnector,
    SinkRecordBatch,
    SinkTask,
    Task,
    TimestampType,
    TopicPartition,
)

PROBLEMS: dict[str, list[str]] = defaultdict(list)
PUTS: dict[str, list[tuple[list[int], bool]]] = defaultdict(list)
KEPT: dict[str, list[tuple[str, list[str]]]] = {}
LOCK = threading.Lock()


class KeepingSink(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return KeepingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class KeepingSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.store = config["store.id"]
        self.expect_headers = config.get("expect.headers") == "true"
        self.kept: list = []

    def _problem(self, text: str) -> None:
        with LOCK:
            PROBLEMS[self.store].append(text)

    def put(self, records: SinkRecordBatch) -> None:
        for record in self.kept:
            if not record.value.endswith("+kept"):
                self._problem(f"kept record at {record.kafka_offset} lost its change")
        # The columns, before any record is built.
        values = records.values
        stamps = list(zip(records.timestamps, records.timestamp_types, strict=True))
        coords = list(zip(records.topics, records.partitions, records.offsets, strict=True))
        columns = records.raw_values is not None
        first, last = records[0], records[-1]
        if records[0] is not first or records[len(records) - 1] is not last:
            self._problem("indexing gave another object for the same index")
        listed = list(records)
        if listed[0] is not first or listed[-1] is not last:
            self._problem("iterating gave other objects than indexing")
        if [r.value for r in listed] != list(values):
            self._problem("the values column disagrees with the records")
        if [(r.timestamp, r.timestamp_type) for r in listed] != stamps or any(
            not isinstance(r.timestamp, int) or r.timestamp_type is not TimestampType.CREATE_TIME
            for r in listed
        ):
            self._problem("timestamps: not the producer's CreateTime, or columns disagree")
        if [(r.topic, r.kafka_partition, r.kafka_offset) for r in listed] != coords:
            self._problem("the coordinates columns disagree with the records")
        for record in records:
            if self.expect_headers:
                offset = record.kafka_offset
                want = [("n", offset)] if offset % 2 == 0 else []
                if [(h.key, h.value) for h in record.headers or []] != want:
                    self._problem(f"record {offset} has headers {record.headers}")
            record.value = f"{record.value}+kept"
            self.kept.append(record)
        if records.values != tuple(f"{v}+kept" for v in values):
            self._problem("the values column does not show the records' change")
        with LOCK:
            PUTS[self.store].append(([r.kafka_offset for r in records], columns))

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        with LOCK:
            KEPT[self.store] = [(r.value, [h.key for h in r.headers or []]) for r in self.kept]

    def stop(self) -> None:
        pass
