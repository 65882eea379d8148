"""The offset store that a worker's ``offset.storage.type`` names: memory, file or Kafka topic.

Called once per worker (and once per Spark executor task); the store it returns is opened by
its user.
"""

from __future__ import annotations

from connectrt.errors import ConfigError
from connectrt.runtime.clients import OverridePolicy, admin_config, consumer_config, producer_config
from connectrt.runtime.worker_config import WorkerConfig
from connectrt.storage.offsets import FileOffsetStore, MemoryOffsetStore, OffsetStore

__all__ = ["create_offset_store"]


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
    from connectrt.storage.kafka_offsets import KafkaOffsetStore

    policy = OverridePolicy("None")
    bootstrap = wc.bootstrap_servers
    return KafkaOffsetStore(
        wc["offset.storage.topic"],
        bootstrap_servers=bootstrap,
        partitions=wc["offset.storage.partitions"],
        replication_factor=wc["offset.storage.replication.factor"],
        producer_config=producer_config(
            bootstrap, wc.originals, None, policy, "connect-offsets-producer"
        ),
        consumer_config=consumer_config(
            bootstrap,
            wc.originals,
            None,
            policy,
            "connect-offsets-consumer",
            "connect-offsets-reader",
        ),
        admin_config=admin_config(bootstrap, wc.originals, None, policy, "connect-offsets-admin"),
        timeout=wc["worker.startup.timeout.ms"] / 1000.0,
    )
