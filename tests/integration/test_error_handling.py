"""errors.*: stages in traces, tolerance, the dead letter queue (sink and source), the errant
record reporter and automatic task restarts."""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic, produce, read_topic
from tests.plugins import flaky_tasks
from tests.plugins.bad_source import SchemaMismatchSource
from tests.plugins.flaky_tasks import FailTwiceSink, ReportingSink

pytestmark = pytest.mark.integration

GOOD = b'{"schema":{"type":"string","optional":false},"payload":"%s"}'
MALFORMED = b'{"schema":{"type":"string","optional":false},"payload":'  # cut short


def _fill(broker: EmbeddedBroker, topic: str, values: list[bytes]) -> None:
    create_topic(broker.bootstrap_servers, topic)
    produce(broker.bootstrap_servers, topic, values)


def _dlq(broker: EmbeddedBroker, topic: str) -> list[tuple[bytes | None, bytes | None, dict]]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([KafkaTopicPartition(topic, 0, -2)])
    out = []
    try:
        while True:
            msgs = consumer.consume(100, 5)
            if not msgs:
                break
            done = False
            for m in msgs:
                if m.error():
                    done = True
                    continue
                out.append((m.key(), m.value(), {k: v.decode() for k, v in m.headers() or []}))
            if done:
                break
    finally:
        consumer.close()
    return out


def _sink(h: WorkerHarness, name: str, topic: str, out: Path, **extra: str) -> None:
    h.start_connector(
        name, {"connector.class": "FileStreamSink", "file": str(out), "topics": topic, **extra}
    )


def test_malformed_json_with_tolerance_none_fails_naming_the_stage(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic = unique_name("strict")
    _fill(broker, topic, [GOOD % b"a", MALFORMED, GOOD % b"c"])
    with WorkerHarness(broker.bootstrap_servers) as h:
        _sink(h, "strict", topic, tmp_path / "out.txt")
        (failed,) = h.wait_for_tasks("strict", State.FAILED, timeout=60)
    trace = failed.trace or ""
    assert "Tolerance exceeded in error handler" in trace
    assert "VALUE_CONVERTER" in trace and "task strict-0" in trace
    assert f"topic={topic}, partition=0, offset=1" in trace


def test_malformed_json_with_tolerance_all_goes_to_the_dlq(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic, dlq = unique_name("lenient"), unique_name("dlq")
    _fill(broker, topic, [GOOD % b"a", MALFORMED, GOOD % b"c"])
    out = tmp_path / "out.txt"
    with WorkerHarness(broker.bootstrap_servers) as h:
        _sink(
            h,
            "lenient",
            topic,
            out,
            **{
                "errors.tolerance": "all",
                "errors.log.enable": "true",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("lenient")[0].records_committed >= 3,
            60,
            "the sink to commit all 3 records (the malformed one through the DLQ)",
        )
        assert h.task_states("lenient")[0].state is State.RUNNING
    assert out.read_text().splitlines() == ["a", "c"]
    ((_key, value, headers),) = _dlq(broker, dlq)
    assert value == MALFORMED
    assert headers["__connect.errors.topic"] == topic
    assert headers["__connect.errors.partition"] == "0"
    assert headers["__connect.errors.offset"] == "1"
    assert headers["__connect.errors.connector.name"] == "lenient"
    assert headers["__connect.errors.task.id"] == "0"
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert headers["__connect.errors.class.name"] == "connectrt.converters.json.JsonConverter"
    assert headers["__connect.errors.exception.class.name"].endswith("DataError")
    assert headers["__connect.errors.exception.message"]
    assert "Traceback" in headers["__connect.errors.exception.stacktrace"]


def test_source_conversion_failure_goes_to_the_dlq(broker: EmbeddedBroker, unique_name):
    registry.register_class(SchemaMismatchSource)
    topic, dlq = unique_name("src"), unique_name("srcdlq")
    create_topic(broker.bootstrap_servers, topic)
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "mismatch",
            {
                "connector.class": "SchemaMismatchSource",
                "topic": topic,
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("mismatch")[0].records_skipped == 1, 60, "the bad record skipped"
        )
        h.wait_until(
            lambda: h.metrics("mismatch")[0].offset_commits >= 1, 60, "a source offset commit"
        )
        assert h.task_states("mismatch")[0].state is State.RUNNING
    assert len(read_topic(broker.bootstrap_servers, topic)[0]) == 1  # the valid record
    ((_, value, headers),) = _dlq(broker, dlq)
    document = orjson.loads(value or b"{}")
    assert document["topic"] == topic and document["source_offset"] == {"n": 2}
    assert document["value"] == {"id": 2, "email": None}
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert "email" in headers["__connect.errors.exception.message"]


def test_errant_record_reporter_sends_the_original_record(broker: EmbeddedBroker, unique_name):
    registry.register_class(ReportingSink)
    topic, dlq = unique_name("errant"), unique_name("errantdlq")
    _fill(broker, topic, [GOOD % b"ok1", GOOD % b"bad", GOOD % b"ok2"])
    store = uuid.uuid4().hex
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "errant",
            {
                "connector.class": "ReportingSink",
                "topics": topic,
                "store.id": store,
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("errant")[0].records_committed >= 3,
            60,
            "the sink to commit all 3 records (the reported one through the DLQ)",
        )
    assert flaky_tasks.WRITTEN[store] == ["ok1", "ok2"]
    ((_, value, headers),) = _dlq(broker, dlq)
    assert value == GOOD % b"bad"
    assert headers["__connect.errors.stage"] == "TASK_PUT"
    assert headers["__connect.errors.offset"] == "1"


def test_errant_report_with_tolerance_none_fails_the_task(broker: EmbeddedBroker, unique_name):
    registry.register_class(ReportingSink)
    topic = unique_name("errantstrict")
    _fill(broker, topic, [GOOD % b"bad"])
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "strict-errant",
            {
                "connector.class": "ReportingSink",
                "topics": topic,
                "store.id": "x",
                "errors.log.enable": "true",
            },
        )
        (failed,) = h.wait_for_tasks("strict-errant", State.FAILED, timeout=60)
    assert "Tolerance exceeded" in (failed.trace or "")


def test_failed_task_is_restarted_automatically_with_backoff(broker: EmbeddedBroker, unique_name):
    registry.register_class(FailTwiceSink)
    topic = unique_name("restarts")
    _fill(broker, topic, [GOOD % b"x", GOOD % b"y"])
    store = uuid.uuid4().hex
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "phoenix",
            {
                "connector.class": "FailTwiceSink",
                "topics": topic,
                "store.id": store,
                "errors.task.restart.max.attempts": "3",
                "errors.task.restart.backoff.ms": "200",
            },
        )
        h.wait_until(
            lambda: flaky_tasks.WRITTEN[store] == ["x", "y"],
            timeout=90,  # three group joins, one per start of the task
            what="x and y written after two automatic restarts",
        )
        assert h.task_states("phoenix")[0].state is State.RUNNING
        assert h.running.restart_counts("phoenix") == {0: 2}
    assert flaky_tasks.STARTS[store] == 3


_DLQ_ALL = {
    "errors.tolerance": "all",
    "errors.deadletterqueue.context.headers.enable": "true",
    "errors.deadletterqueue.topic.replication.factor": "1",
}
_CAST_TO_INT = {
    "transforms": "toint",
    "transforms.toint.type": "org.apache.kafka.connect.transforms.Cast$Value",
    "transforms.toint.spec": "int32",
}


def test_sink_transformation_failure_goes_to_the_dlq_and_the_rest_is_delivered(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    """The chain transforms a consumed batch at once; when one record fails, the batch is
    redone record by record, so exactly that record reaches the DLQ with the SMT's stage and
    class, and the others are delivered once."""
    topic, dlq = unique_name("smt"), unique_name("smtdlq")
    _fill(broker, topic, [b"1", b"2", b"x", b"4"])
    out = tmp_path / "out.txt"
    with WorkerHarness(broker.bootstrap_servers) as h:
        _sink(
            h,
            "smt-sink",
            topic,
            out,
            **{
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                **_CAST_TO_INT,
                **_DLQ_ALL,
                "errors.deadletterqueue.topic.name": dlq,
            },
        )
        h.wait_until(
            lambda: h.metrics("smt-sink")[0].records_committed >= 4,
            60,
            "the sink to commit all 4 records (the failing one through the DLQ)",
        )
        assert h.task_states("smt-sink")[0].state is State.RUNNING
    assert out.read_text().splitlines() == ["1", "2", "4"]
    ((_key, value, headers),) = _dlq(broker, dlq)
    assert value == b"x"
    assert headers["__connect.errors.stage"] == "TRANSFORMATION"
    assert headers["__connect.errors.offset"] == "2"
    assert headers["__connect.errors.class.name"] == "connectrt.transforms.cast.CastValue"
    assert "toint" in headers["__connect.errors.exception.stacktrace"]


def test_source_transformation_failure_goes_to_the_dlq(
    broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic, dlq = unique_name("srcsmt"), unique_name("srcsmtdlq")
    create_topic(broker.bootstrap_servers, topic)
    source = tmp_path / "in.txt"
    source.write_text("1\n2\nx\n4\n")
    with WorkerHarness(broker.bootstrap_servers) as h:
        h.start_connector(
            "smt-source",
            {
                "connector.class": "FileStreamSource",
                "file": str(source),
                "topic": topic,
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
                **_CAST_TO_INT,
                **_DLQ_ALL,
                "errors.deadletterqueue.topic.name": dlq,
            },
        )
        h.wait_until(
            lambda: h.metrics("smt-source")[0].records_skipped == 1, 60, "the bad line skipped"
        )
        h.wait_until(
            lambda: h.metrics("smt-source")[0].offset_commits >= 1, 60, "a source offset commit"
        )
        assert h.task_states("smt-source")[0].state is State.RUNNING
    assert [v for _, v in read_topic(broker.bootstrap_servers, topic)[0]] == [b"1", b"2", b"4"]
    ((_, value, headers),) = _dlq(broker, dlq)
    assert orjson.loads(value or b"{}")["value"] == "x"
    assert headers["__connect.errors.stage"] == "TRANSFORMATION"
    assert headers["__connect.errors.class.name"] == "connectrt.transforms.cast.CastValue"
