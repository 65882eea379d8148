"""Storage for worker state: source offsets now; config and status stores build on TopicLog.

Memory and file stores have no Kafka dependency. The Kafka-backed classes are imported lazily,
so ``import connectrt.storage`` does not load the Kafka client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from connectrt.storage.config_store import ConfigSnapshot, ConfigStore, MemoryConfigStore
from connectrt.storage.murmur2 import java_partition, murmur2
from connectrt.storage.offset_codec import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    validate_offset_map,
)
from connectrt.storage.offsets import FileOffsetStore, MemoryOffsetStore, OffsetStore
from connectrt.storage.status_store import MemoryStatusStore, StatusStore

if TYPE_CHECKING:
    from connectrt.storage.kafka_config import KafkaConfigStore
    from connectrt.storage.kafka_log import TopicLog
    from connectrt.storage.kafka_offsets import KafkaOffsetStore
    from connectrt.storage.kafka_status import KafkaStatusStore

__all__ = [
    "ConfigSnapshot",
    "ConfigStore",
    "FileOffsetStore",
    "KafkaConfigStore",
    "KafkaOffsetStore",
    "KafkaStatusStore",
    "MemoryConfigStore",
    "MemoryOffsetStore",
    "MemoryStatusStore",
    "OffsetStore",
    "StatusStore",
    "TopicLog",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "java_partition",
    "murmur2",
    "validate_offset_map",
]


_KAFKA_BACKED = {
    "KafkaOffsetStore": "connectrt.storage.kafka_offsets",
    "KafkaConfigStore": "connectrt.storage.kafka_config",
    "KafkaStatusStore": "connectrt.storage.kafka_status",
    "TopicLog": "connectrt.storage.kafka_log",
}
"""The Kafka-backed classes, by name, and the module each is imported from on first use."""


def __getattr__(name: str) -> Any:
    module = _KAFKA_BACKED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
