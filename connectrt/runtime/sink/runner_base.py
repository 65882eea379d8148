"""What the two sink task runners share: :class:`SinkRunnerBase`, the base of the consumer-group
runner (:class:`~connectrt.runtime.sink.runner.SinkTaskRunner`) and the share-group runner
(:class:`~connectrt.runtime.sink.share_runner.ShareSinkTaskRunner`), and how a sink task's
config names its topics (:func:`subscription`, :func:`single_topic`).

The base holds the task, what the task's context asks of the runner (``rewinds``,
``retry_timeout_s``, ``commit_requested``), the conversion of consumed messages into a batch
(:mod:`connectrt.runtime.sink.conversion`), the record inspector's stage order (``sink``) and
the handling of the error events among what a consumer returns. Threading: as
:class:`SettingsBuiltRunner`'s, every method runs on the task's thread except
:meth:`~SinkRunnerBase.on_stop_requested`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from connectrt.api.records import SinkRecord, TopicPartition
from connectrt.api.task import SinkTask
from connectrt.runtime.clients.kafka import KafkaError
from connectrt.runtime.sink.conversion import SinkConversion
from connectrt.runtime.sink.message_batch import split_errors
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from connectrt.runtime.tasks.settings import SettingsBuiltRunner, SinkRunnerSettings

log = logging.getLogger(__name__)

__all__ = ["SinkRunnerBase", "single_topic", "subscription"]


def subscription(task_config: Mapping[str, str]) -> list[str]:
    """The topics (or the one ``^pattern``) the task subscribes to."""
    topics = [t.strip() for t in task_config.get("topics", "").split(",") if t.strip()]
    regex = task_config.get("topics.regex", "").strip()
    if regex:
        re.compile(regex)
        topics = ["^" + regex]
    return topics


def single_topic(task_config: Mapping[str, str]) -> str | None:
    """The one topic every record of the task comes from, if its subscription says so."""
    if task_config.get("topics.regex", "").strip():
        return None
    topics = [t.strip() for t in task_config.get("topics", "").split(",") if t.strip()]
    return topics[0] if len(topics) == 1 else None


class SinkRunnerBase(SettingsBuiltRunner[SinkRecord]):
    """The part of a sink task runner that does not depend on the kind of group (see the
    module docstring)."""

    def __init__(self, task_id: TaskId, task: SinkTask, settings: SinkRunnerSettings) -> None:
        super().__init__(task_id, settings)
        self.task = task
        self.rewinds: dict[TopicPartition, int] = {}
        self.retry_timeout_s = 0.0
        self.commit_requested = False
        self._conversion = SinkConversion(
            settings.converters,
            self.errors,
            self.metrics,
            single_topic(settings.task_config),
            self._transforms,
        )

    @property
    def tap_kind(self) -> str:
        return "sink"

    def on_stop_requested(self) -> None:
        self.errors.stop()  # interrupt retry backoff

    def raw_for(self, record: SinkRecord) -> Any:
        """The consumed message a record of the current batch came from (failure paths only)."""
        return self._conversion.raw_for(record)

    def _messages_of(self, consumed: list[Any]) -> list[Any]:
        """The messages of what the consumer returned, its error events handled first (by
        :meth:`_consume_error`: a fatal one fails the task)."""
        msgs, failed = split_errors(consumed)
        for msg in failed:
            self._consume_error(msg.error())
        return msgs

    def _consume_error(self, err: KafkaError) -> None:
        """An error event the consumer returned: end of partition ignored, fatal fails the
        task, anything else (librdkafka retries it) logged."""
        if err.code() == KafkaError._PARTITION_EOF:
            return
        if err.fatal():
            raise TaskFailure(self.id, TaskStage.KAFKA_CONSUME, err.str())
        log.warning("Task %s: consumer error: %s", self.id, err.str())
