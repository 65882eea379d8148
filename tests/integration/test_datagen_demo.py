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
    # Every line fits 80 columns (but the one naming the demo directory, here a long one).
    assert all(len(line) <= 80 for line in out.splitlines() if str(tmp_path) not in line), out
    progress = re.findall(r"orders +(\d+)  connectors (\d)/(\d) RUNNING", out)
    assert progress, out
    assert progress[-1][1:] == ("3", "3"), out
    final = re.search(r"orders: (\d+) Avro records in topic demo-orders", out)
    assert final is not None and int(final.group(1)) > 0, out
    written = (tmp_path / "output.txt").read_text().splitlines()
    # One partition: the output is a prefix of the input, in order.
    assert written == [f"demo line {i}" for i in range(len(written))]
    assert len(written) >= 200
    stopped = re.search(r"demo stopped: input (\d+) lines, output (\d+) lines", out)
    assert stopped is not None and int(stopped.group(2)) == len(written)
    in_flight = int(stopped.group(1)) - len(written)
    if in_flight:
        assert f"{in_flight} line" in out and "in flight at the stop" in out

    orders = (tmp_path / "datagen-orders.properties").read_text()
    assert "value.converter=io.confluent.connect.avro.AvroConverter" in orders
    assert "schema.registry.enable=true" in (tmp_path / "worker.properties").read_text()
