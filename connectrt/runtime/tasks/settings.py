"""What a task runner is built from: one settings object per runner kind.

:class:`SourceRunnerSettings` and :class:`SinkRunnerSettings` hold every construction input of a
:class:`~connectrt.runtime.source.runner.SourceTaskRunner` or
:class:`~connectrt.runtime.sink.runner.SinkTaskRunner` but the task id and the task itself; the
part both share is :class:`RunnerSettings`, which :class:`SettingsBuiltRunner` (the base of both
runners) reads. The runtime builds them in
:class:`~connectrt.runtime.executors.runner_factory.RunnerFactory`; tests and benchmarks build them
by hand.

A runner reads its settings once, in ``__init__``, and keeps what its loop uses in attributes of
its own, so nothing on the hot path goes through a settings object. The objects are frozen, but
what they refer to (converters, error handler, clients' configs) is handed over to the one
runner built from them: build one settings object per runner.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from connectrt.api.records import ConnectRecord
from connectrt.runtime.clients.kafka import (
    KafkaConsumer,
    KafkaProducer,
    new_consumer,
    new_producer,
)
from connectrt.runtime.config.exactly_once import ExactlyOnceSettings
from connectrt.runtime.config.topic_creation import TopicCreator
from connectrt.runtime.status import StatusBoard, TargetState
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskConverters, TaskId, TaskRunner
from connectrt.runtime.tasks.tap import TapSubscription, TaskTap
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.offsets import OffsetStore
from connectrt.transforms.chain import TransformationChain

log = logging.getLogger(__name__)

__all__ = ["RunnerSettings", "SettingsBuiltRunner", "SinkRunnerSettings", "SourceRunnerSettings"]

R = TypeVar("R", bound=ConnectRecord)


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


class SettingsBuiltRunner(TaskRunner, Generic[R]):
    """A task runner built from :class:`RunnerSettings` (the base of the source and sink
    runners, ``R`` their record type): the thread, status and metrics of :class:`TaskRunner`,
    plus the SMT chain (``_transforms``, None when there is none), the ``errors.*`` handler
    (``errors``, counting into this runner's metrics) and the ``converters``. Built on the
    thread that creates the runner, before it starts."""

    def __init__(self, task_id: TaskId, settings: RunnerSettings) -> None:
        super().__init__(
            task_id, settings.task_config, settings.status, settings.target_state, settings.on_topic
        )
        self._transforms: TransformationChain[R] | None = (
            settings.transforms if settings.transforms else None
        )
        self.errors = settings.errors or ErrorHandler(task_id, ErrorPolicy(), self.metrics)
        self.errors.metrics = self.metrics
        self.converters = settings.converters
        # The record inspector's tap points: None unless someone watches (tap_into).
        self.tap: TaskTap | None = None
        self._tap_lock = threading.Lock()

    @property
    def tap_kind(self) -> str:
        """``source`` or ``sink``: the tap's stage order (see :func:`~.tap.stage_names`)."""
        raise NotImplementedError

    def tap_aliases(self) -> list[str]:
        """The aliases of the task's transformations, in chain order."""
        return [s.alias for s in self._transforms.stages] if self._transforms else []

    def tap_into(self, sub: TapSubscription) -> None:
        """Show ``sub`` samples of this task's records (any thread; see
        :mod:`connectrt.runtime.tasks.tap`)."""
        with self._tap_lock:
            tap = self.tap
            if tap is None:
                tap = TaskTap(self.id, self.tap_kind, self.converters, self._transforms)
            tap.add(sub)
            self.tap = tap

    def untap(self, sub: TapSubscription) -> None:
        """Stop showing ``sub`` this task's records; the last one gone, the hot path's check
        finds None again (any thread)."""
        with self._tap_lock:
            tap = self.tap
            if tap is not None and tap.remove(sub):
                self.tap = None

    def _close_transforms(self) -> None:
        """Close the SMT chain (when the task stops, on its thread); a failure is logged, so
        that the rest of the shutdown still runs."""
        if self._transforms is not None:
            try:
                self._transforms.close()
            except Exception:
                log.exception("Task %s: error closing transformations", self.id)
