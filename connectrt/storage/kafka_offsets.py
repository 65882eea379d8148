"""Source offsets in a compacted Kafka topic, compatible with Kafka Connect's offsets topic.

Records are keyed ``["<connector>",{partition}]`` with the offset map as value (see
:mod:`connectrt.storage.offset_codec`); a tombstone deletes. The producer partitions keys with
murmur2 like Java's, so a key lands in the same partition a Java worker would choose.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Unpack

from connectrt.storage.internal_topics import OFFSETS, InternalTopic
from connectrt.storage.offsets import _check_entries
from connectrt.storage.tombstones import put_or_drop
from connectrt.storage.topic_store import TopicClients, TopicStore

__all__ = ["KafkaOffsetStore"]


class KafkaOffsetStore(TopicStore):
    """An :class:`~connectrt.storage.offsets.OffsetStore` over a :class:`TopicLog` (the client
    settings are :class:`~connectrt.storage.topic_store.TopicClients`).

    ``start()`` replays the topic to partition EOF into memory (tombstones delete); ``get`` and
    ``all`` then serve from memory. ``set()`` writes with ``acks=all`` and waits; only once every
    record is acknowledged does it update the in-memory view. When it raises
    :class:`ConnectError` the view is unchanged, but records that were still in flight may
    reach the topic later and are then seen after the next restart (as with Kafka Connect).

    ``start_at_snapshot`` makes ``start()`` read up to the topic's end as found when it
    began, not until partition EOF (see ``TopicLog``): for readers next to busy transactional
    writers, such as an exactly-once task's view of its connector's offsets.

    ``replication_factor=-1`` (default) means the broker's ``default.replication.factor``;
    Kafka Connect's own default is 3, which a single-broker cluster rejects. ``refresh`` reads
    records written by other workers since start. Thread-safe: concurrent ``set`` calls for one
    key leave the view matching the topic's order (the record with the highest offset wins).
    ``get`` returns None for keys that have no offset. ``internal``: see :class:`TopicStore`.
    """

    def __init__(
        self,
        topic: str = "connect-offsets",
        *,
        partitions: int = 25,
        internal: InternalTopic | None = OFFSETS,
        start_at_snapshot: bool = False,
        **clients: Unpack[TopicClients],
    ) -> None:
        self._data: dict[bytes, bytes] = {}
        # Per key: the offset of the record _data reflects (tombstones included).
        self._latest: dict[bytes, int] = {}
        self._lock = threading.Lock()
        super().__init__(
            topic,
            partitions=partitions,
            internal=internal,
            start_at_snapshot=start_at_snapshot,
            **clients,
        )

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        with self._lock:
            return {bytes(k): self._data.get(bytes(k)) for k in keys}

    def all(self) -> dict[bytes, bytes]:
        with self._lock:
            return dict(self._data)

    def set(self, entries: Mapping[bytes, bytes | None], timeout: float | None = None) -> None:
        _check_entries(entries)
        if not entries:
            return
        items = list(entries.items())
        written = self._log.send_and_wait(items, timeout)
        with self._lock:
            for (key, value), (_partition, offset) in zip(items, written, strict=True):
                self._apply(key, value, offset)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        if key is None:
            return
        with self._lock:
            self._apply(key, value, offset)

    def _apply(self, key: bytes, value: bytes | None, offset: int) -> None:
        # Caller holds self._lock. All records of one key are in one partition, so their
        # offsets order them: whichever path (set() acknowledgement or reading the topic)
        # brings a record second, the newest one wins.
        if offset <= self._latest.get(key, -1):
            return
        self._latest[key] = offset
        put_or_drop(self._data, key, value)
