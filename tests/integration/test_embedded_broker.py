from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import psutil
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConnectError

pytestmark = [pytest.mark.integration, pytest.mark.smoke]


def test_produce_consume_round_trip(
    broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    assert broker.is_alive()
    assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
    topic = unique_name("roundtrip")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(5)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic, key=b"k", value=b"hello", headers=[("h", b"1")])
    assert producer.flush(5) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": unique_name("g"),
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 10
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
        assert msg is not None and msg.error() is None
        assert (msg.key(), msg.value(), msg.headers()) == (b"k", b"hello", [("h", b"1")])
    finally:
        consumer.close()


def test_port_in_use_fails_clearly(broker: EmbeddedBroker) -> None:
    # Tansu exits 0 when it cannot bind; the fixture logic must notice, not hang or succeed.
    second = EmbeddedBroker(port=broker.port, startup_timeout=5)
    started = time.monotonic()
    with pytest.raises(ConnectError, match=re.escape(f"127.0.0.1:{broker.port}")):
        second.start()
    assert time.monotonic() - started < 10
    assert not second.is_alive()
    assert broker.is_alive()


def test_context_manager_stops_the_process() -> None:
    with EmbeddedBroker() as embedded:
        pid = embedded.pid
        assert pid is not None and embedded.is_alive()
        assert "ready in" in embedded.output_tail()
    assert not embedded.is_alive()
    embedded.stop()  # idempotent


def test_cli_prints_bootstrap_and_stops_on_sigterm() -> None:
    code = "from connectrt.broker import run_broker_cli; raise SystemExit(run_broker_cli())"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap.servers=127.0.0.1:")
        port = int(line.rsplit(":", 1)[1])
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        assert admin.list_topics(timeout=5) is not None
        children = psutil.Process(proc.pid).children()
        assert len(children) == 1, children  # the Tansu process
        tansu = children[0]
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        elapsed = time.monotonic() - signalled
        assert proc.stderr is not None
        assert proc.stderr.read() == (
            "note: in memory, not Apache Kafka; Debian's kcat (librdkafka 2.0.2) cannot talk "
            "to the embedded broker\n"
        )
        # Both gone when the command returns: it waits for the broker (killing it after a
        # 0.5 s grace). The bound is generous for a loaded machine; nominally ~0.5 s at most.
        assert not tansu.is_running() or tansu.status() == psutil.STATUS_ZOMBIE
        assert elapsed < 3.0, f"connectrt broker took {elapsed:.2f} s to stop"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
