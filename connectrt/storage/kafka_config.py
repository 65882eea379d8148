"""Connector configurations in a Kafka topic, compatible with Kafka Connect's config topic.

The record format is in :mod:`connectrt.storage.config_codec`, the snapshot rules in
:mod:`connectrt.storage.config_store`. The topic has exactly one partition, so records are
totally ordered; a topic with more partitions is refused, as Kafka Connect does.
"""

from __future__ import annotations

import threading
from typing import Unpack

from connectrt.errors import ConfigError
from connectrt.storage.config_codec import Heartbeat, Record, heartbeat_record
from connectrt.storage.config_store import RecordConfigStore, _ConfigView, dispatch
from connectrt.storage.internal_topics import CONFIGS, InternalTopic
from connectrt.storage.topic_store import TopicClients, TopicStore

__all__ = ["KafkaConfigStore"]

CONFIG_TOPIC_CONFIG = "config.storage.topic"


class KafkaConfigStore(RecordConfigStore, TopicStore):
    """A :class:`~connectrt.storage.config_store.ConfigStore` over a one-partition TopicLog (the
    client settings are :class:`~connectrt.storage.topic_store.TopicClients`).

    ``start()`` creates the topic if needed (1 partition, compacted) and replays it to partition
    EOF; listeners are not called for that replay. Writes are serialized (one writer lock, so
    the records of one call are contiguous in the topic), sent with ``acks=all`` and applied to
    the snapshot once acknowledged. ``refresh()`` reads what others wrote since and then calls
    the listeners, on the calling thread, once per distinct ``(kind, name)`` in topic order.
    Records this store wrote itself are skipped when read back (they were applied already).
    Thread-safe. ``internal``: see :class:`TopicStore`.
    """

    def __init__(
        self,
        topic: str = "connect-configs",
        *,
        internal: InternalTopic | None = CONFIGS,
        **clients: Unpack[TopicClients],
    ) -> None:
        RecordConfigStore.__init__(self)
        self._events_lock = threading.Lock()
        self._pending: list[tuple[str, str]] = []
        self._started = False
        TopicStore.__init__(self, topic, partitions=1, internal=internal, **clients)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Replay the topic; a topic of more than one partition is refused (ConfigError)."""
        self._log.start()
        partitions = self._log.partition_count
        if partitions > 1:
            self._log.stop()
            self._view = _ConfigView()
            raise ConfigError(
                f"Topic '{self.topic}' supplied via the '{CONFIG_TOPIC_CONFIG}' property is "
                "required to have a single partition in order to guarantee consistency of "
                f"connector configurations, but found {partitions} partitions.",
                CONFIG_TOPIC_CONFIG,
                self.topic,
            )
        self._started = True

    def stop(self) -> None:
        self._started = False
        self._log.stop()

    # -- reading ----------------------------------------------------------------------------

    def refresh(self, timeout: float | None = None) -> None:
        """Read everything written to the topic so far, then notify listeners."""
        self._log.read_to_end(timeout)
        with self._events_lock:
            events, self._pending = self._pending, []
        dispatch(list(self._listeners), events)

    def heartbeats(self) -> dict[str, Heartbeat]:
        """The heartbeat records earlier connectrt versions wrote here (now in the status
        topic), latest per group id, as of the last read or write."""
        return self._view.heartbeats()

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        events = self._view.apply_all([((key, value), offset)])
        if events and self._started:
            with self._events_lock:
                self._pending.extend(events)

    # -- writing (the ConfigStore writes are RecordConfigStore's) ----------------------------

    def remove_heartbeat(self, group_id: str, timeout: float | None = None) -> None:
        """Write the tombstone of an earlier version's ``worker-heartbeat-<group_id>`` record
        (compaction then drops both) and wait for it."""
        record = heartbeat_record(group_id, None)
        written = self._log.send_and_wait([record], timeout)
        self._view.apply_all([(record, written[0][1])])

    def _write(self, records: list[Record]) -> None:
        with self._write_lock:
            written = self._log.send_and_wait(records)
            self._view.apply_all(
                (record, offset) for record, (_p, offset) in zip(records, written, strict=True)
            )
