"""The Iceberg sink passes the connector conformance suite (SQL catalog on SQLite, local
warehouse): ``pre_commit`` never reports offsets past the rows in committed snapshots.

The suite produces string values: they are written as the one column ``value``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import NoSuchTableError

from connectors.iceberg import IcebergSinkConnector
from connectrt.testing.conformance import SinkConnectorConformance

pytestmark = pytest.mark.integration


class TestIcebergSinkConformance(SinkConnectorConformance):
    connector_class = IcebergSinkConnector

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {
            "topics": topic,
            "iceberg.tables": "conformance.records",
            "iceberg.tables.auto-create-enabled": "true",
            "iceberg.catalog.type": "sql",
            "iceberg.catalog.uri": f"sqlite:///{tmp_path / 'catalog.db'}",
            "iceberg.catalog.warehouse": f"file://{tmp_path / 'warehouse'}",
            "iceberg.control.commit.interval-ms": "300",
        }

    def written_count(self, config: Mapping[str, str]) -> int:
        catalog = load_catalog(
            "iceberg",
            type="sql",
            uri=config["iceberg.catalog.uri"],
            warehouse=config["iceberg.catalog.warehouse"],
        )
        try:
            return catalog.load_table("conformance.records").scan().to_arrow().num_rows
        except NoSuchTableError:
            return 0
