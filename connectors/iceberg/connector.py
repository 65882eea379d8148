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

from connectors.copied_config import CopiedConfigSinkConnector
from connectors.iceberg.catalog import load
from connectors.iceberg.config import CONFIG_DEF, check_rules, parse_config
from connectors.iceberg.offsets import group_id, set_offsets
from connectors.iceberg.task import VERSION, IcebergSinkTask
from connectrt.api import TopicPartition

__all__ = ["CONFIG_DEF", "IcebergSinkConnector"]


class IcebergSinkConnector(CopiedConfigSinkConnector):
    """See the module docstring."""

    plugin_version = VERSION
    definition = CONFIG_DEF
    task_type = IcebergSinkTask
    rules = check_rules

    def check(self, config: Mapping[str, str]) -> None:
        load(parse_config(config))

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
