"""JdbcSinkConnector: writes Kafka records into database tables (Confluent JDBC sink keys).

Lifecycle: ``start`` parses the config and checks that the database answers (an unreachable
database fails the connector with a readable reason); every task gets the same config (Kafka
assigns the partitions). ``validate`` adds the cross-key rules (e.g. ``delete.enabled`` needs
``pk.mode=record_key``) to the per-key results. With ``exactly.once.enabled`` an operator's
offsets change (``PATCH``/``DELETE /connectors/{name}/offsets``) is applied to the database's
offsets table too, since that is where the tasks resume from.
"""

from __future__ import annotations

from collections.abc import Mapping

from connectors.copied_config import CopiedConfigSinkConnector
from connectors.jdbc.sink.config import SINK_CONFIG_DEF, check_sink_rules, parse_sink_config
from connectors.jdbc.sink.database import connect
from connectors.jdbc.sink.offsets import OffsetsTable
from connectors.jdbc.sink.task import VERSION, JdbcSinkTask
from connectrt.api import TopicPartition

__all__ = ["CONFIG_DEF", "JdbcSinkConnector"]

CONFIG_DEF = SINK_CONFIG_DEF


class JdbcSinkConnector(CopiedConfigSinkConnector):
    """See the module docstring."""

    plugin_version = VERSION
    definition = CONFIG_DEF
    task_type = JdbcSinkTask
    rules = check_sink_rules

    def check(self, config: Mapping[str, str]) -> None:
        cfg = parse_sink_config(config)
        connect(cfg.raw).dispose()

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        cfg = parse_sink_config(config)
        if not cfg.exactly_once:
            return True  # the consumer group is the only place offsets live
        engine = connect(cfg.raw)
        try:
            table = OffsetsTable(
                engine, cfg.offsets_table, cfg.connector_name, cfg.quote_identifiers
            )
            table.ensure()
            changed = {(tp.topic, tp.partition): o for tp, o in offsets.items() if o is not None}
            with engine.begin() as conn:
                table.write(conn, changed)
                table.delete(conn, [tp for tp, o in offsets.items() if o is None])
        finally:
            engine.dispose()
        return True
