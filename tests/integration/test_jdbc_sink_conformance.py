"""The JDBC sink passes the connector conformance suite on SQLite files, with and without
exactly-once (where ``pre_commit`` returns the offsets stored in the database).

The suite produces string values, so a HoistField transform wraps each into a one-field struct.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

import pytest

from connectors.jdbc.sink import JdbcSinkConnector
from connectrt.testing.conformance import SinkConnectorConformance

pytestmark = pytest.mark.integration


def _count(config: Mapping[str, str]) -> int:
    path = Path(config["connection.url"].removeprefix("sqlite:///"))
    if not path.exists():
        return 0
    con = sqlite3.connect(path)
    try:
        return int(con.execute("SELECT count(*) FROM conformance").fetchone()[0])
    except sqlite3.OperationalError:  # table not created yet
        return 0
    finally:
        con.close()


class TestJdbcSinkConformance(SinkConnectorConformance):
    connector_class = JdbcSinkConnector

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {
            "topics": topic,
            "connection.url": f"sqlite:///{tmp_path / 'conformance.db'}",
            "table.name.format": "conformance",
            "auto.create": "true",
            "pk.mode": "kafka",
            "transforms": "hoist",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "v",
        }

    def written_count(self, config: Mapping[str, str]) -> int:
        return _count(config)


class TestJdbcSinkExactlyOnceConformance(TestJdbcSinkConformance):
    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {**super().connector_config(tmp_path, topic), "exactly.once.enabled": "true"}
