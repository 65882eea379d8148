"""``connectrt demo`` (what ``make demo`` runs): the file pipeline and datagen orders as Avro
through the built-in registry, side by side, with progress printed for both."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from connectrt.cli.demo import run_demo
from connectrt.ports import free_port

pytestmark = pytest.mark.integration


def test_demo_runs_both_pipelines(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert run_demo(str(tmp_path), 200, 8.0, free_port()) == 0
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    out = capsys.readouterr().out
    assert "quickstart orders" in out and "topic demo-orders as Avro" in out
    progress = re.findall(r"orders (\d+) Avro records", out)
    assert progress, out
    final = re.search(r"orders: (\d+) Avro records in topic demo-orders", out)
    assert final is not None and int(final.group(1)) > 0, out
    assert "'demo-datagen-orders': 'RUNNING'" in out
    lines = (tmp_path / "output.txt").read_text().splitlines()
    assert {"demo line 0", "demo line 199"} <= set(lines)  # topic has 4 partitions: any order
    orders = (tmp_path / "datagen-orders.properties").read_text()
    assert "value.converter=io.confluent.connect.avro.AvroConverter" in orders
    assert "schema.registry.enable=true" in (tmp_path / "worker.properties").read_text()
