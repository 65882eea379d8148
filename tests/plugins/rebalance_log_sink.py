"""A sink that logs what each task instance is given across rebalances, and checks the SinkTask
contract as it goes.

Every task instance (a task started again after a restart is a new instance) keeps the set of
partitions it has open: ``open()`` must bring only partitions it does not have open, ``close()``
only partitions it has open, and ``put()`` only records of open partitions; anything else is
written down in ``violations``. Deliveries are logged in the order ``put()`` received them,
and so is each *resume point*: the first offset a task instance was given of a partition
after opening it, which is where the consumer group's committed offset let it start.

Configs: ``topics``, ``tasks.max``, ``log.id`` (the key of the shared :data:`LOGS` entry).
The log lives in this process: use it with an in-process worker.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from connectrt.api import ConfigDef, SinkConnector, SinkRecord, SinkTask, Task, TopicPartition


@dataclass
class RebalanceLog:
    """What the tasks of one connector were given; guarded by :data:`LOCK`."""

    deliveries: list[tuple[int, int, str]] = field(default_factory=list)
    """(partition, offset, task instance) in delivery order."""
    resumes: list[tuple[int, int, int]] = field(default_factory=list)
    """(index into ``deliveries`` of the first record, partition, offset) per open."""
    opened: dict[str, list[list[int]]] = field(default_factory=lambda: defaultdict(list))
    """task instance -> partitions of each ``open()`` call."""
    closed: dict[str, list[list[int]]] = field(default_factory=lambda: defaultdict(list))
    """task instance -> partitions of each ``close()`` call."""
    holding: dict[str, set[int]] = field(default_factory=dict)
    """task instance -> partitions it has open now."""
    violations: list[str] = field(default_factory=list)


LOGS: dict[str, RebalanceLog] = defaultdict(RebalanceLog)
LOCK = threading.Lock()
_instances = itertools.count()


class RebalanceLogSink(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return RebalanceLogSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.index": str(i)} for i in range(max_tasks)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class RebalanceLogSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.log = LOGS[config["log.id"]]
        self.name = f"task-{config['task.index']}#{next(_instances)}"
        self.open_partitions: set[int] = set()
        with LOCK:
            self.log.holding[self.name] = self.open_partitions
        self.fresh: set[int] = set()  # opened, nothing delivered yet

    def open(self, partitions: Collection[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        with LOCK:
            self.log.opened[self.name].append(numbers)
            again = self.open_partitions.intersection(numbers)
            if again:
                self.log.violations.append(f"{self.name}: open() of open partitions {again}")
            self.open_partitions.update(numbers)
        self.fresh.update(numbers)

    def put(self, records: list[SinkRecord]) -> None:
        with LOCK:
            for r in records:
                partition = r.kafka_partition or 0
                offset = r.kafka_offset
                assert offset is not None
                if partition not in self.open_partitions:
                    self.log.violations.append(
                        f"{self.name}: put() of offset {offset} of partition {partition}, "
                        "which it has not open"
                    )
                if partition in self.fresh:
                    self.fresh.discard(partition)
                    self.log.resumes.append((len(self.log.deliveries), partition, offset))
                self.log.deliveries.append((partition, offset, self.name))

    def close(self, partitions: Collection[TopicPartition]) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        with LOCK:
            self.log.closed[self.name].append(numbers)
            unknown = set(numbers) - self.open_partitions
            if unknown:
                self.log.violations.append(f"{self.name}: close() of partitions {unknown} not open")
            self.open_partitions.difference_update(numbers)
        self.fresh.difference_update(numbers)

    def stop(self) -> None:
        pass
