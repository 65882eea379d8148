"""SimpleHeaderConverter: header values as text, with Kafka's schema inference on read.

This follows Kafka's ``SimpleHeaderConverter``, which relies on ``Values.convertToString`` to
write and ``Values.parseString`` to read; :func:`convert_to_string` and :func:`parse_string`
are the Python counterparts.

Writing (``from_connect_header``), UTF-8 encoded:

* None -> a null header; ``str`` as is; ``bool`` -> ``true``/``false``; ``int``,
  ``float`` and ``decimal.Decimal`` as numbers (``Infinity``/``-Infinity``/``NaN`` as Java
  writes them); ``bytes`` -> base64;
* ``list``/``tuple`` -> ``[e1,e2]`` and ``dict`` -> ``{k1:v1,k2:v2}``, where strings and
  bytes inside are double-quoted (``"`` and ``\\`` escaped with a backslash) and ``None``
  is ``null``; a :class:`~connectrt.data.struct.Struct` -> ``{"field":value,...}``;
* ``datetime.date`` -> ``yyyy-MM-dd``, ``datetime.time`` -> ``HH:mm:ss.SSSZ`` and
  ``datetime.datetime`` -> ``yyyy-MM-ddTHH:mm:ss.SSSZ`` (UTC; naive values are UTC).

Reading (``to_connect_header``) infers a schema from the text:

* no value -> ``(None, None)``; ``""`` -> STRING; ``null`` -> ``(None, None)``;
  ``true``/``false`` -> BOOLEAN;
* whole numbers (``42``, ``-7``, ``1.0``, ``1e3``) -> the smallest of INT8, INT16, INT32 and
  INT64 that holds them; other numbers -> FLOAT32 when within float range (Kafka's choice;
  the Python value keeps double precision), else FLOAT64, else a Decimal logical type with
  the text's scale (also for whole numbers beyond INT64);
* ``yyyy-MM-dd`` -> Date, ``HH:mm:ss.SSSZ`` -> Time, ``yyyy-MM-ddTHH:mm:ss.SSSZ`` -> Timestamp;
* ``[...]`` -> ARRAY and ``{...}`` -> MAP, elements parsed the same way (strings inside must
  be quoted; a quoted string holding a date/time is that logical type); the element, key and
  value schemas are the common schema of the entries, integers widening to the larger integer
  or float type (values converted accordingly);
* anything else -> STRING holding the text unchanged. Numbers, booleans and ``null`` may be
  surrounded by whitespace.

Where connectrt deliberately differs from Kafka (3.x):

* Kafka ignores text after a complete value (``12:30`` reads as INT8 ``12``, ``[1]x`` as an
  array); here such text is a STRING.
* Kafka keeps the backslash escapes inside quoted strings and drops whitespace-only pieces
  of them; here they are unescaped, so strings inside lists and maps round-trip.
* Lists or maps with ``null`` entries get an optional element/value schema (Kafka gives up
  and returns the text as a STRING). When the entries have no common schema (``[1,"a"]``,
  ``[]``, ``[null]``), Kafka returns a schema with a null element schema, which connectrt
  schemas cannot express: the value is returned schemaless (schema None), and so is a list
  or map holding such a schemaless value. Nested lists and maps merge their item schemas
  (Kafka keeps the last one seen); logical types merge only with themselves (Kafka widens a
  Date with integers).
* Dates and times are read and written in UTC and strictly (Kafka uses the JVM's time zone
  and a lenient parser that accepts ``2023-02-30``); the written form is chosen from the
  Python type rather than from the value's milliseconds.
* A header that is not valid UTF-8 is returned as BYTES (Kafka decodes it with
  replacement characters).

Round trips are exact for None, booleans, integers (INT64 range), strings that do not look
like another type, dates, times (millisecond precision) and lists/maps of those; floats come
back with the inferred width (``2.0`` reads as INT8 ``2``, as in Kafka); bytes come back as
their base64 STRING. To pass header bytes through unchanged use ByteArrayConverter as the
header converter; for typed headers that round-trip exactly, JsonConverter.

The modules: :mod:`~connectrt.converters.headers.converter` (the class),
:mod:`~connectrt.converters.headers.formatting` (writing),
:mod:`~connectrt.converters.headers.parser` with :mod:`~connectrt.converters.headers.scalars`
and :mod:`~connectrt.converters.headers.schema_merging` (reading).
"""

from __future__ import annotations

from connectrt.converters.headers.converter import SimpleHeaderConverter
from connectrt.converters.headers.formatting import convert_to_string
from connectrt.converters.headers.parser import parse_string

__all__ = ["SimpleHeaderConverter", "convert_to_string", "parse_string"]

# The class's public name: plugin listings, DLQ headers and error traces name a converter by
# ``__module__``, and that name is the ``connectrt.converters.headers.SimpleHeaderConverter``
# users configure.
SimpleHeaderConverter.__module__ = __name__
