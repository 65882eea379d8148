"""Re-delivering a source connector's dead letter records: back through its transforms and
converters, to their topic.

A source DLQ record is a document of the failed record
(:mod:`connectrt.runtime.tasks.dlq_documents`). What still has to happen to it depends on where it
failed: a record that failed in ``TRANSFORMATION`` is the record as polled and runs through the
connector's transforms again; one that failed later (a converter, ``KAFKA_PRODUCE``) was
transformed already and is only converted. A document that does not say (written before connectrt
recorded the stage) is taken as transformed.

:class:`SourceRecordReplayer` turns one document into what to produce, or into the failures to
send back to the DLQ. Built per replay run with the connector's current converters and
transforms (so a fixed config takes effect) and used from that run's thread only; ``close``
releases the transforms.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api.records import SourceRecord
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.runner_factory import create_converter
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.tasks.dlq_documents import source_record_from_document
from connectrt.runtime.tasks.runner import TaskConverters, TaskStage, class_path
from connectrt.transforms.chain import TransformationChain, failed_transformation

__all__ = ["Encoded", "ReplayFailure", "SourceRecordReplayer"]


@dataclass(frozen=True)
class Encoded:
    """One record ready to produce."""

    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int | None
    record: SourceRecord


@dataclass(frozen=True)
class ReplayFailure:
    """A record that failed again: the stage, the failing class, the error and its rendered
    stack trace, and the record as it was at that stage (what goes back to the DLQ)."""

    stage: str
    class_name: str
    error: BaseException
    record: SourceRecord
    trace: str

    @classmethod
    def of(
        cls, stage: str, class_name: str, error: BaseException, record: SourceRecord
    ) -> ReplayFailure:
        """The failure with ``error``'s trace rendered and its traceback dropped: the frames
        it holds would keep the replay run's clients alive until a garbage collection."""
        trace = "".join(traceback.format_exception(error))
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:  # the causes hold frames too
            seen.add(id(current))
            current.__traceback__ = None
            current = current.__cause__ or current.__context__
        return cls(stage, class_name, error, record, trace)


class SourceRecordReplayer:
    """See the module docstring."""

    def __init__(self, converters: TaskConverters, transforms: TransformationChain[Any] | None):
        self._converters = converters
        self._transforms = transforms

    @classmethod
    def for_connector(
        cls, worker_config: WorkerConfig, plugins: PluginRegistry, config: Mapping[str, str]
    ) -> SourceRecordReplayer:
        """With the converters and transforms ``config`` (resolved) gives a task."""

        def converter(kind: str) -> Any:
            return create_converter(
                plugins,
                config,
                kind,
                lambda: (worker_config.converter_class(kind), worker_config.converter_config(kind)),
            )

        converters = TaskConverters(converter("key"), converter("value"), converter("header"))
        transforms: TransformationChain[Any] | None = None
        if config.get("transforms", "").strip():
            transforms = TransformationChain(config, plugins.transform_class)
        return cls(converters, transforms)

    def close(self) -> None:
        if self._transforms is not None:
            self._transforms.close()

    def replay(self, value: bytes | None) -> tuple[list[Encoded], list[ReplayFailure]]:
        """The records of DLQ document ``value`` to produce, and those that failed again (a
        transform may fan one record out). Raises
        :class:`~connectrt.runtime.tasks.dlq_documents.UnreadableDocument`."""
        record, stage = source_record_from_document(value)
        records = [record]
        if stage == TaskStage.TRANSFORMATION and self._transforms is not None:
            try:
                records = self._transforms.apply(record)
            except Exception as e:
                name = failed_transformation(e) or class_path(self._transforms)
                return [], [ReplayFailure.of(TaskStage.TRANSFORMATION, name, e, record)]
        encoded: list[Encoded] = []
        failures: list[ReplayFailure] = []
        for r in records:
            result = self._encode(r)
            if isinstance(result, ReplayFailure):
                failures.append(result)
            else:
                encoded.append(result)
        return encoded, failures

    def _encode(self, record: SourceRecord) -> Encoded | ReplayFailure:
        conv, topic = self._converters, record.topic
        stage: str = TaskStage.KEY_CONVERTER
        converter: object = conv.key
        try:
            key = None
            if record.key is not None or record.key_schema is not None:
                key = conv.key.from_connect_data(topic, record.key_schema, record.key)
            stage, converter = TaskStage.VALUE_CONVERTER, conv.value
            value = conv.value.from_connect_data(topic, record.value_schema, record.value)
            stage, converter = TaskStage.HEADER_CONVERTER, conv.header
            headers = [
                (h.key, conv.header.from_connect_header(topic, h.key, h.schema, h.value))
                for h in record.headers or ()
            ]
        except Exception as e:
            return ReplayFailure.of(stage, class_path(converter), e, record)
        return Encoded(topic, record.kafka_partition, key, value, headers, record.timestamp, record)
