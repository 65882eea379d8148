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

from connectors.jdbc.sink.config import SINK_CONFIG_DEF, check_sink_rules, parse_sink_config
from connectors.jdbc.sink.database import connect
from connectors.jdbc.sink.offsets import OffsetsTable
from connectors.jdbc.sink.task import VERSION, JdbcSinkTask
from connectrt.api import ConfigDef, ConfigValue, SinkConnector, Task, TopicPartition

__all__ = ["CONFIG_DEF", "JdbcSinkConnector"]

CONFIG_DEF = SINK_CONFIG_DEF


class JdbcSinkConnector(SinkConnector):
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
        parsed = {name: v.value for name, v in result.items()}
        for key, message in check_sink_rules(parsed):
            result[key].errors.append(message)
        return result

    def start(self, config: Mapping[str, str]) -> None:
        cfg = parse_sink_config(config)
        connect(cfg.raw).dispose()
        self._props = dict(config)

    def task_class(self) -> type[Task]:
        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

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
