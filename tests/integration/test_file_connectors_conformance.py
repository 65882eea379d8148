"""The bundled FileStream connectors pass the connector conformance suite."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from connectors.file import FileStreamSinkConnector, FileStreamSourceConnector
from connectrt.testing.conformance import SinkConnectorConformance, SourceConnectorConformance

pytestmark = pytest.mark.integration


class TestFileStreamSourceConformance(SourceConnectorConformance):
    connector_class = FileStreamSourceConnector

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {"file": str(tmp_path / "source.txt"), "topic": topic}

    def add_input(self, config: Mapping[str, str], start: int, count: int) -> None:
        with open(config["file"], "a") as f:
            f.writelines(f"line {i}\n" for i in range(start, start + count))


class TestFileStreamSinkConformance(SinkConnectorConformance):
    connector_class = FileStreamSinkConnector

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {"file": str(tmp_path / "sink.txt"), "topics": topic}

    def written_count(self, config: Mapping[str, str]) -> int:
        path = Path(config["file"])
        return path.read_bytes().count(b"\n") if path.exists() else 0
