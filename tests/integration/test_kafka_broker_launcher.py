"""The Apache Kafka test broker (connectrt.testing.kafka_broker) really runs Apache Kafka.

These tests start their own broker whatever ``CONNECTRT_TEST_BROKER`` says. They need Java 17+
and (the first time on a machine) Maven: where either is missing they FAIL with the launcher's
error, never skip.
"""

from __future__ import annotations

import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.broker_choice import ExternalBroker
from connectrt.testing.java_runtime import JavaUnavailable
from connectrt.testing.kafka_broker import KafkaBroker

pytestmark = pytest.mark.integration

Names = Callable[[str], str]


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker() as started:
        yield started


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(60)


def _read_all(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every value of partition 0 up to its end (partition EOF) for this isolation level."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return values
            assert error is None, error
            value = msg.value()
            assert value is not None
            values.append(value)
        raise AssertionError(f"no partition EOF on {topic} within 60 s; read {values}")
    finally:
        consumer.close()


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, key=b"k", value=value, headers=[("h", b"1")])
    assert producer.flush(60) == 0


def test_records_round_trip_on_apache_kafka(kafka: KafkaBroker, unique_name: Names) -> None:
    assert kafka.is_alive()
    assert kafka.bootstrap_servers == f"127.0.0.1:{kafka.port}"
    assert "Kafka Server started" in kafka.log_path.read_text("utf-8")
    topic = unique_name("roundtrip")
    _create_topic(kafka.bootstrap_servers, topic)
    _produce(kafka.bootstrap_servers, topic, [b"a", b"b", b"c"])
    assert _read_all(kafka.bootstrap_servers, topic, "read_uncommitted") == [b"a", b"b", b"c"]
    # Apache Kafka's default for an auto-created topic is one partition (Tansu makes four).
    auto = unique_name("auto")
    _produce(kafka.bootstrap_servers, auto, [b"x"])
    metadata = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(
        auto, timeout=30
    )
    assert len(metadata.topics[auto].partitions) == 1


def test_read_committed_consumer_never_sees_an_aborted_transaction(
    kafka: KafkaBroker, unique_name: Names
) -> None:
    topic = unique_name("txn")
    _create_topic(kafka.bootstrap_servers, topic)
    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": unique_name("tx")}
    )
    producer.init_transactions(60)
    for batch, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2", b"a3"], False), ([b"c3"], True)):
        producer.begin_transaction()
        for value in batch:
            producer.produce(topic, value=value)
        assert producer.flush(60) == 0
        if commit:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    # The aborted records were written (a read_uncommitted reader sees them) ...
    assert _read_all(kafka.bootstrap_servers, topic, "read_uncommitted") == [
        b"c1",
        b"c2",
        b"a1",
        b"a2",
        b"a3",
        b"c3",
    ]
    # ... and Kafka's transaction markers hide them from a read_committed one.
    assert _read_all(kafka.bootstrap_servers, topic, "read_committed") == [b"c1", b"c2", b"c3"]


def test_an_external_broker_is_checked_not_started(kafka: KafkaBroker) -> None:
    external = ExternalBroker("127.0.0.1", kafka.port)
    with external:
        assert external.bootstrap_servers == kafka.bootstrap_servers
        assert external.is_alive() and external.pid is None
    assert kafka.is_alive()  # stopping an external broker leaves it running
    nobody = ExternalBroker("127.0.0.1", free_port(), startup_timeout=3)
    with pytest.raises(ConnectError, match=r"No Kafka broker answers at 127\.0\.0\.1:"):
        nobody.start()


def test_kill_restart_keeps_written_records_and_stop_leaves_nothing(unique_name: Names) -> None:
    broker = KafkaBroker()
    broker.start()
    try:
        port, data_dir = broker.port, broker.data_dir
        topic = unique_name("durable")
        _create_topic(broker.bootstrap_servers, topic)
        _produce(broker.bootstrap_servers, topic, [b"before-crash"])
        first_pid = broker.pid
        broker.kill()
        assert first_pid is not None and not psutil.pid_exists(first_pid)
        broker.restart()
        assert broker.pid != first_pid and broker.port == port and broker.data_dir == data_dir
        assert _read_all(broker.bootstrap_servers, topic, "read_committed") == [b"before-crash"]
        pid = broker.pid
    finally:
        broker.stop()
    assert pid is not None and not psutil.pid_exists(pid)
    assert not broker.is_alive()
    leftovers = [
        proc.pid
        for proc in psutil.process_iter(["cmdline"])
        if any(str(data_dir) in part for part in proc.info["cmdline"] or [])
    ]
    assert leftovers == [], f"processes still using {data_dir}: {leftovers}"
    assert not data_dir.exists()  # a folder the broker created is removed on a clean stop
    broker.stop()  # idempotent


def test_a_port_taken_before_the_broker_binds_it_starts_it_again_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first port the launcher chooses is free when chosen and taken before the JVM binds
    # it (here: by this test, listening on it), as another process on a busy machine may.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    monkeypatch.setattr(
        "connectrt.testing.kafka_broker.free_port", lambda: next(ports, None) or free_port()
    )
    folders: list[Path] = []
    mkdtemp = tempfile.mkdtemp

    def recorded_mkdtemp(*args: Any, **kwargs: Any) -> str:
        folders.append(Path(mkdtemp(*args, **kwargs)))
        return str(folders[-1])

    monkeypatch.setattr("connectrt.testing.jvm_service.tempfile.mkdtemp", recorded_mkdtemp)
    broker = KafkaBroker()
    try:
        broker.start()
        assert broker.port != taken.getsockname()[1]
        _create_topic(broker.bootstrap_servers, "after-a-taken-port")
        # two attempts, each in a folder of its own; the failed one's is gone
        assert len(folders) == 2 and folders[1] == broker.data_dir
        assert not folders[0].exists()
    finally:
        broker.stop()
        taken.close()


def test_a_missing_java_fails_clearly(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-jdk" / "bin" / "java"
    with pytest.raises(JavaUnavailable, match="Java 17 or newer") as caught:
        KafkaBroker(java=str(missing)).start()
    assert str(missing) in str(caught.value)


def test_an_old_java_fails_clearly(tmp_path: Path) -> None:
    old = tmp_path / "java"
    old.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n", "utf-8")
    old.chmod(old.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(JavaUnavailable, match=r"is Java 8\. Apache Kafka 4\.4 needs Java 17"):
        KafkaBroker(java=str(old)).start()


def test_a_killed_test_process_takes_its_broker_along(tmp_path: Path) -> None:
    """A process that started a KafkaBroker and is then SIGKILLed (no teardown runs) leaves no
    JVM behind: the broker was armed to die with it (connectrt.testing.child_lifeline)."""
    pid_file = tmp_path / "jvm.pid"
    script = (
        "import sys, time\n"
        "from connectrt.testing.kafka_broker import KafkaBroker\n"
        "broker = KafkaBroker().start()\n"
        f"open({str(pid_file)!r}, 'w').write(str(broker.pid))\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 180
        while not pid_file.exists() or not pid_file.read_text():
            assert owner.poll() is None, "the owning process ended before its broker started"
            assert time.monotonic() < deadline, "no broker started within 180 s"
            time.sleep(0.2)
        jvm = psutil.Process(int(pid_file.read_text()))
        assert jvm.is_running()
    finally:
        owner.kill()
        owner.wait(30)
    _gone, alive = psutil.wait_procs([jvm], timeout=30)
    assert not alive, f"the broker JVM {jvm.pid} outlived the process that started it"
