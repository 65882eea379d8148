"""Driver side of writing through a sink connector: the options of ``df.write`` /
``df.writeStream`` into a :class:`SinkPlan` (see :mod:`connectrt.spark.datasource.sink`).

:func:`plan_sink` checks the options, picks the key and value columns, starts the connector
once (validating its config) and takes its task class and task configs. The plan is pickled
to the executors, which run it with :func:`~connectrt.spark.datasource.sink_task.run_sink_task`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import types as T

from connectrt.api.config import ConfigError
from connectrt.api.connector import SinkConnector, SinkConnectorContext
from connectrt.api.task import SinkTask
from connectrt.errors import ConnectError
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.tasks.error_handling import ErrorPolicy
from connectrt.spark.datasource.options import kafka_client_settings

log = logging.getLogger(__name__)

__all__ = ["SinkPlan", "plan_sink"]

_BRIDGE_KEYS = frozenset(
    {
        "connector.class",
        "topic",
        "key.column",
        "key.columns",
        "value.column",
        "put.batch.size",
        "batch.id",
        "path",
    }
)


class _ConnectorContext(SinkConnectorContext):
    def request_task_reconfiguration(self) -> None:
        log.info("The Spark bridge ignores task reconfiguration requests")

    def raise_error(self, error: BaseException) -> None:
        raise error


@dataclass
class SinkPlan:
    """Everything a Spark task needs to run the sink (picklable, built on the driver)."""

    task_class: type[SinkTask]
    task_configs: list[dict[str, str]]
    topic: str
    key_index: list[int] | int | None  # columns wrapped in a struct, one column, or no key
    value_index: list[int] | int
    key_type: T.DataType | None
    value_type: T.DataType
    batch_size: int
    batch_id: int
    max_retries: int = 10
    config: dict[str, str] = field(default_factory=dict)
    kafka: dict[str, str] = field(default_factory=dict, repr=False)  # secrets included


def plan_sink(options: Mapping[str, Any], schema: T.StructType) -> SinkPlan:
    """Driver side: start the connector (validating its config) and take its task configs."""
    opts = {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}
    class_name = opts.get("connector.class", "").strip()
    if not class_name:
        raise ConfigError("Option connector.class (a sink connector) is required for writing")
    cls = registry.connector_class(class_name)
    if not issubclass(cls, SinkConnector):
        raise ConfigError(f"{class_name} is not a sink connector", "connector.class", class_name)
    config = {k: v for k, v in opts.items() if k not in _BRIDGE_KEYS and not k.startswith("kafka.")}
    kafka = kafka_client_settings(
        {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    )
    policy = ErrorPolicy.from_config(config)
    if policy.dlq_topic and not kafka.get("bootstrap.servers"):
        raise ConfigError(
            "errors.deadletterqueue.topic.name needs kafka.bootstrap.servers for its producer"
        )
    config.setdefault("name", "spark-bridge")
    topic = opts.get("topic") or "spark"
    config.setdefault("topics", topic)
    names = schema.fieldNames()
    key_index: list[int] | int | None = None
    value_index: list[int] | int

    def column(key: str) -> int:
        name = opts[key].strip()
        if name not in names:
            raise ConfigError(f"{key} {name!r} is not a column of the DataFrame ({names})")
        return names.index(name)

    key_columns = [c.strip() for c in opts.get("key.columns", "").split(",") if c.strip()]
    missing = [c for c in key_columns if c not in names]
    if missing:
        raise ConfigError(f"key.columns {missing} are not columns of the DataFrame ({names})")
    if opts.get("key.column", "").strip():
        key_index = column("key.column")
    elif key_columns:
        key_index = [names.index(c) for c in key_columns]
    if opts.get("value.column", "").strip():
        value_index = column("value.column")
    else:
        taken = {key_index} if isinstance(key_index, int) else set(key_index or [])
        value_index = [i for i in range(len(names)) if i not in taken]
    tasks_max = int(config.get("tasks.max", "1") or 1)
    connector = cls()
    connector.initialize(_ConnectorContext())
    connector.start(config)
    try:
        task_configs = connector.task_configs(max(1, tasks_max))
        task_class = connector.task_class()
    finally:
        connector.stop()
    if not task_configs:
        raise ConnectError(f"{class_name} returned no task configs")
    if not (isinstance(task_class, type) and issubclass(task_class, SinkTask)):
        raise ConfigError(f"{class_name}.task_class() is not a SinkTask")
    return SinkPlan(
        task_class=task_class,
        task_configs=[dict(c) for c in task_configs],
        topic=topic,
        key_index=key_index,
        value_index=value_index,
        key_type=_column_type(schema, key_index),
        value_type=_column_type(schema, value_index),
        batch_size=int(opts.get("put.batch.size", "5000") or 5000),
        batch_id=int(opts.get("batch.id", "0") or 0),
        config=config,
        kafka=kafka,
    )


def _column_type(schema: T.StructType, index: list[int] | int | None) -> Any:
    if index is None:
        return None
    if isinstance(index, int):
        return schema.fields[index].dataType
    return T.StructType([schema.fields[i] for i in index])
