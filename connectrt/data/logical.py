"""Kafka Connect's logical types: Decimal, Date, Time and Timestamp.

A logical type is a primitive schema with a well-known ``name`` (and ``version`` 1). Connect
values of a logical type are the Python type (``decimal.Decimal``, ``datetime.date``,
``datetime.time``, ``datetime.datetime``); ``from_logical`` / ``to_logical`` convert to and
from the underlying primitive exactly as Kafka does, so the encoded forms are wire-compatible.

* Decimal: BYTES, big-endian two's-complement unscaled value, parameter ``scale``.
* Date: INT32 days since the Unix epoch.
* Time: INT32 milliseconds since midnight (sub-millisecond precision is truncated).
* Timestamp: INT64 milliseconds since the epoch; naive datetimes are taken as UTC and
  ``to_logical`` returns an aware UTC datetime (sub-millisecond precision is truncated).

Kafka Connect accepts values Python's ``datetime`` cannot hold: dates and timestamps outside
years 1-9999, and the Time 24:00 (86,400,000 ms). Where a converter meets one, it gives a
:class:`RawLogical`, the underlying integer, and writes one back as that integer.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import ClassVar

from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.errors import DataError

__all__ = [
    "LOGICAL_TYPE_NAMES",
    "Date",
    "Decimal",
    "RawLogical",
    "Time",
    "Timestamp",
    "logical_name",
    "millis_to_datetime",
]

# Enough precision that scaleb/quantize never round.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_MS = dt.timedelta(milliseconds=1)
_MS_PER_DAY = 86_400_000


class RawLogical(int):
    """A Date, Time or Timestamp value Python's ``datetime`` cannot hold, as its underlying
    integer: days since the epoch (Date), milliseconds since midnight (Time; only 86,400,000,
    the 24:00 Kafka Connect accepts) or milliseconds since the epoch (Timestamp).

    The JSON converter reads such values as this type (Kafka Connect reads them as a
    ``java.util.Date``) and writes it back as the integer; a plain ``int`` stays a type error
    for a logical schema, as in Kafka Connect.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"RawLogical({int(self)})"


class Decimal:
    """Arbitrary-precision decimal with a fixed scale, stored as BYTES."""

    LOGICAL_NAME: ClassVar[str] = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD: ClassVar[str] = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        if isinstance(scale, bool) or not isinstance(scale, int):
            raise DataError(f"Decimal scale must be an int, got {scale!r}")
        return (
            SchemaBuilder.bytes()
            .name(Decimal.LOGICAL_NAME)
            .parameter(Decimal.SCALE_FIELD, str(scale))
            .version(1)
        )

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        """The ``scale`` parameter of a Decimal schema."""
        params = schema.parameters
        raw = None if params is None else params.get(Decimal.SCALE_FIELD)
        if raw is None:
            raise DataError("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(raw)
        except ValueError as exc:
            raise DataError(f"Invalid Decimal schema: scale {raw!r} is not an int") from exc

    @staticmethod
    def rescale(value: decimal.Decimal, scale: int) -> decimal.Decimal:
        """``value`` with exactly ``scale`` digits after the point; DataError if that loses digits.

        Kafka requires the BigDecimal's scale to equal the schema's; Python code often holds
        ``Decimal("1.5")`` for a scale-2 column, so exact rescaling is allowed here.
        """
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            raise DataError(f"Invalid Decimal value: {value!r}")
        exponent = value.as_tuple().exponent
        if exponent == -scale:
            return value
        quantized = value.quantize(decimal.Decimal((0, (1,), -scale)), context=_EXACT)
        if quantized != value:
            raise DataError(f"Decimal value {value} does not fit scale {scale} without rounding")
        return quantized

    @staticmethod
    def unscaled(value: decimal.Decimal, scale: int) -> int:
        """The unscaled integer of ``value`` at ``scale``."""
        return int(Decimal.rescale(value, scale).scaleb(scale, context=_EXACT))

    @staticmethod
    def from_logical(schema: Schema, value: decimal.Decimal) -> bytes:
        """Big-endian two's-complement bytes of the unscaled value (Java's ``toByteArray``)."""
        n = Decimal.unscaled(value, Decimal.scale(schema))
        bits = n.bit_length() if n >= 0 else (~n).bit_length()
        return n.to_bytes(bits // 8 + 1, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> decimal.Decimal:
        if not isinstance(value, bytes | bytearray | memoryview) or len(value) == 0:
            raise DataError("Invalid bytes for Decimal field")
        n = int.from_bytes(value, "big", signed=True)
        return decimal.Decimal(n).scaleb(-Decimal.scale(schema), context=_EXACT)


class _IntegerLogical:
    """Base of Date, Time and Timestamp: a logical type over an integer ``TYPE``, its schema
    named ``LOGICAL_NAME`` (version 1) and without parameters."""

    LOGICAL_NAME: ClassVar[str]
    TYPE: ClassVar[Type]
    SCHEMA: ClassVar[Schema]

    @classmethod
    def builder(cls) -> SchemaBuilder:
        return SchemaBuilder(cls.TYPE).name(cls.LOGICAL_NAME).version(1)

    @classmethod
    def schema(cls) -> Schema:
        return cls.SCHEMA


class Date(_IntegerLogical):
    """A calendar date, stored as INT32 days since the Unix epoch."""

    LOGICAL_NAME: ClassVar[str] = "org.apache.kafka.connect.data.Date"
    TYPE: ClassVar[Type] = Type.INT32

    @staticmethod
    def from_logical(schema: Schema | None, value: dt.date) -> int:
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.UTC)
            if value.time() != dt.time(0):
                raise DataError(
                    "Kafka Connect Date type should not have any time fields set to "
                    "non-zero values."
                )
            value = value.date()
        elif not isinstance(value, dt.date):
            raise DataError(f"Invalid type for Date, expected date but was {type(value).__name__}")
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema | None, value: int) -> dt.date:
        try:
            return _EPOCH_DATE + dt.timedelta(days=value)
        except (OverflowError, TypeError) as exc:
            raise DataError(f"Invalid Date value {value!r}: {exc}") from exc


class Time(_IntegerLogical):
    """A time of day, stored as INT32 milliseconds since midnight (UTC)."""

    LOGICAL_NAME: ClassVar[str] = "org.apache.kafka.connect.data.Time"
    TYPE: ClassVar[Type] = Type.INT32

    @staticmethod
    def from_logical(schema: Schema | None, value: dt.time) -> int:
        if not isinstance(value, dt.time):
            raise DataError(f"Invalid type for Time, expected time but was {type(value).__name__}")
        ms = (
            value.hour * 3_600_000
            + value.minute * 60_000
            + value.second * 1000
            + value.microsecond // 1000
        )
        offset = value.utcoffset()
        if offset:
            ms = (ms - offset // _ONE_MS) % _MS_PER_DAY
        return ms

    @staticmethod
    def to_logical(schema: Schema | None, value: int) -> dt.time:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MS_PER_DAY:
            raise DataError(
                "Kafka Connect Time type should not have any date fields set to non-zero values."
            )
        seconds, ms = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return dt.time(hour, minute, second, ms * 1000)


class Timestamp(_IntegerLogical):
    """An instant, stored as INT64 milliseconds since the Unix epoch."""

    LOGICAL_NAME: ClassVar[str] = "org.apache.kafka.connect.data.Timestamp"
    TYPE: ClassVar[Type] = Type.INT64

    @staticmethod
    def from_logical(schema: Schema | None, value: dt.datetime) -> int:
        if not isinstance(value, dt.datetime):
            raise DataError(
                f"Invalid type for Timestamp, expected datetime but was {type(value).__name__}"
            )
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return (value - _EPOCH) // _ONE_MS

    @staticmethod
    def to_logical(schema: Schema | None, value: int) -> dt.datetime:
        return millis_to_datetime(value)


# Below this many milliseconds from the epoch (year 2106 either way) the float number of seconds
# is within 0.25 us of the exact value, so fromtimestamp's rounding to the microsecond is exact.
_FLOAT_EXACT_MS = (1 << 32) * 1000
_fromtimestamp = dt.datetime.fromtimestamp


def millis_to_datetime(value: int) -> dt.datetime:
    """Milliseconds since the epoch -> aware UTC ``datetime``, exactly (``Timestamp``'s
    ``to_logical``; the converters' decoders call it directly). DataError for a non-integer or
    a value outside ``datetime``'s range."""
    if type(value) is int and -_FLOAT_EXACT_MS < value < _FLOAT_EXACT_MS:
        try:
            return _fromtimestamp(value / 1000, dt.UTC)  # ~3x faster than adding a timedelta
        except (OverflowError, OSError, ValueError):
            pass  # a platform without negative timestamps: the exact path below
    try:
        return _EPOCH + dt.timedelta(milliseconds=value)
    except (OverflowError, TypeError) as exc:
        raise DataError(f"Invalid Timestamp value {value!r}: {exc}") from exc


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

LOGICAL_TYPE_NAMES: frozenset[str] = frozenset(
    {Decimal.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME}
)

# Base type each logical type must sit on; a schema with a logical name but another base
# type is treated as a plain primitive (as Kafka's converters do).
LOGICAL_BASE_TYPES: dict[str, Type] = {
    Decimal.LOGICAL_NAME: Type.BYTES,
    Date.LOGICAL_NAME: Type.INT32,
    Time.LOGICAL_NAME: Type.INT32,
    Timestamp.LOGICAL_NAME: Type.INT64,
}


def logical_name(schema: Schema) -> str | None:
    """The logical type name of ``schema`` if it is one of the four built-in logical types."""
    name = schema.name
    if name is not None and LOGICAL_BASE_TYPES.get(name) is schema.type:
        return name
    return None
