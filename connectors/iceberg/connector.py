"""IcebergSinkConnector: writes Kafka records into Apache Iceberg tables (Iceberg's keys).

Lifecycle: ``start`` parses the config and opens the catalog (a catalog that cannot be opened
fails the connector with the reason); every task gets the same config (Kafka assigns the
partitions; the tasks coordinate through the tables' optimistic commits, see
:mod:`connectors.iceberg.writer`). ``validate`` adds the cross-key rules to the per-key
results. An operator's offsets change (``PATCH``/``DELETE /connectors/{name}/offsets``) is
written into each listed table as a snapshot without files, since the tasks resume from the
tables' offsets.
"""

from __future__ import annotations

from collections.abc import Mapping

from connectors.iceberg.catalog import load
from connectors.iceberg.config import CONFIG_DEF, check_rules, parse_config
from connectors.iceberg.offsets import group_id, set_offsets
from connectors.iceberg.task import VERSION, IcebergSinkTask
from connectrt.api import ConfigDef, ConfigValue, SinkConnector, Task, TopicPartition

__all__ = ["CONFIG_DEF", "IcebergSinkConnector"]


class IcebergSinkConnector(SinkConnector):
    """See the module docstring."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        result = super().validate(config)
        if any(v.errors for v in result.values()):
            return result
        parsed = {**config, **{name: v.value for name, v in result.items()}}
        for key, message in check_rules(parsed):
            result[key].errors.append(message)
        return result

    def start(self, config: Mapping[str, str]) -> None:
        load(parse_config(config))
        self._props = dict(config)

    def task_class(self) -> type[Task]:
        return IcebergSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        cfg = parse_config(config)
        catalog = load(cfg)
        changes = {(tp.topic, tp.partition): o for tp, o in offsets.items()}
        for name in cfg.tables:
            if catalog.table_exists(name):
                set_offsets(catalog.load_table(name), changes, group_id(cfg.connector_name))
        return True
