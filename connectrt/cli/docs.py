"""Configuration reference generated from the ConfigDefs (``connectrt config-docs``).

The configuration reference (docs/reference/configuration.md) is this output; a test fails
when they drift apart.
"""

from __future__ import annotations

from connectrt.api.config import NO_DEFAULT, ConfigDef, render_value

__all__ = ["config_reference", "config_table"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_table(definition: ConfigDef) -> str:
    rows = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    for key in definition.keys.values():
        if key.internal:
            continue
        if key.default is NO_DEFAULT:
            default = "*required*"
        else:
            rendered = render_value(key.default, key.type)
            default = "null" if rendered is None else f"`{rendered}`" if rendered else '`""`'
        rows.append(f"| `{key.name}` | {key.type.value} | {default} | {_cell(key.documentation)} |")
    return "\n".join(rows)


def config_reference() -> str:
    """Markdown for the worker, connector framework and bundled connector configs."""
    from connectors.datagen.config import CONFIG_DEF as DATAGEN
    from connectors.file.sink import CONFIG_DEF as FILE_SINK
    from connectors.file.source import CONFIG_DEF as FILE_SOURCE
    from connectors.iceberg.config import CONFIG_DEF as ICEBERG_SINK
    from connectors.jdbc.sink import CONFIG_DEF as JDBC_SINK
    from connectors.jdbc.source.config import SOURCE_CONFIG_DEF as JDBC_SOURCE
    from connectors.objectstore.config import CONFIG_DEF as OBJECT_STORE_SINK
    from connectors.postgres_cdc.config import CDC_CONFIG_DEF as POSTGRES_CDC
    from connectrt.runtime.config.connector import (
        COMMON_CONFIG_DEF,
        SINK_CONFIG_DEF,
        SOURCE_CONFIG_DEF,
    )
    from connectrt.runtime.config.worker import WORKER_CONFIG_DEF
    from connectrt.spark.config import SPARK_BACKEND_CONFIG_DEF

    common = set(COMMON_CONFIG_DEF.keys)
    sink_only = ConfigDef(k for n, k in SINK_CONFIG_DEF.keys.items() if n not in common)
    source_only = ConfigDef(k for n, k in SOURCE_CONFIG_DEF.keys.items() if n not in common)
    sections = [
        ("Worker (`WORKER.properties`)", WORKER_CONFIG_DEF),
        (
            "Worker on Spark (`connectrt spark`; `spark.*` keys go to Spark)",
            SPARK_BACKEND_CONFIG_DEF,
        ),
        ("Every connector", COMMON_CONFIG_DEF),
        ("Sink connectors", sink_only),
        ("Source connectors", source_only),
        ("FileStreamSource", FILE_SOURCE),
        ("FileStreamSink", FILE_SINK),
        ("JdbcSourceConnector", JDBC_SOURCE),
        ("JdbcSinkConnector", JDBC_SINK),
        (
            "PostgresCdcSourceConnector (io.debezium.connector.postgresql.PostgresConnector)",
            POSTGRES_CDC,
        ),
        ("ObjectStoreSinkConnector", OBJECT_STORE_SINK),
        ("IcebergSinkConnector", ICEBERG_SINK),
        ("DatagenConnector", DATAGEN),
    ]
    from connectrt.runtime.clients.key_table import security_key_table

    tables = [f"#### {title}\n\n{config_table(d)}" for title, d in sections]
    tables.append(
        "#### Kafka client security keys (top-level, `producer.`, `consumer.`, `admin.`, "
        "`*.override.`), translated to librdkafka's\n\n"
        "See [Connecting to a secured cluster](../operators/secured-clusters.md).\n\n"
        f"{security_key_table()}"
    )
    return "\n\n".join(tables) + "\n"
