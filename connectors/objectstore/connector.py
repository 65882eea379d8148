"""ObjectStoreSinkConnector: topics to Parquet, JSON lines or Avro objects on S3 or a path.

Also registered as Confluent's ``io.confluent.connect.s3.S3SinkConnector``. Every task gets the
connector's config; partitions are spread over tasks by the consumer group, and each task
writes only its own partitions' objects, so tasks never write the same object.
"""

from __future__ import annotations

from collections.abc import Mapping

from connectors.objectstore.config import CONFIG_DEF, parse_config
from connectors.objectstore.task import VERSION, ObjectStoreSinkTask
from connectrt.api import ConfigDef, ConfigError, ConfigValue, SinkConnector, Task, TopicPartition

__all__ = ["ObjectStoreSinkConnector"]


class ObjectStoreSinkConnector(SinkConnector):
    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """The per-key results, plus the first rule between keys that fails (a time-based
        partitioner without path.format, S3 without a bucket...) on the key it names."""
        result = super().validate(config)
        if any(v.errors for v in result.values()):
            return result
        try:
            parse_config(config)
        except ConfigError as exc:
            target = result.get(exc.name or "")
            if target is None:
                raise
            target.errors.append(str(exc))
        return result

    def start(self, config: Mapping[str, str]) -> None:
        parse_config(config)  # the rules between keys, before any task starts
        self._props = dict(config)

    def task_class(self) -> type[Task]:
        return ObjectStoreSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        # A task resumes after the files in storage (Parquet, Avro), whatever the consumer
        # offsets say; changing those alone does not move it.
        return parse_config(config).format == "json"
