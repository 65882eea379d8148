"""Connect values <-> Protobuf messages, compiled once per (Connect schema, message type).

Writing sets only the fields whose Connect value is not null (a null is "absent"); unions
(``io.confluent.connect.protobuf.Union.*`` structs) set the one member that is not null.
Reading gives null for absent message fields, unset proto3 ``optional`` fields, unset
wrappers and unset oneofs; plain proto3 scalars read as their value (0, "", ... when unset),
as Confluent's converter reads them. Logical types: Decimal <-> ``confluent.type.Decimal``
(unscaled big-endian two's-complement ``value``, ``precision``, ``scale``), Date <->
``google.type.Date``, Time <-> ``google.type.TimeOfDay``, Timestamp <->
``google.protobuf.Timestamp``.

Thread-safety: compiled functions hold no state; use them from any thread.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any, Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from connectrt.converters.protobuf.schema_mapping import (
    DATE_TYPE,
    DECIMAL_TYPE,
    ENUM_PARAM,
    ENUM_PREFIX,
    TIME_TYPE,
    TIMESTAMP_TYPE,
    UNION_PREFIX,
    WRAPPERS,
    is_map_entry,
)
from connectrt.data.logical import Decimal
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = ["compile_reader", "compile_writer"]

Writer = Callable[[Any, Message], None]
Reader = Callable[[Message], Any]
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EXACT: Final = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_from_values = Struct._from_values


def _is_union(schema: Schema) -> bool:
    return schema.type is Type.STRUCT and (schema.name or "").startswith(UNION_PREFIX)


# ------------------------------------------------------------------------------ writing


def _scalar_in(schema: Schema, field: FieldDescriptor) -> Callable[[Any], Any]:
    """Connect value -> what the proto field (or a wrapper's ``value``) takes."""
    if field.type == FieldDescriptor.TYPE_ENUM:
        params = schema.parameters or {}
        numbers = {
            k[len(ENUM_PREFIX) :]: int(v) for k, v in params.items() if k.startswith(ENUM_PREFIX)
        }
        enum = field.enum_type
        for value in enum.values:
            numbers.setdefault(value.name, value.number)

        def enum_in(value: Any) -> int:
            try:
                return numbers[value]
            except KeyError:
                raise DataError(f"{value!r} is not a symbol of enum {enum.full_name}") from None

        return enum_in
    if schema.type is Type.BYTES:
        return bytes
    return _identity


def _identity(value: Any) -> Any:
    return value


def _logical_in(full: str, schema: Schema) -> Callable[[Any, Message], None] | None:
    if full == DECIMAL_TYPE and schema.name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        precision = (schema.parameters or {}).get("connect.decimal.precision")

        def decimal_in(value: Any, msg: Message) -> None:
            msg.value = Decimal.from_logical(schema, value)
            msg.scale = scale
            digits = len(Decimal.rescale(value, scale).as_tuple().digits)
            msg.precision = int(precision) if precision else digits

        return decimal_in
    if full == DATE_TYPE:

        def date_in(value: Any, msg: Message) -> None:
            if isinstance(value, dt.datetime):
                value = value.date()
            msg.year, msg.month, msg.day = value.year, value.month, value.day

        return date_in
    if full == TIME_TYPE:

        def time_in(value: Any, msg: Message) -> None:
            msg.hours, msg.minutes, msg.seconds = value.hour, value.minute, value.second
            msg.nanos = (value.microsecond // 1000) * 1_000_000

        return time_in
    if full == TIMESTAMP_TYPE:

        def timestamp_in(value: Any, msg: Message) -> None:
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            millis = (value - _EPOCH) // dt.timedelta(milliseconds=1)
            seconds, ms = divmod(millis, 1000)
            msg.seconds, msg.nanos = seconds, ms * 1_000_000

        return timestamp_in
    return None


def _single_writer(schema: Schema, field: FieldDescriptor) -> Writer:
    """Writes one (non-null) Connect value into ``field`` of a message."""
    name = field.name
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = field.message_type
        full = sub.full_name
        logical = _logical_in(full, schema)
        if logical is not None:
            return lambda value, msg: logical(value, getattr(msg, name))
        if full in WRAPPERS and schema.type is not Type.STRUCT:
            conv = _scalar_in(schema, sub.fields_by_name["value"])

            def wrapper_in(value: Any, msg: Message) -> None:
                getattr(msg, name).value = conv(value)

            return wrapper_in
        inner = compile_writer(schema, sub)

        def message_in(value: Any, msg: Message) -> None:
            child = getattr(msg, name)
            child.SetInParent()
            inner(value, child)

        return message_in
    conv = _scalar_in(schema, field)
    return lambda value, msg: setattr(msg, name, conv(value))


def _field_writer(schema: Schema, field: FieldDescriptor) -> Writer:
    name = field.name
    if field.is_repeated and schema.type is Type.MAP:
        entry = field.message_type
        key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
        assert schema.key_schema is not None and schema.value_schema is not None
        key_in = _scalar_in(schema.key_schema, key_field)
        if value_field.type == FieldDescriptor.TYPE_MESSAGE:
            value_writer = _single_writer(schema.value_schema, value_field)
            entry_cls = None

            def map_in(value: Any, msg: Message) -> None:
                target = getattr(msg, name)
                for k, v in value.items():
                    if v is None:
                        raise DataError(
                            f"Map {name} holds a null value, which Protobuf cannot write"
                        )
                    holder = target[key_in(k)]
                    _fill_from(value_writer, v, holder, entry_cls)

            return map_in
        value_in = _scalar_in(schema.value_schema, value_field)

        def scalar_map_in(value: Any, msg: Message) -> None:
            target = getattr(msg, name)
            for k, v in value.items():
                if v is None:
                    raise DataError(f"Map {name} holds a null value, which Protobuf cannot write")
                target[key_in(k)] = value_in(v)

        return scalar_map_in
    if field.is_repeated:
        item = schema.value_schema
        assert item is not None
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            sub = field.message_type
            logical = _logical_in(sub.full_name, item)
            inner: Writer = logical if logical is not None else compile_writer(item, sub)

            def messages_in(value: Any, msg: Message) -> None:
                target = getattr(msg, name)
                for v in value:
                    if v is None:
                        raise DataError(f"Array {name} holds a null, which Protobuf cannot write")
                    inner(v, target.add())

            return messages_in
        conv = _scalar_in(item, field)
        if conv is _identity:
            return lambda value, msg: getattr(msg, name).extend(value)
        return lambda value, msg: getattr(msg, name).extend([conv(v) for v in value])
    return _single_writer(schema, field)


def _fill_from(writer: Writer, value: Any, holder: Message, _unused: Any) -> None:
    """Write a map entry's message value: ``holder`` is the map's value message."""
    inner = _ValueHolder(holder)
    writer(value, inner)


class _ValueHolder:
    """Lets a field writer for ``value`` fill a map's message value in place."""

    __slots__ = ("value",)

    def __init__(self, message: Message) -> None:
        self.value = message


def compile_writer(schema: Schema, desc: Descriptor) -> Writer:
    """A function writing a Connect STRUCT of ``schema`` into a message of type ``desc``."""
    plan: list[tuple[int, Writer]] = []
    for cfield in schema.fields:
        fs = cfield.schema
        if _is_union(fs):
            members = [
                (m.index, _single_writer(m.schema, _proto_field(desc, m.name))) for m in fs.fields
            ]
            plan.append((cfield.index, _union_writer(members)))
            continue
        plan.append((cfield.index, _field_writer(fs, _proto_field(desc, cfield.name))))

    def write(value: Any, msg: Message) -> None:
        if not isinstance(value, Struct):
            raise DataError(f"Expected a Struct for {desc.full_name}, got {type(value).__name__}")
        values = value._values
        for index, writer in plan:
            v = values[index]
            if v is not None:
                writer(v, msg)

    return write


def _union_writer(members: list[tuple[int, Writer]]) -> Writer:
    def write(value: Any, msg: Message) -> None:
        values = value._values
        for index, writer in members:
            v = values[index]
            if v is not None:
                writer(v, msg)
                return

    return write


def _proto_field(desc: Descriptor, name: str) -> FieldDescriptor:
    field = desc.fields_by_name.get(name)
    if field is None:
        raise DataError(f"Protobuf message {desc.full_name} has no field {name}")
    return field


# ------------------------------------------------------------------------------ reading


def _scalar_out(schema: Schema, field: FieldDescriptor) -> Callable[[Any], Any]:
    if field.type == FieldDescriptor.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return lambda number: names.get(number, str(number))
    return _identity


def _logical_out(full: str, schema: Schema) -> Reader | None:
    if full == DECIMAL_TYPE and schema.name == Decimal.LOGICAL_NAME:
        target = Decimal.scale(schema)

        def decimal_out(msg: Any) -> Any:
            n = int.from_bytes(msg.value, "big", signed=True) if msg.value else 0
            value = decimal.Decimal(n).scaleb(-msg.scale, context=_EXACT)
            return Decimal.rescale(value, target) if msg.scale != target else value

        return decimal_out
    if full == DATE_TYPE:
        return lambda msg: dt.date(msg.year, msg.month, msg.day)
    if full == TIME_TYPE:
        return lambda msg: dt.time(
            msg.hours, msg.minutes, msg.seconds, (msg.nanos // 1_000_000) * 1000
        )
    if full == TIMESTAMP_TYPE:

        def timestamp_out(msg: Any) -> dt.datetime:
            millis = msg.seconds * 1000 + msg.nanos // 1_000_000
            return _EPOCH + dt.timedelta(milliseconds=millis)

        return timestamp_out
    return None


def _single_reader(schema: Schema, field: FieldDescriptor) -> Reader:
    name = field.name
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = field.message_type
        logical = _logical_out(sub.full_name, schema)
        if logical is None and sub.full_name in WRAPPERS and schema.type is not Type.STRUCT:
            logical = lambda msg: msg.value  # noqa: E731
        inner = logical if logical is not None else compile_reader(schema, sub)

        def message_out(msg: Message) -> Any:
            return inner(getattr(msg, name)) if msg.HasField(name) else None

        return message_out
    conv = _scalar_out(schema, field)
    if field.has_presence:
        return lambda msg: conv(getattr(msg, name)) if msg.HasField(name) else None
    if conv is _identity:
        return lambda msg: getattr(msg, name)
    return lambda msg: conv(getattr(msg, name))


def _field_reader(schema: Schema, field: FieldDescriptor) -> Reader:
    name = field.name
    if field.is_repeated and schema.type is Type.MAP:
        entry = field.message_type
        assert schema.key_schema is not None and schema.value_schema is not None
        value_field = entry.fields_by_name["value"]
        key_out = _scalar_out(schema.key_schema, entry.fields_by_name["key"])
        if value_field.type == FieldDescriptor.TYPE_MESSAGE:
            sub = value_field.message_type
            logical = _logical_out(sub.full_name, schema.value_schema)
            if (
                logical is None
                and sub.full_name in WRAPPERS
                and schema.value_schema.type is not Type.STRUCT
            ):
                logical = lambda m: m.value  # noqa: E731
            value_out = logical if logical is not None else compile_reader(schema.value_schema, sub)
        else:
            value_out = _scalar_out(schema.value_schema, value_field)
        return lambda msg: {key_out(k): value_out(v) for k, v in getattr(msg, name).items()}
    if field.is_repeated:
        item = schema.value_schema
        assert item is not None
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            sub = field.message_type
            logical = _logical_out(sub.full_name, item)
            inner = logical if logical is not None else compile_reader(item, sub)
            return lambda msg: [inner(v) for v in getattr(msg, name)]
        conv = _scalar_out(item, field)
        if conv is _identity:
            return lambda msg: list(getattr(msg, name))
        return lambda msg: [conv(v) for v in getattr(msg, name)]
    return _single_reader(schema, field)


def compile_reader(schema: Schema, desc: Descriptor) -> Reader:
    """A function reading a message of type ``desc`` into a Connect STRUCT of ``schema``."""
    if is_map_entry(desc):
        raise DataError(f"{desc.full_name} is a map entry, not a message")
    readers: list[Reader] = []
    for cfield in schema.fields:
        fs = cfield.schema
        if _is_union(fs):
            readers.append(_union_reader(fs, desc))
        else:
            readers.append(_field_reader(fs, _proto_field(desc, cfield.name)))

    def read(msg: Message) -> Struct:
        return _from_values(schema, [r(msg) for r in readers])

    return read


def _union_reader(union: Schema, desc: Descriptor) -> Reader:
    members = {
        m.name: (m.index, _single_reader(m.schema, _proto_field(desc, m.name)))
        for m in union.fields
    }
    oneof_name = _proto_field(desc, union.fields[0].name).containing_oneof.name
    size = len(union.fields)

    def read(msg: Message) -> Any:
        which = msg.WhichOneof(oneof_name)
        if which is None:
            return None
        index, reader = members[which]
        values: list[Any] = [None] * size
        values[index] = reader(msg)
        return _from_values(union, values)

    return read


def enum_param_of(schema: Schema) -> str | None:
    """The Protobuf enum name of a STRING schema mapped from an enum."""
    return (schema.parameters or {}).get(ENUM_PARAM)
