"""A sink that records what it receives, with switches to exercise the SinkTaskContext."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Collection, Mapping

from connectrt.api import (
    ConfigDef,
    ConnectError,
    RetriableError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Task,
    TopicPartition,
)

# store id -> received (topic, partition, offset, value); shared with the test thread.
RECEIVED: dict[str, list[tuple[str, int, int, object]]] = defaultdict(list)
FLUSHED: dict[str, list[dict[TopicPartition, int]]] = defaultdict(list)
LOCK = threading.Lock()


class RecordingSink(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return RecordingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class RecordingSinkTask(SinkTask):
    """Switches (task config): ``store.id``; ``fail.retriable.times``; ``fail.fatal.at``
    (fail on the put that reaches this many records); ``rewind.on.open`` (offset);
    ``request.commit`` (true)."""

    def start(self, config: Mapping[str, str]) -> None:
        self.store = config["store.id"]
        self.retriable_left = int(config.get("fail.retriable.times", "0"))
        self.fatal_at = int(config.get("fail.fatal.at", "0"))
        self.rewind = config.get("rewind.on.open")
        self.request_commit = config.get("request.commit") == "true"

    def open(self, partitions: Collection[TopicPartition]) -> None:
        if self.rewind is not None:
            self.context.offset({tp: int(self.rewind) for tp in partitions})

    def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        if self.retriable_left > 0:
            self.retriable_left -= 1
            self.context.timeout(50)
            raise RetriableError("destination briefly unavailable")
        with LOCK:
            received = RECEIVED[self.store]
            if self.fatal_at and len(received) + len(records) >= self.fatal_at:
                raise ConnectError("destination rejected the batch")
            received.extend(
                (r.topic, r.kafka_partition or 0, r.kafka_offset, r.value) for r in records
            )
        if self.request_commit:
            self.context.request_commit()

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        with LOCK:
            FLUSHED[self.store].append(dict(offsets))

    def stop(self) -> None:
        pass
