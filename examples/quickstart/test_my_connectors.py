"""The conformance suite on the walkthrough's sink: run `pytest -p connectrt.testing.pytest_plugin
test_my_connectors.py` in this directory (it starts an embedded broker)."""

from collections.abc import Mapping
from pathlib import Path

from my_connectors import LineFileSink

from connectrt.testing.conformance import SinkConnectorConformance


class TestLineFileSink(SinkConnectorConformance):
    connector_class = LineFileSink

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {"topics": topic, "file": str(tmp_path / "ticks.txt")}

    def written_count(self, config: Mapping[str, str]) -> int:
        path = Path(config["file"])
        return path.read_text(encoding="utf-8").count("\n") if path.exists() else 0
