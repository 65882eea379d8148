"""The plugin examples of README.md and docs/ on a real worker and the embedded broker.

* the README's source and sink, in process: every number arrives exactly once, and after a
  graceful restart both go on where they stopped;
* the sink connector guide's two sinks and the walkthrough's sink pass the conformance suite;
* the walkthrough, as a user runs it: ``connectrt standalone`` with the source in a copy of
  ``examples/quickstart`` (only the broker address and the REST port changed), the sink added
  with ``connectrt connectors create``, data in ``ticks.txt``, pause/resume/offsets over REST,
  ``connectrt connectors list``, Ctrl-C, and a second run with both connector files that
  continues the count with no line repeated.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.ports import free_port
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.status import State
from connectrt.testing.conformance import SinkConnectorConformance
from connectrt.testing.harness import WorkerHarness, create_topic
from connectrt.testing.metrics import scrape
from tests.docs_support import ROOT, load_example

pytestmark = pytest.mark.integration

QUICKSTART = ROOT / "examples" / "quickstart"
sys.path.insert(0, str(QUICKSTART))  # my_connectors, for the walkthrough's conformance test

from test_my_connectors import TestLineFileSink  # noqa: E402  (collected here)

__all__ = ["TestLineFileSink"]

STRINGS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- README ---------------------------------------------------------------------------------
def test_readme_source_and_sink_on_a_worker(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
) -> None:
    source, sink = load_example("readme-source"), load_example("readme-sink")
    registry.register_class(source.CountSource, "source")
    registry.register_class(sink.LinesSink, "sink")
    topic, out = unique_name("counts"), tmp_path / "counts.txt"
    counter, writer = unique_name("count"), unique_name("lines")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    source_config = {"connector.class": "CountSource", "topic": topic}
    sink_config = {"connector.class": "LinesSink", "topics": topic, "file": str(out)}

    harness = WorkerHarness(broker.bootstrap_servers, STRINGS).start()
    try:
        for round_, at_least in ((1, 15), (2, 30)):
            harness.start_connector(counter, source_config)
            harness.start_connector(writer, sink_config)
            harness.wait_for_tasks(writer, State.RUNNING)
            harness.wait_until(
                lambda n=at_least: len(_lines(out)) >= n,
                90,  # the sink's group join included
                f"at least {at_least} lines in the sink's file (round {round_})",
            )
            harness.stop()  # graceful: the source commits its count, the sink writes and commits
            written = _lines(out)
            assert written == [str(n) for n in range(1, len(written) + 1)], f"round {round_}"
            if round_ == 1:
                harness.start()
    finally:
        harness.stop()


# -- the sink connector guide ---------------------------------------------------------------
class TestGuideJsonLinesSink(SinkConnectorConformance):
    connector_class = load_example("jsonlines-sink").JsonLinesSink

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {"topics": topic, "file": str(tmp_path / "out.jsonl"), "batch.size": "64"}

    def written_count(self, config: Mapping[str, str]) -> int:
        return len(_lines(Path(config["file"])))


class TestGuideKeyValueSink(SinkConnectorConformance):
    connector_class = load_example("sqlite-sink").KeyValueSink

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {"topics": topic, "database": str(tmp_path / "kv.db"), "tasks.max": "2"}

    def written_count(self, config: Mapping[str, str]) -> int:
        """Records durably applied: the stored next offsets (partitions start at 0)."""
        if not Path(config["database"]).exists():
            return 0
        with sqlite3.connect(config["database"], timeout=30) as db:
            try:
                return db.execute("SELECT COALESCE(SUM(next), 0) FROM kv_offsets").fetchone()[0]
            except sqlite3.OperationalError:  # the table is not there yet
                return 0


# -- the walkthrough ------------------------------------------------------------------------
class _Walkthrough:
    """``connectrt standalone`` in a copy of examples/quickstart, as the walkthrough runs it."""

    def __init__(self, directory: Path, bootstrap: str) -> None:
        self.dir = directory
        shutil.copytree(QUICKSTART, directory, ignore=shutil.ignore_patterns("__pycache__"))
        self.port = free_port()
        worker = directory / "worker.properties"
        text = worker.read_text(encoding="utf-8")
        assert "bootstrap.servers=localhost:9092" in text and "listeners=http://:8083" in text
        text = text.replace("localhost:9092", bootstrap).replace(":8083", f":{self.port}")
        worker.write_text(text, encoding="utf-8")
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *connector_files: str) -> None:
        command = [sys.executable, "-m", "connectrt.cli", "standalone", "worker.properties"]
        with (self.dir / "worker.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [*command, *connector_files],
                cwd=self.dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": ""},
            )
        self.wait(lambda: self.get("/connectors?expand=status") is not None, "REST API up")

    def get(self, path: str) -> object | None:
        try:
            response = httpx.get(self.url + path, timeout=5)
        except httpx.HTTPError:
            return None
        return response.json() if response.status_code == 200 else None

    def put(self, path: str) -> int:
        return httpx.put(self.url + path, timeout=30).status_code

    def metric(self, name: str, connector: str) -> int:
        """The worker's ``connectrt_task_<name>_total`` of ``connector``'s task 0 (0 before
        the task reports any)."""
        with httpx.Client(base_url=self.url, timeout=30) as http:
            value = scrape(http).value(f"connectrt_task_{name}_total", connector=connector, task=0)
        return int(value or 0)

    def ticks(self) -> list[str]:
        return _lines(self.dir / "ticks.txt")

    def wait(self, predicate, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert self.proc is not None and self.proc.poll() is None, self.log()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}\n{self.log()}")
            time.sleep(0.2)

    def interrupt(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)  # Ctrl-C
        return self.proc.wait(60)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def log(self) -> str:
        return (self.dir / "worker.log").read_text(encoding="utf-8", errors="replace")[-3000:]


def _numbers(lines: list[str]) -> list[int]:
    assert all(line.startswith("tick ") for line in lines), lines[:5]
    return sorted(int(line.split()[1]) for line in lines)


def test_the_walkthrough(
    broker: EmbeddedBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _Walkthrough(tmp_path / "quickstart", broker.bootstrap_servers)
    try:
        # 5: run the source. 6: add the sink with the connectrt command, see the data flow.
        run.start("tick-source.properties")
        run.wait(lambda: _committed_count(run) > 0, "the source counts (and made its topic)")
        capsys.readouterr()
        create = ["connectors", "create", "-f", str(run.dir / "tick-sink.properties")]
        assert main([*create, "--url", run.url]) == 0
        assert "Created connector tick-file" in capsys.readouterr().out
        run.wait(lambda: len(run.ticks()) >= 10, "ticks.txt fills (the sink's group join)", 90)
        status = run.get("/connectors?expand=status")
        assert isinstance(status, dict)
        assert {n: s["status"]["connector"]["state"] for n, s in status.items()} == {
            "ticks": "RUNNING",
            "tick-file": "RUNNING",
        }

        # 7: manage them over REST, and with the connectrt command.
        assert run.put("/connectors/ticks/pause") == 202
        run.wait(lambda: _states(run, "ticks") == ["PAUSED", "PAUSED"], "ticks and its task PAUSED")

        # A paused task polls no more. What it polled before reaches the topic, and the sink
        # writes it at its next commit: wait until the sink has committed as many records as
        # the source polled and ticks.txt holds exactly those (then nothing is left to deliver).
        def drained() -> bool:
            polled = run.metric("records_polled", "ticks")
            return 0 < polled == _sink_committed(run) == len(run.ticks())

        run.wait(drained, "the sink to write and commit every tick polled before the pause")
        paused_at = len(run.ticks())
        # Not a synchronisation: an observation window (a running source ticks 10 times in it).
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            assert run.metric("records_polled", "ticks") == paused_at, "ticks polled while paused"
            assert len(run.ticks()) == paused_at, "ticks.txt grew while the source was paused"
            time.sleep(0.2)
        assert run.put("/connectors/ticks/resume") == 202
        run.wait(lambda: len(run.ticks()) > paused_at, "ticks again after resume")
        run.wait(lambda: _committed_count(run) >= paused_at, "the source to commit its count")
        capsys.readouterr()
        assert main(["connectors", "list", "--url", run.url]) == 0
        listing = capsys.readouterr().out
        assert "tick-file" in listing and "ticks" in listing and "RUNNING" in listing

        # 8: Ctrl-C, then a second run continues the count; no line lost or repeated.
        assert run.interrupt() == 0, run.log()
        first_run = _numbers(run.ticks())
        assert first_run == list(range(1, len(first_run) + 1))
        run.start("tick-source.properties", "tick-sink.properties")
        run.wait(
            lambda: len(run.ticks()) >= len(first_run) + 10,
            "ticks after the restart (the sink's group join included)",
            90,
        )
        assert run.interrupt() == 0, run.log()
        both_runs = _numbers(run.ticks())
        assert both_runs == list(range(1, len(both_runs) + 1)), "a tick lost or repeated"
    finally:
        run.kill()


def _states(run: _Walkthrough, name: str) -> list[str]:
    """The connector's state, then its tasks' ([] while the worker does not answer)."""
    status = run.get(f"/connectors/{name}/status")
    if not isinstance(status, dict):
        return []
    return [status["connector"]["state"], *(t["state"] for t in status["tasks"])]


def _sink_committed(run: _Walkthrough) -> int:
    """Records the sink has committed (its consumer group's offsets, summed over partitions)."""
    offsets = run.get("/connectors/tick-file/offsets")
    if not isinstance(offsets, dict):
        return 0
    return sum(int(entry["offset"]["kafka_offset"]) for entry in offsets["offsets"])


def _committed_count(run: _Walkthrough) -> int:
    """The source's committed offset, as ``GET /connectors/ticks/offsets`` shows it."""
    offsets = run.get("/connectors/ticks/offsets")
    if not isinstance(offsets, dict) or not offsets["offsets"]:
        return 0
    (entry,) = offsets["offsets"]
    assert entry["partition"] == {"clock": "main"}
    return int(entry["offset"]["count"])
