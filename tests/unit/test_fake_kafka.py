"""The in-memory Kafka of connectrt.testing behaves as the runtime's commit-rule tests assume."""

from __future__ import annotations

from connectrt.runtime.clients.kafka import KafkaConsumer, KafkaError, KafkaProducer, TopicPartition
from connectrt.testing.fake_kafka import FakeKafka


def test_a_delivery_report_waits_for_poll_and_a_failed_one_leaves_no_record() -> None:
    kafka = FakeKafka()
    kafka.create_topic("t", 2)
    reports: list[tuple[KafkaError | None, int]] = []
    producer: KafkaProducer = kafka.producer(
        {"on_delivery": lambda err, msg: reports.append((err, msg.offset()))}
    )
    producer.produce("t", b"a", partition=1)
    assert reports == [] and len(producer) == 1
    producer.poll(0)
    assert reports == [(None, 0)]
    kafka.producer().fail_deliveries(0)
    fake = kafka.producer()
    fake.fail_deliveries(1)
    failed: list[KafkaError | None] = []
    fake.produce("t", b"b", partition=1, on_delivery=lambda err, msg: failed.append(err))
    fake.flush()
    assert failed and failed[0] is not None
    assert [m.value() for m in kafka.records("t", 1)] == [b"a"]


def test_an_aborted_transaction_is_never_read_and_a_committed_one_is() -> None:
    kafka = FakeKafka()
    producer = kafka.producer({"transactional.id": "x"})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("t", b"gone")
    producer.abort_transaction()
    producer.begin_transaction()
    producer.produce("t", b"kept")
    assert kafka.records("t") == []
    producer.commit_transaction()
    assert [m.value() for m in kafka.records("t")] == [b"kept"]


def test_a_consumer_resumes_from_its_group_commit_after_a_rebalance() -> None:
    kafka = FakeKafka()
    for i in range(5):
        kafka.append("t", str(i).encode())
    assigned: list[list[TopicPartition]] = []
    revoked: list[list[TopicPartition]] = []
    consumer: KafkaConsumer = kafka.consumer({"group.id": "g"})
    consumer.subscribe(
        ["t"],
        on_assign=lambda c, parts: assigned.append(parts),
        on_revoke=lambda c, parts: revoked.append(parts),
    )
    assert [m.offset() for m in consumer.consume(3, 1.0)] == [0, 1, 2]
    consumer.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)
    kafka.rebalance()
    assert [m.offset() for m in consumer.consume(10, 1.0)] == [2, 3, 4]
    assert len(assigned) == 2 and len(revoked) == 1
    assert kafka.committed("g") == {("t", 0): 2}
