"""Predicates (TopicNameMatches, HasHeaderKey, RecordIsTombstone), Filter and the API ABCs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api.records import Header, SinkRecord, SourceRecord
from connectrt.api.transform import Predicate, Transformation
from connectrt.errors import ConfigError
from connectrt.transforms import KAFKA_ALIASES, KAFKA_PREDICATES, KAFKA_TRANSFORMATIONS
from connectrt.transforms.chain import default_resolve
from connectrt.transforms.filter import Filter
from connectrt.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches


def rec(topic: str = "t", value: Any = 1, headers: list[Header] | None = None) -> SinkRecord:
    return SinkRecord(topic, 0, None, None, None, value, 0, headers=headers)


def test_topic_name_matches_full_match_only() -> None:
    p: TopicNameMatches[Any] = TopicNameMatches()
    p.configure({"pattern": "orders-.*"})
    assert p.test(rec("orders-eu"))
    assert not p.test(rec("my-orders-eu"))
    p2: TopicNameMatches[Any] = TopicNameMatches()
    p2.configure({"pattern": "orders"})
    assert not p2.test(rec("orders-eu"))
    assert "orders" in repr(p2)


@pytest.mark.parametrize("pattern", [None, "", "("])
def test_topic_name_matches_config_errors(pattern: str | None) -> None:
    config = {} if pattern is None else {"pattern": pattern}
    with pytest.raises(ConfigError) as info:
        TopicNameMatches().configure(config)
    assert info.value.name == "pattern"


def test_has_header_key() -> None:
    p: HasHeaderKey[Any] = HasHeaderKey()
    p.configure({"name": "trace"})
    assert p.test(rec(headers=[Header("a", 1), Header("trace", None)]))
    assert not p.test(rec(headers=[Header("a", 1)]))
    assert not p.test(rec())
    with pytest.raises(ConfigError) as info:
        HasHeaderKey().configure({})
    assert info.value.name == "name"


def test_record_is_tombstone() -> None:
    p: RecordIsTombstone[Any] = RecordIsTombstone()
    p.configure({})
    assert p.test(rec(value=None))
    assert not p.test(rec(value=0))
    assert not p.test(rec(value=""))


def test_filter_drops_everything() -> None:
    f: Filter[Any] = Filter()
    f.configure({})
    assert f.apply(rec()) is None
    assert f.apply(SourceRecord(None, None, "t", value=None)) is None


def test_kafka_aliases_cover_every_kafka_smt_and_resolve() -> None:
    expected = {
        "Cast$Key",
        "Cast$Value",
        "DropHeaders",
        "ExtractField$Key",
        "ExtractField$Value",
        "Filter",
        "Flatten$Key",
        "Flatten$Value",
        "HeaderFrom$Key",
        "HeaderFrom$Value",
        "HoistField$Key",
        "HoistField$Value",
        "InsertField$Key",
        "InsertField$Value",
        "InsertHeader",
        "MaskField$Key",
        "MaskField$Value",
        "RegexRouter",
        "ReplaceField$Key",
        "ReplaceField$Value",
        "SetSchemaMetadata$Key",
        "SetSchemaMetadata$Value",
        "TimestampConverter$Key",
        "TimestampConverter$Value",
        "TimestampRouter",
        "ValueToKey",
    }
    prefix = "org.apache.kafka.connect.transforms."
    assert {k.removeprefix(prefix) for k in KAFKA_TRANSFORMATIONS} == expected
    assert set(KAFKA_PREDICATES) == {
        prefix + "predicates." + n
        for n in ("HasHeaderKey", "RecordIsTombstone", "TopicNameMatches")
    }
    for fqcn in KAFKA_ALIASES:
        cls = default_resolve(fqcn)
        base = Predicate if fqcn in KAFKA_PREDICATES else Transformation
        assert issubclass(cls, base), fqcn
        if fqcn.endswith("$Key"):
            assert cls.IS_KEY is True  # type: ignore[attr-defined]
        if fqcn.endswith("$Value"):
            assert cls.IS_KEY is False  # type: ignore[attr-defined]


def test_bundled_plugins_report_a_version() -> None:
    assert Filter().version() != "unknown"
    assert RecordIsTombstone().version() != "unknown"


def test_abc_defaults_for_plugin_authors() -> None:
    class Upper(Transformation[SinkRecord]):
        def configure(self, config: Mapping[str, Any]) -> None:
            self.config = dict(config)

        def apply(self, record: SinkRecord) -> SinkRecord:
            return record.new_record(value=str(record.value).upper())

    t = Upper()
    t.configure({"a": "b"})
    assert t.apply(rec(value="x")).value == "X"
    assert t.config_def().names() == []
    assert t.version() == "unknown"
    t.close()
    with pytest.raises(TypeError):
        Transformation()  # type: ignore[abstract]
    with pytest.raises(TypeError):
        Predicate()  # type: ignore[abstract]
