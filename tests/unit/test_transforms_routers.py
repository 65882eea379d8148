"""RegexRouter and TimestampRouter, plus the SimpleDateFormat subset they rely on."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from connectrt.api.records import SinkRecord, SourceRecord
from connectrt.errors import ConfigError, DataError
from connectrt.transforms._dateformat import JavaDateFormat
from connectrt.transforms.regex_router import RegexRouter
from connectrt.transforms.timestamp_router import TimestampRouter


def router(regex: str, replacement: str) -> RegexRouter[Any]:
    t: RegexRouter[Any] = RegexRouter()
    t.configure({"regex": regex, "replacement": replacement})
    return t


def topic_after(t: Any, topic: str, timestamp: int | None = None) -> str:
    r = SourceRecord({"p": 1}, {"o": 1}, topic, 0, None, "k", None, "v", timestamp)
    out = t.apply(r)
    assert out.value == "v" and out.source_partition == {"p": 1}
    return str(out.topic)


# -- RegexRouter -------------------------------------------------------------------------------


def test_regex_router_documented_example() -> None:
    # Kafka docs: regex=(.*)-(.*), replacement=$2.$1
    assert topic_after(router("(.*)-(.*)", "$2.$1"), "a-b") == "b.a"


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("(.*)", "prefix-$1", "orders", "prefix-orders"),
        ("foo", "bar", "foobar", "foobar"),  # not a full match: unchanged
        ("(?<name>[a-z]+)_v(\\d)", "${name}-$2", "users_v2", "users-2"),
        ("(a)(b)?", "$1$2!", "a", "a!"),  # an unmatched group expands to ""
        ("(.*)", "\\$1=$1", "x", "$1=x"),  # backslash escapes
        ("(x)", "$10", "x", "x0"),  # Java takes the longest valid group number
        ("(.*)", "", "x", ""),
    ],
)
def test_regex_router_java_replacement(
    regex: str, replacement: str, topic: str, expected: str
) -> None:
    assert topic_after(router(regex, replacement), topic) == expected


def test_regex_router_on_sink_records_keeps_original_coordinates() -> None:
    r = SinkRecord("a-b", 0, None, None, None, 1, 7)
    out = router("(.*)-(.*)", "$2").apply(r)
    assert out.topic == "b"
    assert out.original_topic == "a-b"


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"regex": "(", "replacement": "x"}, "regex"),
        ({"regex": "(.*)", "replacement": "$2"}, "replacement"),
        ({"regex": "(.*)", "replacement": "${nope}"}, "replacement"),
        ({"regex": "(.*)", "replacement": "x\\"}, "replacement"),
        ({"replacement": "x"}, "regex"),
        ({"regex": "x"}, "replacement"),
    ],
)
def test_regex_router_config_errors(config: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        RegexRouter().configure(config)
    assert info.value.name == key


# -- TimestampRouter ---------------------------------------------------------------------------

TS = int(dt.datetime(2024, 2, 29, 23, 59, 58, 123000, tzinfo=dt.UTC).timestamp() * 1000)


def test_timestamp_router_defaults() -> None:
    t: TimestampRouter[Any] = TimestampRouter()
    t.configure({})
    assert topic_after(t, "orders", TS) == "orders-20240229"


def test_timestamp_router_custom_formats() -> None:
    t: TimestampRouter[Any] = TimestampRouter()
    t.configure({"topic.format": "${timestamp}.${topic}", "timestamp.format": "yyyy-MM-dd'T'HH"})
    assert topic_after(t, "orders", TS) == "2024-02-29T23.orders"


def test_timestamp_router_needs_timestamp() -> None:
    t: TimestampRouter[Any] = TimestampRouter()
    t.configure({})
    with pytest.raises(DataError, match="Timestamp missing"):
        topic_after(t, "orders", None)


def test_timestamp_router_bad_format() -> None:
    with pytest.raises(ConfigError) as info:
        TimestampRouter().configure({"timestamp.format": "yyyy-qq"})
    assert info.value.name == "timestamp.format"


# -- SimpleDateFormat subset -------------------------------------------------------------------

WHEN = dt.datetime(2024, 2, 29, 13, 5, 9, 7000, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyy-MM-dd HH:mm:ss.SSS", "2024-02-29 13:05:09.007"),
        ("yyyyMMddHHmmss", "20240229130509"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2024-02-29T13:05:09.007+0000"),
        ("yyyy-MM-dd'T'HH:mm:ssXXX", "2024-02-29T13:05:09Z"),
        ("dd MMM yy hh:mm a", "29 Feb 24 01:05 PM"),
        ("EEE, d MMMM yyyy", "Thu, 29 February 2024"),
        ("'at' HH 'o''clock'", "at 13 o'clock"),
        ("D", "60"),
    ],
)
def test_java_date_format(pattern: str, text: str) -> None:
    assert JavaDateFormat(pattern).format(WHEN) == text


def test_java_date_parse_round_trip_and_offsets() -> None:
    fmt = JavaDateFormat("yyyy-MM-dd HH:mm:ss.SSS")
    assert fmt.parse("2024-02-29 13:05:09.007") == WHEN
    compact = JavaDateFormat("yyyyMMddHHmmss")
    assert compact.parse("20240229130509") == WHEN.replace(microsecond=0)
    zoned = JavaDateFormat("yyyy-MM-dd'T'HH:mmXXX")
    assert zoned.parse("2024-02-29T15:05+02:00") == WHEN.replace(second=0, microsecond=0)
    twelve = JavaDateFormat("hh:mm a")
    assert twelve.parse("12:30 AM").hour == 0
    assert twelve.parse("12:30 PM").hour == 12
    with pytest.raises(ValueError, match="Unparseable"):
        fmt.parse("2024/02/29")


@pytest.mark.parametrize("pattern", ["yyyy-ww", "'unterminated"])
def test_java_date_format_rejects(pattern: str) -> None:
    with pytest.raises(ValueError):
        JavaDateFormat(pattern)
