"""ObjectStoreSinkConnector: topics to Parquet, JSON lines or Avro objects on S3 or a path.

Also registered as Confluent's ``io.confluent.connect.s3.S3SinkConnector``. Every task gets the
connector's config; partitions are spread over tasks by the consumer group, and each task
writes only its own partitions' objects, so tasks never write the same object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from connectors.copied_config import CopiedConfigSinkConnector
from connectors.objectstore.config import CONFIG_DEF, parse_config
from connectors.objectstore.task import VERSION, ObjectStoreSinkTask
from connectrt.api import ConfigError, TopicPartition

__all__ = ["ObjectStoreSinkConnector"]


class ObjectStoreSinkConnector(CopiedConfigSinkConnector):
    plugin_version = VERSION
    definition = CONFIG_DEF
    task_type = ObjectStoreSinkTask

    def rule_errors(
        self, config: Mapping[str, str], values: Mapping[str, object]
    ) -> Iterable[tuple[str, str]]:
        """The first rule between keys that fails (a time-based partitioner without
        path.format, S3 without a bucket...), on the key it names."""
        try:
            parse_config(config)
        except ConfigError as exc:
            if (exc.name or "") not in values:
                raise
            return [(exc.name or "", str(exc))]
        return ()

    def check(self, config: Mapping[str, str]) -> None:
        parse_config(config)  # the rules between keys, before any task starts

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        # A task resumes after the files in storage (Parquet, Avro), whatever the consumer
        # offsets say; changing those alone does not move it.
        return parse_config(config).format == "json"
