"""The chain copies a record at most once: later stages update the chain-owned copy in place
(``apply_owned``) and the task's original record is never changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api.records import Header, SinkRecord, SourceRecord
from connectrt.api.transform import Transformation
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.errors import DataError
from connectrt.transforms.chain import TransformationChain

T = "org.apache.kafka.connect.transforms."
CHAIN = {
    "transforms": "insert,rename,route",
    "transforms.insert.type": T + "InsertField$Value",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": "bench",
    "transforms.rename.type": T + "ReplaceField$Value",
    "transforms.rename.renames": "name:full_name",
    "transforms.route.type": T + "RegexRouter",
    "transforms.route.regex": "orders-(.*)",
    "transforms.route.replacement": "routed-$1",
}
SCHEMA = (
    SchemaBuilder.struct()
    .name("Order")
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("qty", SchemaBuilder.int32().optional().default_value(1).build())
    .build()
)


class CountingTransformation(Transformation[Any]):
    """Records which entry point the chain used (test plugin; no apply_owned override)."""

    calls: list[str]

    def configure(self, config: Mapping[str, Any]) -> None:
        self.calls = []

    def apply(self, record: Any) -> Any:
        self.calls.append("apply")
        return record.new_record(value={**record.value, "counted": True})


def test_schemaless_chain_leaves_original_untouched() -> None:
    chain: TransformationChain[SourceRecord] = TransformationChain(CHAIN)
    value = {"id": 1, "name": "a"}
    headers = [Header("h", None, "x")]
    original = SourceRecord({"p": 1}, {"o": 1}, "orders-eu", value=value, headers=headers)
    [out] = chain.apply(original)
    assert out.topic == "routed-eu"
    assert out.value == {"id": 1, "full_name": "a", "origin": "bench"}
    assert original.topic == "orders-eu"
    assert original.value is value and value == {"id": 1, "name": "a"}
    assert original.headers is headers and out.headers is not headers
    assert out.source_offset == {"o": 1}


def test_struct_chain_leaves_original_untouched_and_fills_defaults() -> None:
    chain: TransformationChain[SinkRecord] = TransformationChain(CHAIN)
    struct = Struct(SCHEMA).put("id", 7).put("name", "b")
    original = SinkRecord("orders-us", 2, None, None, SCHEMA, struct, 41)
    for _ in range(3):  # the identity-cached plan is reused
        [out] = chain.apply(original)
        assert out.topic == "routed-us" and out.kafka_offset == 41
        assert [f.name for f in out.value_schema.fields] == ["id", "full_name", "qty", "origin"]
        assert out.value.to_dict() == {"id": 7, "full_name": "b", "qty": 1, "origin": "bench"}
        out.value.validate()
    assert original.topic == "orders-us" and original.value_schema is SCHEMA
    assert struct.to_dict() == {"id": 7, "name": "b", "qty": 1}
    assert original.original_topic == "orders-us"


def test_new_schema_object_gets_its_own_plan() -> None:
    chain: TransformationChain[SourceRecord] = TransformationChain(CHAIN)
    other = SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA).build()
    [a] = chain.apply(
        SourceRecord(
            None,
            None,
            "orders-a",
            None,
            None,
            None,
            SCHEMA,
            Struct(SCHEMA).put("id", 1).put("name", "x"),
        )
    )
    [b] = chain.apply(
        SourceRecord(
            None, None, "orders-b", None, None, None, other, Struct(other).put("name", "y")
        )
    )
    assert a.value.to_dict()["id"] == 1
    assert b.value.to_dict() == {"full_name": "y", "origin": "bench"}


def test_unchanged_record_is_not_owned() -> None:
    """A tombstone passes InsertField unchanged, so RegexRouter must copy, not mutate."""
    chain: TransformationChain[SourceRecord] = TransformationChain(CHAIN)
    tombstone = SourceRecord(None, None, "orders-eu", value=None)
    [out] = chain.apply(tombstone)
    assert out.topic == "routed-eu" and out is not tombstone
    assert tombstone.topic == "orders-eu"


def test_custom_transformation_without_apply_owned_still_copies() -> None:
    config = {
        **CHAIN,
        "transforms": "insert,count",
        "transforms.count.type": f"{__name__}.CountingTransformation",
    }
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    value = {"id": 1}
    original = SourceRecord(None, None, "t", value=value)
    [out] = chain.apply(original)
    assert out.value == {"id": 1, "origin": "bench", "counted": True}
    assert value == {"id": 1}
    counter = chain.stages[1].transformation
    assert isinstance(counter, CountingTransformation) and counter.calls == ["apply"]


def test_required_static_field_without_value_still_fails() -> None:
    config = {k: v for k, v in CHAIN.items() if k != "transforms.insert.static.value"}
    config.update({"transforms": "insert", "transforms.insert.static.field": "origin!"})
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    struct = Struct(SCHEMA).put("id", 1).put("name", "x")
    record = SourceRecord(None, None, "t", None, None, None, SCHEMA, struct)
    with pytest.raises(DataError, match="origin"):
        chain.apply(record)


def test_generic_owned_path_of_other_smts_keeps_original() -> None:
    """MaskField and HoistField use the base class' apply_owned (in-place new_record)."""
    config = {
        **CHAIN,
        "transforms": "insert,mask,hoist",
        "transforms.mask.type": T + "MaskField$Value",
        "transforms.mask.fields": "name",
        "transforms.hoist.type": T + "HoistField$Value",
        "transforms.hoist.field": "payload",
    }
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    value = {"id": 1, "name": "secret"}
    original = SourceRecord(None, None, "t", value=value)
    [out] = chain.apply(original)
    assert out.value == {"payload": {"id": 1, "name": "", "origin": "bench"}}
    assert original.value is value and value == {"id": 1, "name": "secret"}
    mask = chain.stages[1].transformation
    owned = SourceRecord(None, None, "t", value={"name": "x"})
    assert mask.apply_owned(owned) is owned and owned.value == {"name": ""}
    shared = SourceRecord(None, None, "t", value={"name": "x"})
    assert mask.apply(shared) is not shared and shared.value == {"name": "x"}


def test_header_from_owned_path_sets_headers_on_the_copy_only() -> None:
    """HeaderFrom moves a field into the headers of the chain's copy, not the original's."""
    config = {
        **CHAIN,
        "transforms": "insert,move",
        "transforms.move.type": T + "HeaderFrom$Value",
        "transforms.move.fields": "name",
        "transforms.move.headers": "h_name",
        "transforms.move.operation": "move",
    }
    chain: TransformationChain[SourceRecord] = TransformationChain(config)
    headers = [Header("h", "x", None)]
    value = {"id": 1, "name": "a"}
    original = SourceRecord(None, None, "t", value=value, headers=headers)
    [out] = chain.apply(original)
    assert out.value == {"id": 1, "origin": "bench"}
    assert [(h.key, h.value) for h in out.headers] == [("h", "x"), ("h_name", "a")]
    assert original.headers is headers and len(headers) == 1
    assert original.value is value and value == {"id": 1, "name": "a"}
