"""The chain's batch fast path (``apply_batch``) gives exactly what ``apply`` gives record by
record, for every bundled SMT, and never changes the task's records; it declines (None) where
the per-record path must run: drops, fan-outs and failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api.records import Header, SinkRecord, SourceRecord
from connectrt.api.transform import Transformation
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.transforms.chain import TransformationChain

T = "org.apache.kafka.connect.transforms."

ADDRESS = SchemaBuilder.struct().field("city", Schema.STRING_SCHEMA).optional().build()
ORDER = (
    SchemaBuilder.struct()
    .name("shop.Order")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("qty", SchemaBuilder.int32().optional().default_value(1).build())
    .field("at", Schema.INT64_SCHEMA)
    .field("address", ADDRESS)
    .build()
)
KEY = SchemaBuilder.struct().field("k", Schema.STRING_SCHEMA).build()

ONE_TO_ONE_STAGES: dict[str, dict[str, str]] = {
    "insert_static": {
        "type": T + "InsertField$Value",
        "static.field": "origin",
        "static.value": "batch",
    },
    "insert_meta": {
        "type": T + "InsertField$Value",
        "topic.field": "t",
        "partition.field": "p",
        "timestamp.field": "ts",
    },
    "insert_key": {"type": T + "InsertField$Key", "static.field": "src", "static.value": "x"},
    "rename": {"type": T + "ReplaceField$Value", "renames": "name:full_name,qty:quantity"},
    "exclude": {"type": T + "ReplaceField$Value", "exclude": "qty", "renames": "id:ident"},
    "include": {"type": T + "ReplaceField$Value", "include": "id,name"},
    "replace_key": {"type": T + "ReplaceField$Key", "renames": "k:key"},
    "route": {"type": T + "RegexRouter", "regex": "orders-(.*)", "replacement": "r-$1"},
    "mask": {"type": T + "MaskField$Value", "fields": "name"},
    "cast": {"type": T + "Cast$Value", "spec": "id:string,qty:int64"},
    "ts_convert": {
        "type": T + "TimestampConverter$Value",
        "field": "at",
        "target.type": "string",
        "format": "yyyy-MM-dd",
    },
    "ts_route": {"type": T + "TimestampRouter", "topic.format": "${topic}-${timestamp}"},
    "metadata": {"type": T + "SetSchemaMetadata$Value", "schema.name": "renamed.Order"},
    "flatten": {"type": T + "Flatten$Value"},
    "hoist": {"type": T + "HoistField$Value", "field": "payload"},
    "extract": {"type": T + "ExtractField$Value", "field": "name"},
    "value_to_key": {"type": T + "ValueToKey", "fields": "id"},
    "insert_header": {"type": T + "InsertHeader", "header": "h2", "value.literal": "v"},
    "drop_headers": {"type": T + "DropHeaders", "headers": "h"},
    "header_from": {
        "type": T + "HeaderFrom$Value",
        "fields": "id",
        "headers": "id_h",
        "operation": "copy",
    },
}


def chain_config(*aliases: str) -> dict[str, str]:
    config = {"transforms": ",".join(aliases)}
    for alias in aliases:
        for key, value in ONE_TO_ONE_STAGES[alias].items():
            config[f"transforms.{alias}.{key}"] = value
    return config


def source_records() -> list[SourceRecord]:
    partition = {"p": 0}

    def order(i: int) -> Struct:
        return (
            Struct(ORDER)
            .put("id", i)
            .put("name", f"n{i}")
            .put("qty", None if i % 2 else i)
            .put("at", 1_700_000_000_000 + i)
            .put("address", Struct(ADDRESS).put("city", "Oslo") if i % 3 else None)
        )

    records = []
    for i in range(6):
        headers = [Header("h", None, "x")] if i % 2 else None
        records.append(
            SourceRecord(
                partition,
                {"o": i},
                "orders-eu",
                None,
                None,
                {"k": f"k{i}"},
                None,
                {"id": i, "name": f"n{i}", "qty": i, "at": 1_700_000_000_000 + i},
                1_700_000_000_000 + i,
                headers,
            )
        )
        records.append(
            SourceRecord(
                partition,
                {"o": i},
                "orders-us",
                1,
                KEY,
                Struct(KEY).put("k", f"k{i}"),
                ORDER,
                order(i),
                1_700_000_000_000 + i,
                headers,
            )
        )
    records.append(SourceRecord(partition, {"o": 9}, "orders-eu", value=None, timestamp=5))
    return records


def sink_records() -> list[SinkRecord]:
    return [
        SinkRecord(
            r.topic,
            r.kafka_partition or 0,
            r.key_schema,
            r.key,
            r.value_schema,
            r.value,
            100 + i,
            r.timestamp,
            headers=None if r.headers is None else list(r.headers),
        )
        for i, r in enumerate(source_records())
    ]


def per_record(chain: TransformationChain[Any], records: list[Any]) -> list[Any] | None:
    out: list[Any] = []
    for record in records:
        try:
            result = chain.apply(record)
        except Exception:
            return None
        assert len(result) == 1
        out.extend(result)
    return out


@pytest.mark.parametrize("alias", sorted(ONE_TO_ONE_STAGES))
@pytest.mark.parametrize("make", [source_records, sink_records], ids=["source", "sink"])
def test_each_stage_batch_equals_per_record(alias: str, make: Any) -> None:
    """Record by record, a batch of one gives what apply() gives, or declines where apply()
    raises; a batch of every record that apply() accepts gives the same list."""
    records = make()
    per_record_chain: TransformationChain[Any] = TransformationChain(chain_config(alias))
    batch_chain: TransformationChain[Any] = TransformationChain(chain_config(alias))
    accepted = []
    for record in records:
        expected = per_record(per_record_chain, [record])
        got = batch_chain.apply_batch([record])
        assert got == expected, (alias, record)
        if expected is not None:
            accepted.append(record)
    assert accepted, f"{alias}: no record accepted; the case tests nothing"
    assert batch_chain.apply_batch(accepted) == per_record(per_record_chain, accepted)
    assert records == make()  # the task's records are never changed


def test_three_stage_chains_equal_per_record() -> None:
    aliases = sorted(ONE_TO_ONE_STAGES)
    for i in range(len(aliases)):
        stages = (aliases[i], aliases[(i + 7) % len(aliases)], aliases[(i + 13) % len(aliases)])
        for make in (source_records, sink_records):
            records = make()
            expected_chain: TransformationChain[Any] = TransformationChain(chain_config(*stages))
            batch_chain: TransformationChain[Any] = TransformationChain(chain_config(*stages))
            ok = [r for r in records if per_record(expected_chain, [r]) is not None]
            assert batch_chain.apply_batch(ok) == per_record(expected_chain, ok), stages
            assert records == make()


def test_output_records_are_new_and_headers_not_shared() -> None:
    chain: TransformationChain[SourceRecord] = TransformationChain(
        chain_config("insert_header", "route")
    )
    records = source_records()
    out = chain.apply_batch(records)
    assert out is not None and len(out) == len(records)
    for original, new in zip(records, out, strict=True):
        assert new is not original
        assert new.source_offset is original.source_offset
        assert new.headers is not original.headers
        assert [h.key for h in new.headers or []][-1] == "h2"
        assert not any(h.key == "h2" for h in original.headers or [])


def test_predicated_stage_transforms_only_matching_records() -> None:
    config = {
        **chain_config("insert_static"),
        "transforms.insert_static.predicate": "us",
        "predicates": "us",
        "predicates.us.type": T + "predicates.TopicNameMatches",
        "predicates.us.pattern": "orders-us",
    }
    for negate in ("false", "true"):
        config["transforms.insert_static.negate"] = negate
        chain: TransformationChain[SourceRecord] = TransformationChain(config)
        records = [r for r in source_records() if r.value is not None]
        out = chain.apply_batch(records)
        assert out is not None
        assert out == per_record(TransformationChain(config), records)
        changed = {r.topic for r, o in zip(records, out, strict=True) if o.value != r.value}
        assert changed == ({"orders-us"} if negate == "false" else {"orders-eu"})


class DropOdd(Transformation[Any]):
    """Drops records whose value ``id`` is odd (test plugin)."""

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: Any) -> Any:
        return None if record.value["id"] % 2 else record


class Twice(Transformation[Any]):
    """Fans every record out into two (test plugin)."""

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: Any) -> Any:
        return [record, record.new_record(topic=record.topic + "-copy")]


class FailOn(Transformation[Any]):
    """Raises on records whose value ``id`` is 3 (test plugin)."""

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: Any) -> Any:
        if record.value["id"] == 3:
            raise ValueError("id 3")
        return record.new_record(value={**record.value, "seen": True})


def dicts(n: int) -> list[SourceRecord]:
    return [SourceRecord(None, {"o": i}, "t", value={"id": i}) for i in range(n)]


@pytest.mark.parametrize("plugin", [DropOdd, Twice])
def test_drop_or_fan_out_declines_and_stays_per_record(plugin: type) -> None:
    config = {"transforms": "x", "transforms.x.type": f"{__name__}.{plugin.__name__}"}
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    assert chain.apply_batch(dicts(0)) == []  # nothing to decline on yet
    records = dicts(4)
    assert chain.apply_batch(records) is None
    assert chain.apply_batch([records[0]]) is None  # sticky, even for a one-to-one batch
    assert records == dicts(4)


def test_failure_declines_for_that_batch_only() -> None:
    config = {"transforms": "x", "transforms.x.type": f"{__name__}.FailOn"}
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    records = dicts(5)
    assert chain.apply_batch(records) is None
    assert records == dicts(5)
    out = chain.apply_batch(records[:3])
    assert out is not None and [r.value for r in out] == [{"id": i, "seen": True} for i in range(3)]


def test_custom_transformation_uses_default_batch_hook() -> None:
    config = {
        **chain_config("insert_static"),
        "transforms": "insert_static,fail",
        "transforms.fail.type": f"{__name__}.FailOn",
    }
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    out = chain.apply_batch(dicts(3))
    assert out is not None
    assert [r.value for r in out] == [{"id": i, "origin": "batch", "seen": True} for i in range(3)]


def test_a_failure_names_the_failing_transformation_class() -> None:
    from connectrt.transforms.chain import failed_transformation

    config = {
        **chain_config("insert_static"),
        "transforms": "insert_static,fail",
        "transforms.fail.type": f"{__name__}.FailOn",
    }
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    with pytest.raises(ValueError) as info:
        chain.apply(dicts(4)[3])
    assert failed_transformation(info.value) == f"{__name__}.FailOn"
    assert "in transformation 'fail' (FailOn)" in (info.value.__notes__ or [])
    assert failed_transformation(ValueError("elsewhere")) is None
