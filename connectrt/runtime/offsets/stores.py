"""The offset store that a worker's ``offset.storage.type`` names: memory, file or Kafka topic.

Called once per worker (and once per Spark executor task); the store it returns is opened by
its user.
"""

from __future__ import annotations

from connectrt.errors import ConfigError
from connectrt.runtime.clients.settings import (
    OverridePolicy,
    admin_config,
    consumer_config,
    producer_config,
)
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.offsets import FileOffsetStore, MemoryOffsetStore, OffsetStore

__all__ = ["create_kafka_offset_store", "create_offset_store"]


def create_offset_store(wc: WorkerConfig) -> OffsetStore:
    kind = wc["offset.storage.type"]
    if kind == "memory":
        return MemoryOffsetStore()
    if kind == "file":
        path = wc["offset.storage.file.filename"]
        if not path:
            raise ConfigError(
                "offset.storage.type=file needs offset.storage.file.filename",
                "offset.storage.file.filename",
            )
        return FileOffsetStore(path)
    return create_kafka_offset_store(wc, wc["offset.storage.topic"])


def create_kafka_offset_store(
    wc: WorkerConfig, topic: str, client_suffix: str = "", start_at_snapshot: bool = False
) -> KafkaOffsetStore:
    """A store over the offsets topic ``topic`` with the worker's client settings (the
    worker's own store, or an exactly-once task's view of its connector's offsets topic;
    ``client_suffix`` tells the clients apart). Reads are ``read_committed``."""
    policy = OverridePolicy("None")
    bootstrap = wc.bootstrap_servers
    return KafkaOffsetStore(
        topic,
        bootstrap_servers=bootstrap,
        partitions=wc["offset.storage.partitions"],
        replication_factor=wc["offset.storage.replication.factor"],
        producer_config=producer_config(
            bootstrap,
            wc.originals,
            None,
            policy,
            f"connect-offsets-producer{client_suffix}",
            worker_own=True,
        ),
        consumer_config={
            **consumer_config(
                bootstrap,
                wc.originals,
                None,
                policy,
                f"connect-offsets-consumer{client_suffix}",
                "connect-offsets-reader",
                worker_own=True,
            ),
            "isolation.level": "read_committed",
        },
        admin_config=admin_config(
            bootstrap,
            wc.originals,
            None,
            policy,
            f"connect-offsets-admin{client_suffix}",
            worker_own=True,
        ),
        timeout=wc["worker.startup.timeout.ms"] / 1000.0,
        start_at_snapshot=start_at_snapshot,
    )
