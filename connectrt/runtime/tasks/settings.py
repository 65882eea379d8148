"""What a task runner is built from: one settings object per runner kind.

:class:`SourceRunnerSettings` and :class:`SinkRunnerSettings` hold every construction input of a
:class:`~connectrt.runtime.source.runner.SourceTaskRunner` or
:class:`~connectrt.runtime.sink.runner.SinkTaskRunner` but the task id and the task itself; the
part both share is :class:`RunnerSettings`. The runtime builds them in
:class:`~connectrt.runtime.executors.runner_factory.RunnerFactory`; tests and benchmarks build them
by hand.

A runner reads its settings once, in ``__init__``, and keeps what its loop uses in attributes of
its own, so nothing on the hot path goes through a settings object. The objects are frozen, but
what they refer to (converters, error handler, clients' configs) is handed over to the one
runner built from them: build one settings object per runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectrt.runtime.clients.kafka import (
    KafkaConsumer,
    KafkaProducer,
    new_consumer,
    new_producer,
)
from connectrt.runtime.config.exactly_once import ExactlyOnceSettings
from connectrt.runtime.config.topic_creation import TopicCreator
from connectrt.runtime.status import StatusBoard, TargetState
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskConverters
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.offsets import OffsetStore
from connectrt.transforms.chain import TransformationChain

__all__ = ["RunnerSettings", "SinkRunnerSettings", "SourceRunnerSettings"]


@dataclass(frozen=True, kw_only=True)
class RunnerSettings:
    """What source and sink runners alike are built from.

    ``task_config`` is the task's resolved config (given to ``task.start`` and its context);
    ``converters`` its key/value/header converters; ``status`` the board the runner reports the
    task's state to; ``offset_flush_interval_ms`` how often offsets are committed
    (``offset.flush.interval.ms``); ``target_state`` the state to start in. ``on_topic(topic)``
    is called on the task thread the first time the task uses a topic. ``transforms`` is the
    SMT chain (None: no transforms). ``errors`` is the ``errors.*`` handler (None: fail on the
    first error, no dead letter queue).
    """

    task_config: dict[str, str]
    converters: TaskConverters
    status: StatusBoard
    offset_flush_interval_ms: int
    target_state: TargetState = TargetState.STARTED
    on_topic: Callable[[str], None] | None = None
    transforms: TransformationChain[Any] | None = None
    errors: ErrorHandler | None = None


@dataclass(frozen=True, kw_only=True)
class SourceRunnerSettings(RunnerSettings):
    """A source runner's settings: its producer, its offsets and topic creation.

    ``producer_config`` is the librdkafka config of the task's producer, built by
    ``producer_factory`` when the task starts. Source offsets go to ``offset_store``; a commit
    waits at most ``offset_flush_timeout_ms`` (``offset.flush.timeout.ms``) for the produced
    records to be acknowledged. ``topic_creator`` creates topics before their first record
    (None: topic creation is off). ``exactly_once`` (None: at-least-once) makes the task
    transactional (KIP-618, :mod:`connectrt.runtime.source.transactions`); its offsets are then
    read from and written to ``exactly_once_store`` (the connector's offsets topic, not started:
    the runner starts and stops it), and ``producer_config`` is already transactional.
    """

    producer_config: dict[str, Any]
    offset_store: OffsetStore
    offset_flush_timeout_ms: int
    producer_factory: Callable[[dict[str, Any]], KafkaProducer] = new_producer
    topic_creator: TopicCreator | None = None
    exactly_once: ExactlyOnceSettings | None = None
    exactly_once_store: KafkaOffsetStore | None = None


@dataclass(frozen=True, kw_only=True)
class SinkRunnerSettings(RunnerSettings):
    """A sink runner's settings: its consumer.

    ``consumer_config`` is the librdkafka config of the task's consumer, built by
    ``consumer_factory`` when the task starts; ``max_poll_records`` caps the records consumed
    and handed to ``put`` at once.
    """

    consumer_config: dict[str, Any]
    max_poll_records: int = 500
    consumer_factory: Callable[[dict[str, Any]], KafkaConsumer] = new_consumer
