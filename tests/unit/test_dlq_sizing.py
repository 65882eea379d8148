"""Fitting DLQ records into their topic (connectrt.runtime.tasks.dlq_sizing): what is kept whole,
what
is cut, the marker headers, and a producer sized so that librdkafka accepts what fits."""

from __future__ import annotations

from confluent_kafka import KafkaException, Producer

from connectrt.runtime.tasks.dlq_headers import CONTEXT_PREFIX
from connectrt.runtime.tasks.dlq_sizing import (
    KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
    TRUNCATED_HEADER,
    fit_record,
    record_size,
    sized_producer_config,
)

LIMIT = 10_000


def test_a_record_that_fits_is_unchanged():
    headers = [("h", b"v")]
    (key, value, out), original = fit_record(b"k", b"x" * 100, headers, LIMIT, ("t", 0, 7))
    assert original is None
    assert (key, value, out) == (b"k", b"x" * 100, headers)


def test_an_oversized_value_is_cut_and_the_copy_names_its_original():
    trace = CONTEXT_PREFIX + "exception.stacktrace"
    headers = [("app", b"a" * 50), (trace, b"s" * 2000)]
    value = b"v" * 50_000
    size = record_size(b"key", value, headers)
    (key, cut, out), original = fit_record(b"key", value, headers, LIMIT, ("orders", 3, 42))
    assert original == size > LIMIT
    assert record_size(key, cut, out) <= LIMIT
    assert key == b"key" and cut is not None and value.startswith(cut)
    assert len(cut) > LIMIT - 2500  # the value gets what the small parts leave
    found = dict(out)
    assert found["app"] == b"a" * 50 and found[trace] == b"s" * 2000  # small: kept whole
    assert found[TRUNCATED_HEADER] == str(size).encode()
    assert found[CONTEXT_PREFIX + "topic"] == b"orders"
    assert found[CONTEXT_PREFIX + "partition"] == b"3"
    assert found[CONTEXT_PREFIX + "offset"] == b"42"


def test_context_headers_already_present_are_kept_not_repeated():
    headers = [(CONTEXT_PREFIX + "topic", b"orders"), (CONTEXT_PREFIX + "offset", b"42")]
    (_, _, out), original = fit_record(None, b"v" * 50_000, headers, LIMIT, ("orders", 3, 42))
    assert original is not None
    names = [n for n, _ in out]
    assert names.count(CONTEXT_PREFIX + "topic") == 1
    assert names.count(CONTEXT_PREFIX + "offset") == 1
    assert CONTEXT_PREFIX + "partition" in names


def test_several_large_parts_are_cut_to_a_common_length_small_ones_kept():
    big_message = CONTEXT_PREFIX + "exception.message"
    headers = [(big_message, b"m" * 30_000), ("small", b"s" * 10)]
    (key, value, out), _ = fit_record(b"k" * 40_000, b"v" * 40_000, headers, LIMIT, ("t", 0, 1))
    found = dict(out)
    assert found["small"] == b"s" * 10
    assert key is not None and value is not None
    assert len(key) == len(value) == len(found[big_message])
    assert record_size(key, value, out) <= LIMIT
    assert record_size(key, value, out) > LIMIT - 10  # the budget is used, not wasted


def test_headers_whose_names_alone_do_not_fit_are_dropped():
    headers = [(f"h{i:05d}", None) for i in range(2000)]
    (_, value, out), original = fit_record(None, b"v" * 100, headers, LIMIT, ("t", 0, 1))
    assert original is not None
    assert {n for n, _ in out} == {
        TRUNCATED_HEADER,
        CONTEXT_PREFIX + "topic",
        CONTEXT_PREFIX + "partition",
        CONTEXT_PREFIX + "offset",
    }
    assert value == b"v" * 100
    assert record_size(None, value, out) <= LIMIT


def test_a_null_value_stays_null():
    (key, value, _), original = fit_record(b"k" * 50_000, None, [], LIMIT, ("t", 0, 1))
    assert original is not None and value is None
    assert key is not None and len(key) < 50_000


def test_the_producer_is_capped_to_the_topic_and_accepts_what_fits():
    config, allowed = sized_producer_config(
        {"bootstrap.servers": "127.0.0.1:9", "message.max.bytes": "5000000"},
        KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
    )
    assert allowed == KAFKA_DEFAULT_MAX_MESSAGE_BYTES
    assert config["message.max.bytes"] == allowed and config["batch.size"] == allowed
    lower, allowed_lower = sized_producer_config({"message.max.bytes": 200_000}, 1_000_000)
    assert allowed_lower == 200_000 == lower["message.max.bytes"]  # an explicit lower value wins

    headers = [(CONTEXT_PREFIX + "exception.stacktrace", b"s" * 5000)]
    (key, value, out), _ = fit_record(b"k", b"v" * 5_000_000, headers, allowed, ("t", 0, 1))
    producer = Producer(config)
    try:
        producer.produce("t", value, key, headers=out)  # librdkafka's own size check passes
        assert value is not None
        too_big = value + b"x" * 200
        try:
            producer.produce("t", too_big, key, headers=out)
        except KafkaException as e:
            assert "MSG_SIZE_TOO_LARGE" in str(e) or "too large" in str(e)
        else:
            raise AssertionError("the producer accepted a record over the topic's limit")
    finally:
        producer.purge()
        producer.flush(0)
