"""InsertField: add record metadata or a static value as fields of the key or value.

Each ``*.field`` setting names the field to add; a ``!`` suffix makes it required in the
updated schema, a ``?`` suffix (or none) optional. ``offset.field`` only works on sink records.
With a schema the timestamp is a Timestamp (datetime); without one it is epoch milliseconds.
Null keys/values (tombstones) pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.logical import Timestamp
from connectrt.data.schema import Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    copy_schema_basics,
    put_field,
    require_map,
    require_sink_record,
    require_struct,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["InsertField", "InsertFieldKey", "InsertFieldValue", "InsertionSpec"]

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"
_PURPOSE = "field insertion"
_OPTIONALITY_DOC = (
    "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it "
    "optional (the default)."
)


@dataclass(frozen=True, slots=True)
class InsertionSpec:
    """A field name parsed from ``name``, ``name!`` or ``name?``."""

    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> InsertionSpec | None:
        if not spec:
            return None
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        return cls(spec, True)


def _config_def() -> ConfigDef:
    cd = ConfigDef()
    for key, doc in (
        (TOPIC_FIELD, "Field name for Kafka topic. " + _OPTIONALITY_DOC),
        (PARTITION_FIELD, "Field name for Kafka partition. " + _OPTIONALITY_DOC),
        (
            OFFSET_FIELD,
            "Field name for Kafka offset - only applicable to sink connectors. " + _OPTIONALITY_DOC,
        ),
        (TIMESTAMP_FIELD, "Field name for record timestamp. " + _OPTIONALITY_DOC),
        (STATIC_FIELD, "Field name for static data field. " + _OPTIONALITY_DOC),
        (STATIC_VALUE, "Static field value, if field name configured."),
    ):
        cd.define(key, ConfigType.STRING, None, None, Importance.MEDIUM, doc)
    return cd.define(*REPLACE_NULL_ARGS)


class InsertField(PartRewrite[R]):
    """Insert metadata/static fields. Use InsertFieldKey/InsertFieldValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = _config_def()

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._topic = InsertionSpec.parse(parsed[TOPIC_FIELD])
        self._partition = InsertionSpec.parse(parsed[PARTITION_FIELD])
        self._offset = InsertionSpec.parse(parsed[OFFSET_FIELD])
        self._timestamp = InsertionSpec.parse(parsed[TIMESTAMP_FIELD])
        self._static = InsertionSpec.parse(parsed[STATIC_FIELD])
        self._static_value: str | None = parsed[STATIC_VALUE]
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        # The field name when a static value is the only insertion (the common case).
        only_static = self._static and not (
            self._topic or self._partition or self._offset or self._timestamp
        )
        self._only_static = self._static.name if only_static and self._static else ""
        # With a schema, the static value can be appended unchecked when it is the only
        # insertion and fits its (optional string, or required and present) field.
        self._static_fits = bool(self._only_static) and (
            self._static_value is not None or bool(self._static and self._static.optional)
        )
        self._cache = SchemaCache()
        # The plan for the schema of the previous record, matched by identity (schemas of one
        # stream are usually the same object).
        self._last_schema: Schema | None = None
        self._last_plan: tuple[Schema, tuple[tuple[int, Any], ...]] = (Schema.STRING_SCHEMA, ())

    def _insertions(self, record: ConnectRecord, with_schema: bool) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        if self._topic:
            out.append((self._topic.name, record.topic))
        if self._partition:
            out.append((self._partition.name, record.kafka_partition))
        if self._offset:
            sink = require_sink_record(record, _PURPOSE, self.smt_name())
            out.append((self._offset.name, sink.kafka_offset))
        if self._timestamp:
            ts: Any = record.timestamp
            if with_schema and ts is not None:
                ts = Timestamp.to_logical(None, ts)
            out.append((self._timestamp.name, ts))
        if self._static:
            out.append((self._static.name, self._static_value))
        return out

    def apply_batch_owned(self, records: list[R]) -> bool:
        if self.IS_KEY or not self._only_static:
            return super().apply_batch_owned(records)
        # One static value into record values (the common case): rewrite() inlined, as this
        # loop runs once per record.
        name, static, static_fits = self._only_static, self._static_value, self._static_fits
        new_struct = Struct.__new__
        for r in records:
            value = r.value
            if value is None:
                continue
            if r.value_schema is None and type(value) is dict:
                updated = value.copy()
                updated[name] = static
                r.value = updated
            elif static_fits and r.value_schema is not None and type(value) is Struct:
                source = value._schema
                new_schema, default_fill = (
                    self._last_plan if self._last_schema is source else self._struct_plan(source)
                )
                values = value._values.copy()
                for index, default in default_fill:
                    if values[index] is None:
                        values[index] = default
                values.append(static)
                struct = new_struct(Struct)
                struct._schema = new_schema
                struct._values = values
                r.value_schema = new_schema
                r.value = struct
            else:
                self.apply_owned(r)
        return True

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        if value is None:
            return None
        if schema is None:
            if type(value) is not dict:
                value = require_map(value, _PURPOSE, self.smt_name())
            updated = dict(value)
            if self._only_static:
                updated[self._only_static] = self._static_value
            else:
                updated.update(self._insertions(record, False))
            return None, updated
        struct = (
            value if type(value) is Struct else require_struct(value, _PURPOSE, self.smt_name())
        )
        source = struct.schema
        plan = self._last_plan if self._last_schema is source else self._struct_plan(source)
        new_schema, default_fill = plan
        values = list(struct._values)
        for index, default in default_fill:
            if values[index] is None:
                values[index] = default
        out = Struct._from_values(new_schema, values)
        if self._static_fits:
            # The static value was checked against its field schema once, in configure().
            values.append(self._static_value)
            return new_schema, out
        values.extend([None] * (len(new_schema.fields) - len(values)))
        for name, v in self._insertions(record, True):
            put_field(out, name, v, self.smt_name())
        return new_schema, out

    def _struct_plan(self, source: Schema) -> tuple[Schema, tuple[tuple[int, Any], ...]]:
        """(updated schema, (index, default) of fields whose null reads as a default)."""
        fill: tuple[tuple[int, Any], ...] = ()
        if self._replace_null:
            fill = tuple(
                (f.index, f.schema.default) for f in source.fields if f.schema.default is not None
            )
        plan = (self._updated_schema(source), fill)
        self._last_schema, self._last_plan = source, plan
        return plan

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._cache.get(schema)
        if cached is not None:
            return cached
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for f in schema.fields:
            builder.field(f.name, f.schema)
        for spec, required, optional in (
            (self._topic, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
            (self._partition, Schema.INT32_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA),
            (self._offset, Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA),
            (self._timestamp, Timestamp.SCHEMA, _OPTIONAL_TIMESTAMP),
            (self._static, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
        ):
            if spec is not None:
                builder.field(spec.name, optional if spec.optional else required)
        if schema.optional:
            builder.optional()
        return self._cache.put(schema, builder.build())


_OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()


class InsertFieldKey(InsertField[R], key=True):
    """``org.apache.kafka.connect.transforms.InsertField$Key``."""


class InsertFieldValue(InsertField[R], key=False):
    """``org.apache.kafka.connect.transforms.InsertField$Value``."""
