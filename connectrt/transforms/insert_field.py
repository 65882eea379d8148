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
    put_field,
    require_sink_record,
)
from connectrt.transforms.map_or_struct import MapOrStructRewrite

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


class InsertField(MapOrStructRewrite[R]):
    """Insert metadata/static fields. Use InsertFieldKey/InsertFieldValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = _config_def()
    PURPOSE = _PURPOSE

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._topic = InsertionSpec.parse(parsed[TOPIC_FIELD])
        self._partition = InsertionSpec.parse(parsed[PARTITION_FIELD])
        self._offset = InsertionSpec.parse(parsed[OFFSET_FIELD])
        self._timestamp = InsertionSpec.parse(parsed[TIMESTAMP_FIELD])
        self._static = InsertionSpec.parse(parsed[STATIC_FIELD])
        self._static_value: str | None = parsed[STATIC_VALUE]
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
        self.start_struct_plans(parsed)

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

    def rewrite_map(self, record: ConnectRecord, value: dict[str, Any]) -> dict[str, Any]:
        updated = dict(value)
        if self._only_static:
            updated[self._only_static] = self._static_value
        else:
            updated.update(self._insertions(record, False))
        return updated

    def add_fields(self, record: ConnectRecord, struct: Struct) -> None:
        values = struct._values
        if self._static_fits:
            # The static value was checked against its field schema once, in configure().
            values.append(self._static_value)
            return
        values.extend([None] * (len(struct._schema.fields) - len(values)))
        for name, v in self._insertions(record, True):
            put_field(struct, name, v, self.smt_name())

    def define_fields(self, source: Schema, builder: SchemaBuilder) -> None:
        """The fields of ``source``, then those inserted."""
        for f in source.fields:
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


_OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()


class InsertFieldKey(InsertField[R], key=True):
    """``org.apache.kafka.connect.transforms.InsertField$Key``."""


class InsertFieldValue(InsertField[R], key=False):
    """``org.apache.kafka.connect.transforms.InsertField$Value``."""
