"""Bad input gets a clear error and loses nothing: CLI errors, failing tasks, bad records."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic

pytestmark = pytest.mark.integration


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "--log-level", "ERROR", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _worker_file(tmp: Path, bootstrap: str, **extra: str) -> Path:
    p = tmp / "worker.properties"
    lines = [
        f"bootstrap.servers={bootstrap}",
        "listeners=http://127.0.0.1:0",
        f"file.connectors.allowed.dirs={tmp}",
        "plugin.packages=tests",
    ] + [f"{k.replace('_', '.')}={v}" for k, v in extra.items()]
    p.write_text("\n".join(lines) + "\n")
    return p


def _error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]


def test_missing_required_config_is_rejected_per_field(tmp_path: Path):
    conn = tmp_path / "src.properties"
    conn.write_text("name=s\nconnector.class=FileStreamSource\nfile=/dev/null\n")
    result = _cli("standalone", str(_worker_file(tmp_path, "127.0.0.1:1")), str(conn))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert _error_lines(result) == [
        "error: Connector configuration is invalid and contains the following 1 error(s):"
    ]
    assert 'Missing required configuration "topic" which has no default value.' in result.stderr


def test_unknown_connector_class_names_what_was_looked_for(tmp_path: Path):
    conn = tmp_path / "c.json"
    conn.write_text('{"name": "x", "config": {"connector.class": "NoSuchConnector"}}')
    result = _cli("standalone", str(_worker_file(tmp_path, "127.0.0.1:1")), str(conn))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = _error_lines(result)
    assert "Connector" in line and "NoSuchConnector" in line
    assert "FileStreamSourceConnector" in line  # lists what is available


def test_missing_files_give_one_line_errors(tmp_path: Path):
    result = _cli("standalone", str(tmp_path / "nope.properties"))
    assert result.returncode == 1
    assert _error_lines(result) == [f"error: Config file not found: {tmp_path / 'nope.properties'}"]
    result = _cli(
        "standalone", str(_worker_file(tmp_path, "127.0.0.1:1")), str(tmp_path / "missing.json")
    )
    assert _error_lines(result) == [
        f"error: Connector config file not found: {tmp_path / 'missing.json'}"
    ]


def test_unreachable_broker_fails_fast_with_a_clear_error(tmp_path: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    worker = _worker_file(tmp_path, f"127.0.0.1:{port}", worker_startup_timeout_ms="2000")
    t0 = time.monotonic()
    result = _cli("standalone", str(worker), timeout=60)
    assert result.returncode == 1
    assert time.monotonic() - t0 < 30
    (line,) = _error_lines(result)
    assert f"127.0.0.1:{port}" in line and "reach Kafka" in line


def test_unreadable_file_fails_the_task_and_the_worker_stays_up(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic = unique_name("ok")
    create_topic(broker.bootstrap_servers, topic)
    good = tmp_path / "good.txt"
    good.write_text("x\ny\n")
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "bad", {"connector.class": "FileStreamSource", "file": str(tmp_path), "topic": topic}
        )  # a directory
        h.start_connector(
            "good", {"connector.class": "FileStreamSource", "file": str(good), "topic": topic}
        )
        (failed,) = h.wait_for_tasks("bad", State.FAILED, timeout=60)
        assert failed.trace is not None
        assert "TASK_POLL" in failed.trace and "Is a directory" in failed.trace
        assert "Task bad-0" in failed.trace
        h.wait_until(
            lambda: sum(m.records_committed for m in h.metrics("good").values()) == 2,
            60,
            "the good source to commit its 2 lines",
        )
        assert h.running.status.tasks("good")[0].state is State.RUNNING


def test_record_not_matching_its_schema_fails_with_the_field_named(
    broker: EmbeddedBroker, unique_name
):
    from connectrt.runtime.plugins.registry import registry
    from tests.plugins.bad_source import SchemaMismatchSource

    registry.register_class(SchemaMismatchSource)
    topic = unique_name("schema")
    create_topic(broker.bootstrap_servers, topic)
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector("mismatch", {"connector.class": "SchemaMismatchSource", "topic": topic})
        (failed,) = h.wait_for_tasks("mismatch", State.FAILED, timeout=60)
    assert failed.trace is not None
    assert "VALUE_CONVERTER" in failed.trace
    assert "DataError" in failed.trace and "'email'" in failed.trace


def test_connector_generating_too_many_tasks_fails(broker: EmbeddedBroker, unique_name):
    from connectrt.runtime.plugins.registry import registry
    from tests.plugins.bad_source import TooManyTasksSource

    registry.register_class(TooManyTasksSource)
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "greedy",
            {"connector.class": "TooManyTasksSource", "topic": unique_name("t"), "tasks.max": "2"},
        )
        status = h.running.status.connector("greedy")
    assert status is not None and status.state is State.FAILED
    assert "has generated 3 tasks, which is greater than 2" in (status.trace or "")


def test_unknown_worker_keys_are_named_in_the_log_at_start_up(
    broker: EmbeddedBroker, tmp_path: Path
):
    """A real ``connectrt standalone`` at the default log level names a misspelt key (with the
    key it is close to) and an unknown one, as Kafka Connect does, and still starts."""
    worker = _worker_file(tmp_path, broker.bootstrap_servers)
    with worker.open("a") as f:
        f.write("offset.flush.intervall.ms=1000\nfrobnicate.level=3\nproducer.linger.ms=5\n")
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "connectrt.cli", "standalone", str(worker)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 90
            while "connectrt worker ready" not in log_path.read_text():
                assert proc.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "timed out waiting for the worker to start"
                time.sleep(0.2)
        finally:
            proc.terminate()
            proc.wait(60)
    lines = [ln for ln in log_path.read_text().splitlines() if "isn't a known config" in ln]
    assert len(lines) == 2, lines
    assert "WARN" in lines[0] and "'frobnicate.level'" in lines[0]
    assert "'offset.flush.intervall.ms'" in lines[1]
    assert "Did you mean offset.flush.interval.ms?" in lines[1]
