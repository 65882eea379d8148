"""ObjectStoreSinkTask: a sink task writing each assigned partition's records as objects.

Lifecycle (all on the task thread): ``start`` parses the config and connects to the store;
``open`` lists what is already written for the new partitions and seeks each past its last
complete file set (:mod:`~connectors.objectstore.recovery`); ``put`` reads the batch's columns
once, splits them by partition and hands each slice to that partition's
:class:`~connectors.objectstore.writer.PartitionWriter`, which writes whole file sets as they
fill; ``pre_commit`` writes sets due by ``rotate.schedule.interval.ms`` and returns, per
partition, only the offset after its last written set, so committed offsets never pass what
storage holds; ``close`` and ``stop`` drop the open sets (not committed, so written again by
the partition's next owner, under the same object names).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping

from connectors.objectstore.config import StoreConfig, parse_config
from connectors.objectstore.partitioners import Partitioner, make_partitioner
from connectors.objectstore.recovery import resume_offset
from connectors.objectstore.storage import ObjectStore, StoredObject
from connectors.objectstore.writer import BatchColumns, BuilderCache, PartitionWriter
from connectrt.api import (
    ConnectError,
    ErrantRecordReporter,
    RetriableError,
    SinkRecordBatch,
    SinkTask,
    TopicPartition,
)

log = logging.getLogger(__name__)

__all__ = ["VERSION", "ObjectStoreSinkTask"]

VERSION = "0.1.0"


class ObjectStoreSinkTask(SinkTask):
    def __init__(self) -> None:
        self._config: StoreConfig | None = None
        self._store: ObjectStore | None = None
        self._partitioner: Partitioner | None = None
        self._builders = BuilderCache()
        self._writers: dict[TopicPartition, PartitionWriter] = {}
        self._reporter: ErrantRecordReporter | None = None

    def version(self) -> str:
        return VERSION

    def start(self, config: Mapping[str, str]) -> None:
        self._config = parse_config(config)
        self._partitioner = make_partitioner(self._config)
        self._store = ObjectStore(self._config)
        try:
            self._store.check()
        except OSError as exc:
            raise ConnectError(f"Cannot reach {self._store.description}: {exc}") from exc
        self._reporter = self.context.errant_record_reporter

    # -- partitions ------------------------------------------------------------------------------
    def open(self, partitions: Collection[TopicPartition]) -> None:
        assert self._store is not None and self._config is not None
        listings: dict[str, list[StoredObject]] = {}
        seeks: dict[TopicPartition, int] = {}
        for tp in partitions:
            tp = TopicPartition(tp[0], tp[1])
            self._writer(tp)
            topic_dir = f"{self._config.topics_dir}/{tp.topic}".lstrip("/")
            if tp.topic not in listings:
                listings[tp.topic] = self._store.list(topic_dir)
            resume = resume_offset(self._store, listings[tp.topic], tp, self._config.format)
            if resume is not None:
                seeks[tp] = resume
                self._writers[tp].committable = resume
        if seeks:
            log.info("Resuming after the last written files: %s", seeks)
            self.context.offset(seeks)

    def _writer(self, tp: TopicPartition) -> PartitionWriter:
        writer = self._writers.get(tp)
        if writer is None:
            assert self._config is not None and self._store is not None
            assert self._partitioner is not None
            writer = self._writers[tp] = PartitionWriter(
                tp, self._config, self._store, self._partitioner, self._builders
            )
        return writer

    def close(self, partitions: Collection[TopicPartition]) -> None:
        for tp in partitions:
            writer = self._writers.pop(TopicPartition(tp[0], tp[1]), None)
            if writer is not None:
                writer.discard()

    # -- records ----------------------------------------------------------------------------------
    def put(self, records: SinkRecordBatch) -> None:
        if not records:
            return
        batch = SinkRecordBatch.of(records)
        columns = BatchColumns(batch.values, batch.value_schemas, batch.offsets, batch.timestamps)
        by_partition: dict[tuple[str, int | None], list[int]] = {}
        for i, tp in enumerate(zip(batch.topics, batch.partitions, strict=True)):
            indices = by_partition.get(tp)
            if indices is None:
                indices = by_partition[tp] = []
            indices.append(i)

        def report(index: int, error: BaseException) -> None:
            if self._reporter is None:
                raise ConnectError(
                    f"Cannot write the record at offset {columns.offsets[index]} of "
                    f"{batch.topics[index]}-{batch.partitions[index]}: {error}"
                ) from error
            self._reporter.report(batch[index], error)

        try:
            for (topic, partition), indices in by_partition.items():
                assert partition is not None  # consumed records always have one
                self._writer(TopicPartition(topic, partition)).add(columns, indices, report)
        except OSError as exc:
            # Storage failed mid-write: what was not written is not committable; fail the task
            # rather than retry this batch (records already in open sets would repeat).
            raise ConnectError(f"Writing to {self._description()} failed: {exc}") from exc

    def _description(self) -> str:
        return self._store.description if self._store is not None else "storage"

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        now = time.monotonic()
        out: dict[TopicPartition, int] = {}
        for tp in offsets:
            writer = self._writers.get(TopicPartition(tp[0], tp[1]))
            if writer is None:
                continue
            if writer.due(now):
                try:
                    writer.write()
                except OSError as exc:
                    # The runtime rewinds every partition to its committed offset after a
                    # failed pre_commit: drop what is buffered, or it would come twice.
                    for other in self._writers.values():
                        other.discard()
                    raise RetriableError(f"Writing to {self._description()}: {exc}") from exc
            if writer.committable is not None:
                out[tp] = writer.committable
        return out

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Nothing to do: open sets are written when they are full, never early, so that the
        files are the same when written again after a crash (see :meth:`pre_commit`)."""

    def stop(self) -> None:
        for writer in self._writers.values():
            writer.discard()
        self._writers.clear()
