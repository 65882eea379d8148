"""Connector configurations in a Kafka topic, compatible with Kafka Connect's config topic.

The record format is in :mod:`connectrt.storage.config_codec`, the snapshot rules in
:mod:`connectrt.storage.config_store`. The topic has exactly one partition, so records are
totally ordered; a topic with more partitions is refused, as Kafka Connect does.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connectrt.errors import ConfigError
from connectrt.storage.config_codec import (
    Heartbeat,
    Record,
    connector_config_record,
    heartbeat_record,
    restart_request_record,
    target_state_record,
    task_configs_records,
    task_count_record,
)
from connectrt.storage.config_store import ConfigListener, ConfigSnapshot, _ConfigView, dispatch
from connectrt.storage.internal_topics import CONFIGS, InternalTopic
from connectrt.storage.kafka_log import TopicLog
from connectrt.storage.states import TargetState

__all__ = ["KafkaConfigStore"]

CONFIG_TOPIC_CONFIG = "config.storage.topic"


class KafkaConfigStore:
    """A :class:`~connectrt.storage.config_store.ConfigStore` over a one-partition TopicLog.

    ``start()`` creates the topic if needed (1 partition, compacted) and replays it to partition
    EOF; listeners are not called for that replay. Writes are serialized (one writer lock, so
    the records of one call are contiguous in the topic), sent with ``acks=all`` and applied to
    the snapshot once acknowledged. ``refresh()`` reads what others wrote since and then calls
    the listeners, on the calling thread, once per distinct ``(kind, name)`` in topic order.
    Records this store wrote itself are skipped when read back (they were applied already).
    Thread-safe.

    ``internal`` names the worker settings of the topic in the refusals of ``start()``: an
    existing topic that is not compacted, or a replication factor above the cluster's
    brokers (:mod:`~connectrt.storage.internal_topics`); None checks neither.
    """

    def __init__(
        self,
        topic: str = "connect-configs",
        *,
        bootstrap_servers: str | None = None,
        replication_factor: int = -1,
        producer_config: Mapping[str, Any] | None = None,
        consumer_config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
        topic_configs: Mapping[str, str] | None = None,
        internal: InternalTopic | None = CONFIGS,
        timeout: float = 30.0,
    ) -> None:
        self._view = _ConfigView()
        self._listeners: list[ConfigListener] = []
        self._write_lock = threading.Lock()
        self._events_lock = threading.Lock()
        self._pending: list[tuple[str, str]] = []
        self._started = False
        self._log = TopicLog.for_clients(
            topic,
            bootstrap_servers,
            producer_config,
            consumer_config,
            admin_config,
            self._on_record,
            partitions=1,
            replication_factor=replication_factor,
            topic_configs=topic_configs,
            timeout=timeout,
            internal=internal,
        )

    @property
    def topic(self) -> str:
        return self._log.topic

    @property
    def log(self) -> TopicLog:
        return self._log

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
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

    def snapshot(self) -> ConfigSnapshot:
        return self._view.snapshot()

    def refresh(self, timeout: float | None = None) -> None:
        """Read everything written to the topic so far, then notify listeners."""
        self._log.read_to_end(timeout)
        with self._events_lock:
            events, self._pending = self._pending, []
        dispatch(list(self._listeners), events)

    def add_listener(self, listener: ConfigListener) -> None:
        self._listeners.append(listener)

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

    # -- writing ----------------------------------------------------------------------------

    def put_connector_config(
        self, name: str, config: Mapping[str, str], target_state: TargetState | None = None
    ) -> None:
        # Kafka Connect writes an initial target state before the connector record, so the
        # connector never runs in the wrong state.
        records = [] if target_state is None else [target_state_record(name, target_state)]
        records.append(connector_config_record(name, config))
        self._write(records)

    def remove_connector(self, name: str) -> None:
        self._write([connector_config_record(name, None), target_state_record(name, None)])

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._write([target_state_record(name, state)])

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]]) -> None:
        self._write(task_configs_records(name, configs))

    def put_restart_request(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self._write([restart_request_record(name, include_tasks, only_failed)])

    def put_task_count_record(self, name: str, task_count: int) -> None:
        self._write([task_count_record(name, task_count)])

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
