"""``connectrt demo`` (what ``make demo`` runs), as a user runs it: a subprocess of the real
command, stopped by ``--duration`` or by Ctrl-C (SIGINT).

It shows the file pipeline and datagen orders as Avro side by side: a short banner, one
progress line of at most 80 columns every 2 s (no Python reprs), no log lines unless
``--verbose``, and a summary whose counts match the files; with one partition per topic the
output keeps the input's order."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from connectrt.ports import free_port
from connectrt.testing.rest import wait_for

pytestmark = pytest.mark.integration

PROGRESS = re.compile(
    r"^ +\d+s  lines (\d+) in, (\d+) out  orders (\d+)  connectors (\d)/3 running$"
)
SUMMARY_LINES = re.compile(r"^  lines:  (\d+) in, (\d+) out, in order \((.+)\)$")
SUMMARY_ORDERS = re.compile(r"^  orders: (\d+) Avro records in topic demo-orders$")


def _demo(tmp: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "connectrt.cli", "demo", "--dir", str(tmp / "demo")),
            *("--lines", "200", "--port", str(free_port()), *args),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _check_output(out: str, demo_dir: Path) -> None:
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if PROGRESS.match(line))
    assert "{" not in out and "'" not in "".join(lines[first:]), out  # no dict or repr
    assert "  console: http" in out and "/ui" in out
    assert "quickstart orders, 50/s -> topic demo-orders as Avro" in out
    assert "Debian's kcat (librdkafka 2.0.2) cannot talk to the embedded broker" in out
    progress = [m for line in lines if (m := PROGRESS.match(line))]
    assert progress, out
    assert all(len(line) <= 80 for line in lines if PROGRESS.match(line)), out
    assert progress[-1].group(4) == "3", out  # all three connectors RUNNING at the end
    assert int(progress[-1].group(3)) > 0, out  # orders produced
    summary = next(m for line in lines if (m := SUMMARY_LINES.match(line)))
    lines_in, lines_out = int(summary.group(1)), int(summary.group(2))
    inp = (demo_dir / "input.txt").read_text().splitlines()
    output = (demo_dir / "output.txt").read_text().splitlines()
    assert (lines_in, lines_out) == (len(inp), len(output))
    assert output == inp[: len(output)]  # one partition: the input's order
    assert lines_out >= 200, out  # at least the lines written up front arrived
    if lines_in > lines_out:  # a tail in flight is explained, never silent
        assert "still in flight" in out, out
    orders = next(m for line in lines if (m := SUMMARY_ORDERS.match(line)))
    assert int(orders.group(1)) >= int(progress[-1].group(3))
    assert (
        "topic.creation.default.partitions=1" in (demo_dir / "file-source.properties").read_text()
    )
    worker = (demo_dir / "worker.properties").read_text()
    assert "consumer.session.timeout.ms=6000" in worker
    assert "schema.registry.enable=true" in worker
    orders_file = (demo_dir / "datagen-orders.properties").read_text()
    assert "value.converter=io.confluent.connect.avro.AvroConverter" in orders_file


def test_demo_runs_both_pipelines_quietly_for_a_duration(tmp_path: Path):
    with _demo(tmp_path, "--duration", "8") as demo:
        try:
            out, err = demo.communicate(timeout=180)
        finally:
            demo.kill()
    assert demo.returncode == 0, err
    assert err == ""  # no log line of the worker, httpx, uvicorn or librdkafka
    _check_output(out, tmp_path / "demo")


def _reader(stream: object, into: list[str]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.extend(stream), daemon=True)  # type: ignore[call-overload]
    thread.start()
    return thread


def test_demo_stops_on_ctrl_c_and_logs_when_verbose(tmp_path: Path):
    out: list[str] = []
    err: list[str] = []
    with _demo(tmp_path, "--verbose") as demo:
        readers = [_reader(demo.stdout, out), _reader(demo.stderr, err)]

        def sink_wrote() -> bool:
            matches = (PROGRESS.match(line.rstrip("\n")) for line in list(out))
            return demo.poll() is not None or any(m and int(m.group(2)) > 0 for m in matches)

        try:
            wait_for(sink_wrote, 120, "a progress line with lines written by the sink")
            # The worker runs with mimalloc (the dev setup installs it): executed again
            # with it preloaded, under the same process id.
            assert "libmimalloc.so" in Path(f"/proc/{demo.pid}/maps").read_text()
            demo.send_signal(signal.SIGINT)  # Ctrl-C
            demo.wait(120)
        finally:
            demo.kill()
            for reader in readers:
                reader.join(10)
    text = "".join(out)
    assert demo.returncode == 0, "".join(err)
    assert "demo stopped after" in text, text
    _check_output(text, tmp_path / "demo")
    assert "connectrt worker ready" in "".join(err)  # --verbose shows the worker's INFO logs
