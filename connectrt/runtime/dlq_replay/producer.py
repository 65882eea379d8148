"""The producing side of a replay run: copies to their topics, failures back to the DLQ.

:class:`ReplayProducer` sends the run's copies with a delivery callback each (an operator
action, not a hot path) and collects what fails: a copy its topic refuses goes back to the
dead letter queue, as a record that failed again (with the replay headers it carried, plus
fresh ``__connect.errors.*`` context when the connector enables them). :meth:`settle` is the
end of a batch: every copy acknowledged or written back, every write-back acknowledged; only
then may the run commit the batch's DLQ positions.

Used from the run's thread only (callbacks run inside ``flush``/``poll`` on that thread).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaError, KafkaException, KafkaProducer, new_producer
from connectrt.runtime.dlq_replay.progress import ReplayProgress
from connectrt.runtime.tasks.dlq_headers import RawHeaders, context_headers
from connectrt.runtime.tasks.runner import TaskStage

__all__ = ["DeliveryCallback", "ReplayProducer"]

DeliveryCallback = Callable[[KafkaError | None, Any], None]
"""``callback(error, message)``: confluent-kafka's delivery report (message None when the
produce call itself refused the record)."""

_FLUSH_TIMEOUT_S = 60.0
_PRODUCER_CLASS = "confluent_kafka.Producer"


@dataclass
class _WriteBack:
    key: bytes | None
    value: bytes | None
    headers: RawHeaders
    timestamp: int | None


class ReplayProducer:
    """See the module docstring. ``connector`` and ``context_headers`` (the connector's
    ``errors.deadletterqueue.context.headers.enable``) shape the write-backs' headers; each
    acknowledged write-back counts as ``failed_again`` in ``progress``."""

    def __init__(
        self,
        config: dict[str, Any],
        dlq_topic: str,
        connector: str,
        context_headers: bool,
        progress: ReplayProgress,
    ) -> None:
        self._producer: KafkaProducer = new_producer(config)
        self._dlq_topic = dlq_topic
        self._connector = connector
        self._context_headers = context_headers
        self._progress = progress
        self._pending: list[_WriteBack] = []
        self._write_errors: list[str] = []
        self.written_back: set[tuple[int, int]] = set()
        """(DLQ partition, offset) of every record this run wrote back."""

    def produce(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: RawHeaders,
        timestamp: int | None,
        on_delivery: DeliveryCallback,
    ) -> None:
        """Send one record; ``on_delivery`` gets its outcome (during a later poll or flush)."""
        kwargs: dict[str, Any] = {"headers": headers, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        while True:
            try:
                self._producer.produce(topic, value, key, **kwargs)
                return
            except BufferError:
                self._producer.poll(0.05)
            except KafkaException as e:  # refused at once (e.g. an unknown partition)
                on_delivery(e.args[0] if e.args else KafkaError(KafkaError._FAIL), None)
                return

    def context(
        self,
        topic: str | None,
        partition: int | None,
        stage: str,
        class_name: str,
        error: BaseException,
        stacktrace: str | None = None,
    ) -> RawHeaders:
        """The ``__connect.errors.*`` headers of a failure in this run (none when the
        connector does not enable them)."""
        if not self._context_headers:
            return []
        return context_headers(
            topic=topic,
            partition=partition,
            offset=None,
            connector=self._connector,
            task=None,
            stage=stage,
            class_name=class_name,
            error=error,
            stacktrace=stacktrace,
        )

    def refused(
        self,
        key: bytes | None,
        value: bytes | None,
        replay_headers: RawHeaders,
        timestamp: int | None,
        topic: str,
        partition: int | None,
        reason: str,
    ) -> None:
        """A copy its topic did not accept: it goes back to the DLQ."""
        error = ConnectError(f"Replaying to {topic} failed: {reason}")
        headers = replay_headers + self.context(
            topic, partition, TaskStage.KAFKA_PRODUCE, _PRODUCER_CLASS, error
        )
        self.write_back(key, value, headers, timestamp)

    def write_back(
        self, key: bytes | None, value: bytes | None, headers: RawHeaders, timestamp: int | None
    ) -> None:
        """Queue a record that failed again for the DLQ (sent by :meth:`settle`)."""
        self._pending.append(_WriteBack(key, value, headers, timestamp))

    def settle(self) -> None:
        """Wait for every copy, write back what failed, wait for that. Raises ConnectError
        when something is not acknowledged in time or the DLQ refuses a write-back."""
        self._flush()  # delivery reports may queue write-backs
        pending, self._pending = self._pending, []
        for wb in pending:
            self.produce(
                self._dlq_topic, None, wb.key, wb.value, wb.headers, wb.timestamp, self._written
            )
        if pending:
            self._flush()
        if self._write_errors:
            raise ConnectError(
                f"Writing a record back to the dead letter queue {self._dlq_topic} failed: "
                f"{self._write_errors[0]}"
            )

    def _flush(self) -> None:
        if self._producer.flush(_FLUSH_TIMEOUT_S) > 0:
            raise ConnectError(
                f"Timed out after {_FLUSH_TIMEOUT_S:g} s waiting for replayed records to be "
                "acknowledged"
            )

    def _written(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self._write_errors.append(err.str())
            return
        self.written_back.add((msg.partition() or 0, msg.offset() or 0))
        self._progress.add(failed_again=1)

    def close(self) -> None:
        self._producer.flush(10)
