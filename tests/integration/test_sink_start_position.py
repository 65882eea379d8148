"""Where a new sink task starts each partition: at the group's committed offset where there is
one, else where ``auto.offset.reset`` says, on the real broker.

The runtime resolves "no committed offset" itself, in the rebalance callback, before librdkafka
starts the partitions (:mod:`connectrt.runtime.sink.start_offsets`: librdkafka would reset them
only after a fixed 100 ms backoff). These tests hold that shortcut to the same outcome as the
client's own path: a 3-partition topic with 5 records in each and the connector's group already
holding a committed offset (3) for partition 1, then a sink connector with the default policy
(``earliest``) or ``consumer.override.auto.offset.reset=latest``:

* ``earliest``: partitions 0 and 2 from offset 0, partition 1 from 3 (its commit), nothing else;
* ``latest``: partition 1 from 3 all the same, and of partitions 0 and 2 none of the old
  records, then every record produced after the task started them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.testing.broker_choice import SessionBroker, apache_kafka
from connectrt.testing.rest import RestWorker, running_rest_worker, wait_for
from tests.plugins.rebalance_log_sink import LOCK, LOGS

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 5
COMMITTED = 3  # partition 1's committed offset in the connector's group, before it exists


@pytest.fixture(scope="module")
def worker(broker: SessionBroker) -> Iterator[RestWorker]:
    """A worker on Apache Kafka: the embedded broker answers ListOffsets LATEST with the last
    batch's base offset + 1 (``auto.offset.reset=latest`` then starts inside the old records)."""
    with apache_kafka(broker) as kafka, running_rest_worker(kafka.bootstrap_servers) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def _produce(bootstrap: str, topic: str, per_partition: int, tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        for i in range(per_partition):
            producer.produce(topic, value=f"{tag}-{p}-{i}".encode(), partition=p)
    assert producer.flush(60) == 0, "records not acknowledged within 60 s"


def _topic_with_a_commit(bootstrap: str, topic: str, group: str) -> None:
    """The topic, PER_PARTITION records in each partition, and ``group`` committed at
    COMMITTED on partition 1 only."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[
        topic
    ].result(60)
    _produce(bootstrap, topic, PER_PARTITION, "old")
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committer.commit(offsets=[KafkaTopicPartition(topic, 1, COMMITTED)], asynchronous=False)
    finally:
        committer.close()


def _delivered(log_id: str) -> list[tuple[int, int]]:
    with LOCK:
        return sorted((p, o) for p, o, _task in LOGS[log_id].deliveries)


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_a_new_sink_starts_at_the_commit_or_where_the_reset_policy_says(
    reset: str, worker: RestWorker, unique_name: Callable[[str], str]
) -> None:
    bootstrap = worker.props["bootstrap.servers"]
    topic, name, log_id = unique_name("start"), unique_name("start-sink"), unique_name("log")
    _topic_with_a_commit(bootstrap, topic, f"connect-{name}")
    config = {
        "connector.class": "tests.plugins.rebalance_log_sink.RebalanceLogSink",
        "topics": topic,
        "tasks.max": "1",
        "log.id": log_id,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    if reset == "latest":
        config["consumer.override.auto.offset.reset"] = "latest"

    response = worker.http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 201, response.text

    from_commit = [(1, o) for o in range(COMMITTED, PER_PARTITION)]
    if reset == "earliest":
        expected = sorted([(p, o) for p in (0, 2) for o in range(PER_PARTITION)] + from_commit)
        wait_for(
            lambda: len(_delivered(log_id)) >= len(expected),
            120,
            f"{len(expected)} records delivered",
        )
        assert _delivered(log_id) == expected
    else:
        wait_for(
            lambda: _delivered(log_id) == from_commit,
            120,
            "partition 1's records after its commit (the task holds the partitions)",
        )
        # The end of partitions 0 and 2 is resolved as the task starts them; records produced
        # meanwhile may fall before it. Produce a record a partition until both deliver one.
        ends = PER_PARTITION
        deadline = time.monotonic() + 60
        while not {0, 2} <= {p for p, o in _delivered(log_id) if o >= PER_PARTITION}:
            assert time.monotonic() < deadline, f"no new record delivered: {_delivered(log_id)}"
            _produce(bootstrap, topic, 1, "new")
            ends += 1
            time.sleep(0.2)
        wait_for(
            lambda: all((p, ends - 1) in _delivered(log_id) for p in range(PARTITIONS)),
            120,
            f"every partition's records up to offset {ends - 1}",
        )
        delivered = _delivered(log_id)
        assert [o for p, o in delivered if p == 1] == list(range(COMMITTED, ends))
        for p in (0, 2):  # none of the old records; then every new one from the first
            offsets = [o for q, o in delivered if q == p]
            assert offsets[0] >= PER_PARTITION, delivered
            assert offsets == list(range(offsets[0], ends)), delivered
    status = worker.http.get(f"/connectors/{name}/status").json()
    assert status["tasks"][0]["state"] == "RUNNING", status
    with LOCK:
        assert not LOGS[log_id].violations, LOGS[log_id].violations
