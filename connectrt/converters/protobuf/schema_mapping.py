# Why one module over 450 lines: the two directions of one mapping (Connect -> proto3 and
# back) must agree name for name and parameter for parameter; side by side they stay in step.
"""Connect schemas <-> Protobuf message types, as Confluent's ``ProtobufData`` maps them.

Connect -> Protobuf (:func:`connect_to_proto`): the root must be a STRUCT; its name (default
``ConnectDefault1``) gives the package and the message name. Each field gets the number in
its ``io.confluent.connect.protobuf.Tag`` parameter, else the next in sequence. INT8/INT16
are ``int32`` with ``connect.type`` in ``confluent.field_meta``; INT64 ``int64``; FLOAT32
``float``; FLOAT64 ``double``; STRING ``string`` (an enum when it has the
``io.confluent.connect.protobuf.Enum`` parameter); BYTES ``bytes``; ARRAY ``repeated``; MAP a
``map<K, V>`` field; STRUCT a nested message (named after the struct, ``...Message`` when that
clashes with the field's name), or a ``oneof`` when its name starts with
``io.confluent.connect.protobuf.Union.``; Decimal ``confluent.type.Decimal`` (precision and
scale in ``confluent.field_meta``), Date ``google.type.Date``, Time ``google.type.TimeOfDay``,
Timestamp ``google.protobuf.Timestamp``. With ``wrapper.for.nullables`` optional primitives
become ``google.protobuf.*Value`` wrappers; with ``optional.for.nullables`` proto3
``optional`` fields.

Protobuf -> Connect (:func:`proto_to_connect`): a message is a STRUCT named after it (the full
name with ``enhanced.protobuf.schema.support``); each ``oneof`` comes first as an optional
STRUCT field ``<oneof>_<index>`` named ``io.confluent.connect.protobuf.Union.<oneof>``; every
field carries its number in the Tag parameter; fields are optional (without
``wrapper.for.nullables``: with it, plain scalars are required and wrappers read as optional
primitives); ``uint32``/``fixed32`` and all 64-bit types read as INT64; enums as optional
STRINGs with the Enum parameters.

Thread-safety: pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from connectrt.converters.protobuf.descriptors import field_meta, set_field_meta
from connectrt.data.logical import Date, Decimal, Time, Timestamp
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.errors import DataError

__all__ = [
    "ENUM_PARAM",
    "TAG_PARAM",
    "UNION_PREFIX",
    "WRAPPERS",
    "MappingConfig",
    "connect_to_proto",
    "proto_to_connect",
]

NAMESPACE: Final = "io.confluent.connect.protobuf"
ENUM_PARAM: Final = f"{NAMESPACE}.Enum"
ENUM_PREFIX: Final = f"{ENUM_PARAM}."
UNION_PREFIX: Final = f"{NAMESPACE}.Union."
TAG_PARAM: Final = f"{NAMESPACE}.Tag"
CONNECT_TYPE: Final = "connect.type"
PRECISION_PARAM: Final = "connect.decimal.precision"
DEFAULT_NAME: Final = "ConnectDefault"

DECIMAL_TYPE: Final = "confluent.type.Decimal"
DATE_TYPE: Final = "google.type.Date"
TIME_TYPE: Final = "google.type.TimeOfDay"
TIMESTAMP_TYPE: Final = "google.protobuf.Timestamp"
_LOGICAL_TYPES: Final = {
    Decimal.LOGICAL_NAME: (DECIMAL_TYPE, "confluent/type/decimal.proto"),
    Date.LOGICAL_NAME: (DATE_TYPE, "google/type/date.proto"),
    Time.LOGICAL_NAME: (TIME_TYPE, "google/type/timeofday.proto"),
    Timestamp.LOGICAL_NAME: (TIMESTAMP_TYPE, "google/protobuf/timestamp.proto"),
}
WRAPPERS: Final = {
    "google.protobuf.DoubleValue": Type.FLOAT64,
    "google.protobuf.FloatValue": Type.FLOAT32,
    "google.protobuf.Int64Value": Type.INT64,
    "google.protobuf.UInt64Value": Type.INT64,
    "google.protobuf.Int32Value": Type.INT32,
    "google.protobuf.UInt32Value": Type.INT64,
    "google.protobuf.BoolValue": Type.BOOLEAN,
    "google.protobuf.StringValue": Type.STRING,
    "google.protobuf.BytesValue": Type.BYTES,
}
_WRAPPER_OF: Final = {
    Type.INT8: "google.protobuf.Int32Value",
    Type.INT16: "google.protobuf.Int32Value",
    Type.INT32: "google.protobuf.Int32Value",
    Type.INT64: "google.protobuf.Int64Value",
    Type.FLOAT32: "google.protobuf.FloatValue",
    Type.FLOAT64: "google.protobuf.DoubleValue",
    Type.BOOLEAN: "google.protobuf.BoolValue",
    Type.STRING: "google.protobuf.StringValue",
    Type.BYTES: "google.protobuf.BytesValue",
}
F = descriptor_pb2.FieldDescriptorProto
_SCALAR_OF: Final = {
    Type.INT8: F.TYPE_INT32,
    Type.INT16: F.TYPE_INT32,
    Type.INT32: F.TYPE_INT32,
    Type.INT64: F.TYPE_INT64,
    Type.FLOAT32: F.TYPE_FLOAT,
    Type.FLOAT64: F.TYPE_DOUBLE,
    Type.BOOLEAN: F.TYPE_BOOL,
    Type.STRING: F.TYPE_STRING,
    Type.BYTES: F.TYPE_BYTES,
}


@dataclass(frozen=True)
class MappingConfig:
    """The settings of Confluent's converter that change the mapping."""

    wrapper_for_nullables: bool = False
    optional_for_nullables: bool = False
    enhanced_schema_support: bool = False
    index_for_unions: bool = True


def _split(full: str) -> tuple[str, str]:
    package, _, name = full.rpartition(".")
    return package, name


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


class _FromConnect:
    def __init__(self, config: MappingConfig) -> None:
        self.config = config
        self.proto = descriptor_pb2.FileDescriptorProto(syntax="proto3")
        self.defaults = 0
        self.deps: list[str] = []

    def name_of(self, schema: Schema) -> str:
        if schema.name:
            return schema.name
        self.defaults += 1
        return f"{DEFAULT_NAME}{self.defaults}"

    def dep(self, path: str) -> None:
        if path not in self.deps:
            self.deps.append(path)

    def message(self, msg: descriptor_pb2.DescriptorProto, schema: Schema, seen: set[str]) -> None:
        index = 1
        for field in schema.fields:
            fs = field.schema
            tag_text = (fs.parameters or {}).get(TAG_PARAM)
            if tag_text is not None:
                tag = int(tag_text)
            else:
                tag = index
                index += 1
            if fs.type is Type.STRUCT and (fs.name or "").startswith(UNION_PREFIX):
                self.oneof(msg, fs, seen)
                continue
            self.field(msg, fs, field.name, tag, seen)

    def oneof(self, msg: descriptor_pb2.DescriptorProto, union: Schema, seen: set[str]) -> None:
        name = _split(str(union.name)[len(UNION_PREFIX) :])[1]
        position = len(msg.oneof_decl)
        msg.oneof_decl.add(name=name)
        for member in union.fields:
            tag = int((member.schema.parameters or {}).get(TAG_PARAM, "0"))
            field = self.field(msg, member.schema, member.name, tag, seen)
            field.oneof_index = position
            if field.label == F.LABEL_REPEATED:
                raise DataError(f"oneof {name} cannot hold the repeated field {member.name}")

    def field(
        self,
        msg: descriptor_pb2.DescriptorProto,
        schema: Schema,
        name: str,
        tag: int,
        seen: set[str],
    ) -> descriptor_pb2.FieldDescriptorProto:
        field = msg.field.add(name=name, number=tag, label=F.LABEL_OPTIONAL)
        if schema.type is Type.ARRAY:
            field.label = F.LABEL_REPEATED
            item = schema.value_schema
            assert item is not None
            if item.type in (Type.ARRAY, Type.MAP):
                raise DataError(f"Array field {name} cannot hold arrays or maps in Protobuf")
            self.type_of(msg, field, item, name, seen, in_array=True)
        elif schema.type is Type.MAP:
            field.label = F.LABEL_REPEATED
            entry = msg.nested_type.add(name=_camel(name) + "Entry")
            entry.options.map_entry = True
            key = entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL)
            value = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL)
            assert schema.key_schema is not None and schema.value_schema is not None
            if (
                schema.key_schema.type not in _SCALAR_OF
                or schema.key_schema.type
                in (
                    Type.FLOAT32,
                    Type.FLOAT64,
                    Type.BYTES,
                )
                or schema.key_schema.name
            ):
                raise DataError(f"Map field {name} needs integer, boolean or string keys")
            self.type_of(entry, key, schema.key_schema, "key", seen, in_array=True)
            if schema.value_schema.type in (Type.ARRAY, Type.MAP):
                raise DataError(f"Map field {name} cannot hold arrays or maps in Protobuf")
            self.type_of(entry, value, schema.value_schema, "value", seen, in_array=True)
            field.type = F.TYPE_MESSAGE
            field.type_name = entry.name
        else:
            self.type_of(msg, field, schema, name, seen, in_array=False)
        return field

    def type_of(
        self,
        msg: descriptor_pb2.DescriptorProto,
        field: descriptor_pb2.FieldDescriptorProto,
        schema: Schema,
        name: str,
        seen: set[str],
        in_array: bool,
    ) -> None:
        params = schema.parameters or {}
        logical = _LOGICAL_TYPES.get(schema.name or "")
        if logical is not None:
            type_name, path = logical
            self.dep(path)
            field.type = F.TYPE_MESSAGE
            field.type_name = "." + type_name
            if type_name == DECIMAL_TYPE:
                meta = {}
                if PRECISION_PARAM in params:
                    meta["precision"] = params[PRECISION_PARAM]
                meta["scale"] = params.get(Decimal.SCALE_FIELD, "0")
                set_field_meta(field.options, meta)
            return
        if schema.type is Type.STRUCT:
            struct_name = _split(self.name_of(schema))[1]
            if struct_name == name:
                struct_name += "Message"
            field.type = F.TYPE_MESSAGE
            field.type_name = struct_name
            if struct_name not in seen:
                seen.add(struct_name)
                self.message(msg.nested_type.add(name=struct_name), schema, seen)
            return
        if schema.type is Type.STRING and ENUM_PARAM in params:
            enum_name = params[ENUM_PARAM]
            field.type = F.TYPE_ENUM
            field.type_name = enum_name
            if enum_name not in {e.name for e in msg.enum_type}:
                enum = msg.enum_type.add(name=enum_name)
                for key, value in params.items():
                    if key.startswith(ENUM_PREFIX):
                        enum.value.add(name=key[len(ENUM_PREFIX) :], number=int(value))
            return
        if schema.type not in _SCALAR_OF:
            raise DataError(f"Unsupported Connect type {schema.type.name} in Protobuf field {name}")
        if schema.optional and not in_array and self.config.wrapper_for_nullables:
            self.dep("google/protobuf/wrappers.proto")
            field.type = F.TYPE_MESSAGE
            field.type_name = "." + _WRAPPER_OF[schema.type]
        else:
            field.type = _SCALAR_OF[schema.type]
            if schema.optional and not in_array and self.config.optional_for_nullables:
                field.proto3_optional = True
        if schema.type in (Type.INT8, Type.INT16):
            set_field_meta(field.options, {CONNECT_TYPE: schema.type.name.lower()})


def connect_to_proto(
    schema: Schema, config: MappingConfig, file_name: str = "default.proto"
) -> tuple[descriptor_pb2.FileDescriptorProto, str]:
    """The ``.proto`` file for ``schema`` (a STRUCT) and its root message's full name."""
    if schema.type is not Type.STRUCT:
        raise DataError(f"Protobuf needs a STRUCT at the root, not {schema.type.name}")
    ctx = _FromConnect(config)
    full = ctx.name_of(schema)
    package, name = _split(full)
    msg = ctx.proto.message_type.add(name=name)
    ctx.message(msg, schema, {name})
    _synthetic_oneofs(msg)
    proto = ctx.proto
    proto.name = file_name
    if package:
        proto.package = package
    if any(_uses_meta(m) for m in proto.message_type):
        ctx.dep("confluent/meta.proto")
    proto.dependency.extend(sorted(ctx.deps))
    return proto, f"{package}.{name}" if package else name


def _synthetic_oneofs(msg: descriptor_pb2.DescriptorProto) -> None:
    for nested in msg.nested_type:
        _synthetic_oneofs(nested)
    for field in msg.field:
        if field.proto3_optional:
            field.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name="_" + field.name)


def _uses_meta(msg: descriptor_pb2.DescriptorProto) -> bool:
    return any(f.options.ByteSize() for f in msg.field) or any(
        _uses_meta(n) for n in msg.nested_type
    )


# ------------------------------------------------------------------ Protobuf -> Connect

_INT64_TYPES: Final = {
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}
_SIMPLE: Final = {
    FieldDescriptor.TYPE_INT32: SchemaBuilder.int32,
    FieldDescriptor.TYPE_SINT32: SchemaBuilder.int32,
    FieldDescriptor.TYPE_SFIXED32: SchemaBuilder.int32,
    FieldDescriptor.TYPE_FLOAT: SchemaBuilder.float32,
    FieldDescriptor.TYPE_DOUBLE: SchemaBuilder.float64,
    FieldDescriptor.TYPE_BOOL: SchemaBuilder.boolean,
    FieldDescriptor.TYPE_STRING: SchemaBuilder.string,
    FieldDescriptor.TYPE_BYTES: SchemaBuilder.bytes,
}


def is_map_entry(desc: Descriptor) -> bool:
    """Whether ``desc`` is a map field's entry type."""
    return bool(desc.GetOptions().map_entry) or (
        desc.name.endswith("Entry") and [f.name for f in desc.fields] == ["key", "value"]
    )


def real_oneofs(desc: Descriptor) -> list[object]:
    """``desc``'s oneofs without the synthetic ones of proto3 ``optional`` fields."""
    return [
        o
        for o in desc.oneofs
        if not (len(o.fields) == 1 and o.name.lstrip("X") == "_" + o.fields[0].name)
    ]


def _meta(field: FieldDescriptor) -> dict[str, str]:
    if not field.has_options:
        return {}
    options = descriptor_pb2.FieldOptions()
    options.MergeFromString(field.GetOptions().SerializeToString())
    return field_meta(options)


class _ToConnect:
    def __init__(self, config: MappingConfig) -> None:
        self.config = config
        self.building: set[str] = set()

    def message(self, desc: Descriptor) -> SchemaBuilder:
        if desc.full_name in self.building:
            raise DataError(f"Recursive Protobuf message {desc.full_name} has no Connect schema")
        self.building.add(desc.full_name)
        builder = SchemaBuilder.struct().name(
            desc.full_name if self.config.enhanced_schema_support else desc.name
        )
        oneofs = real_oneofs(desc)
        for oneof in oneofs:
            union = SchemaBuilder.struct().name(UNION_PREFIX + oneof.name).optional()  # type: ignore[attr-defined]
            for member in oneof.fields:  # type: ignore[attr-defined]
                union.field(member.name, self.field(member))
            label = f"{oneof.name}_{oneof.index}" if self.config.index_for_unions else oneof.name  # type: ignore[attr-defined]
            builder.field(label, union.build())
        in_oneof = {f.full_name for o in oneofs for f in o.fields}  # type: ignore[attr-defined]
        for field in desc.fields:
            if field.full_name not in in_oneof:
                builder.field(field.name, self.field(field))
        self.building.discard(desc.full_name)
        return builder

    def field(self, field: FieldDescriptor) -> Schema:
        builder: SchemaBuilder
        kind = field.type
        optional_scalar = False
        if kind in _INT64_TYPES:
            builder = SchemaBuilder.int64()
        elif kind in (
            FieldDescriptor.TYPE_INT32,
            FieldDescriptor.TYPE_SINT32,
            FieldDescriptor.TYPE_SFIXED32,
        ):
            builder = self.int32_of(field)
        elif kind == FieldDescriptor.TYPE_ENUM:
            enum = field.enum_type
            builder = SchemaBuilder.string().name(enum.name).parameter(ENUM_PARAM, enum.name)
            for value in enum.values:
                builder.parameter(ENUM_PREFIX + value.name, str(value.number))
            builder.optional()
        elif kind == FieldDescriptor.TYPE_MESSAGE:
            builder = self.message_field(field)
            builder.optional()
        elif kind in _SIMPLE:
            builder = _SIMPLE[kind]()
        else:
            raise DataError(f"Unsupported Protobuf field type {kind} of {field.full_name}")
        oneof = field.containing_oneof
        if field.has_presence and kind != FieldDescriptor.TYPE_MESSAGE:
            # proto3 ``optional`` (a synthetic oneof) or proto2 optional, not a oneof member
            optional_scalar = oneof is None or oneof.name.lstrip("X") == "_" + field.name
        if field.is_repeated and builder.type is not Type.MAP:
            builder = SchemaBuilder.array(builder.optional().build()).optional()
        if not self.config.wrapper_for_nullables or optional_scalar:
            builder.optional()
        builder.parameter(TAG_PARAM, str(field.number))
        return builder.build()

    @staticmethod
    def int32_of(field: FieldDescriptor) -> SchemaBuilder:
        """INT32, or INT8/INT16 when the field's ``connect.type`` says so."""
        connect_type = _meta(field).get(CONNECT_TYPE)
        return {"int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16}.get(
            connect_type or "", SchemaBuilder.int32
        )()

    def message_field(self, field: FieldDescriptor) -> SchemaBuilder:
        desc = field.message_type
        full = desc.full_name
        if full == DECIMAL_TYPE:
            meta = _meta(field)
            builder = Decimal.builder(int(meta.get("scale", "0") or 0))
            if meta.get("precision"):
                builder.parameter(PRECISION_PARAM, meta["precision"])
            return builder
        if full == DATE_TYPE:
            return Date.builder()
        if full == TIME_TYPE:
            return Time.builder()
        if full == TIMESTAMP_TYPE:
            return Timestamp.builder()
        if self.config.wrapper_for_nullables and full in WRAPPERS:
            if WRAPPERS[full] is Type.INT32:
                return self.int32_of(field)
            return SchemaBuilder(WRAPPERS[full])
        if is_map_entry(desc):
            key, value = desc.fields_by_name["key"], desc.fields_by_name["value"]
            return SchemaBuilder.map(self.field(key), self.field(value))
        return self.message(desc)


def proto_to_connect(desc: Descriptor, config: MappingConfig) -> Schema:
    """The Connect schema of message type ``desc``."""
    return _ToConnect(config).message(desc).build()
