"""`connectrt worker` keeps connectors in Kafka topics: kill -9, restart, everything is back.

A real worker process is managed over real HTTP. Connectors are left RUNNING, PAUSED and
STOPPED; the worker is killed with SIGKILL mid-stream and started again: each connector comes
back in its target state, the source resumes from its committed offset and no line is lost.
A second live worker on the same topics is refused with a clear message.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.harness import create_topic, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.smoke]


def _write_worker(tmp: Path, bootstrap: str, run: str, port: int) -> Path:
    path = tmp / f"worker-{port}.properties"
    path.write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        f"group.id=cluster-{run}\n"
        f"config.storage.topic=configs-{run}\n"
        f"status.storage.topic=status-{run}\n"
        f"offset.storage.topic=offsets-{run}\n"
        "offset.storage.partitions=3\n"
        "offset.flush.interval.ms=500\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        f"listeners=http://127.0.0.1:{port}\n"
        f"file.connectors.allowed.dirs={tempfile.gettempdir()}\n"
        "plugin.packages=tests\n"
    )
    return path


def _start(worker_file: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "connectrt.cli",
                "--log-level",
                "WARNING",
                "worker",
                str(worker_file),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"worker exited: {log.read_text()[-2000:]}"
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("worker not healthy within 90 s")


def _wait(predicate, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _states(url: str) -> dict[str, tuple[str, list[str]]]:
    body = httpx.get(f"{url}/connectors?expand=status", timeout=10).json()
    return {
        name: (e["status"]["connector"]["state"], [t["state"] for t in e["status"]["tasks"]])
        for name, e in body.items()
    }


def test_kill_9_restores_connectors_in_their_target_states(broker: EmbeddedBroker, tmp_path: Path):
    bootstrap, run = broker.bootstrap_servers, uuid.uuid4().hex[:8]
    topic = f"restart-{run}"
    create_topic(bootstrap, topic, partitions=2)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    worker_file = _write_worker(tmp_path, bootstrap, run, port)
    src, out, other = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "other.txt"
    src.write_text("".join(f"line-{i:06d}\n" for i in range(3000)))
    other.write_text("x\n")
    log = tmp_path / "worker.log"

    worker = _start(worker_file, log)
    http = httpx.Client(base_url=url, timeout=30)
    try:
        _wait_healthy(url, worker, log)
        assert (
            http.post(
                "/connectors",
                json={
                    "name": "src",
                    "config": {
                        "connector.class": "FileStreamSource",
                        "file": str(src),
                        "topic": topic,
                        "batch.size": "100",
                    },
                },
            ).status_code
            == 201
        )
        assert (
            http.post(
                "/connectors",
                json={
                    "name": "sink",
                    "initial_state": "PAUSED",
                    "config": {
                        "connector.class": "FileStreamSink",
                        "file": str(out),
                        "topics": topic,
                    },
                },
            ).status_code
            == 201
        )
        assert (
            http.post(
                "/connectors",
                json={
                    "name": "idle",
                    "config": {
                        "connector.class": "FileStreamSource",
                        "file": str(other),
                        "topic": f"{topic}-idle",
                    },
                },
            ).status_code
            == 201
        )
        assert http.put("/connectors/idle/stop").status_code == 204
        _wait(lambda: _states(url).get("idle", ("",))[0] == "STOPPED", "idle STOPPED")
        _wait(lambda: http.get("/connectors/src/offsets").json()["offsets"], "source offsets")

        # A second worker on the same topics is refused while the first is alive.
        second_port = free_port()
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "connectrt.cli",
                "worker",
                str(_write_worker(tmp_path, bootstrap, run, second_port)),
            ],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert second.returncode == 1
        assert "Another connectrt worker" in second.stderr
        assert f"status-{run}" in second.stderr and f"cluster-{run}" in second.stderr

        # Keep the source busy and kill the worker mid-stream: once it has committed a
        # position among the appended lines.
        first_part = src.stat().st_size
        with src.open("a") as f:
            f.write("".join(f"line-{i:06d}\n" for i in range(3000, 6000)))

        def position() -> int:
            offsets = http.get("/connectors/src/offsets").json()["offsets"]
            return int(offsets[0]["offset"]["position"]) if offsets else 0

        _wait(lambda: position() > first_part, "a source commit among the appended lines")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    finally:
        http.close()
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    worker = _start(worker_file, log)
    try:
        _wait_healthy(url, worker, log)
        _wait(lambda: set(_states(url)) == {"src", "sink", "idle"}, "connectors restored")
        _wait(lambda: _states(url)["src"] == ("RUNNING", ["RUNNING"]), "src RUNNING")
        _wait(lambda: _states(url)["sink"] == ("PAUSED", ["PAUSED"]), "sink PAUSED")
        assert _states(url)["idle"] == ("STOPPED", [])
        config = httpx.get(f"{url}/connectors/src/config").json()
        assert config["file"] == str(src) and config["batch.size"] == "100"

        # The source resumes from its committed offset: every line reaches the topic.
        expected = {f"line-{i:06d}" for i in range(6000)}

        def topic_lines() -> set[str]:
            return {v.decode() for vs in read_topic(bootstrap, topic).values() for _, v in vs}

        _wait(lambda: topic_lines() >= expected, "all lines in the topic")
        # Resume the sink: it writes everything out.
        assert httpx.put(f"{url}/connectors/sink/resume").status_code == 202
        _wait(
            lambda: out.exists() and set(out.read_text().splitlines()) >= expected,
            "all lines in the sink file",
        )
        assert set(out.read_text().splitlines()) == expected
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
