"""Connect schema <-> Avro schema mapping, compatible with Confluent's ``AvroData``.

* INT8 / INT16 are Avro ``int`` with ``"connect.type": "int8"`` / ``"int16"``; INT32 ``int``,
  INT64 ``long``, FLOAT32 ``float``, FLOAT64 ``double``, BOOLEAN, STRING, BYTES as named.
* ARRAY is ``array``; MAP with STRING keys is ``map``; other MAPs are an ``array`` of
  ``io.confluent.connect.avro.MapEntry`` records with ``key`` and ``value`` fields.
* STRUCT is ``record``: the record's full name is the schema name (namespace split at the last
  dot), or ``io.confluent.connect.avro.ConnectDefault`` (``ConnectDefault2``, ... for further
  unnamed records in the same schema) when it has none.
* Optional schemas are ``["null", T]`` (``[T, "null"]`` when the default is not null, as Avro
  requires the default to match the first branch); optional fields default to null.
* Logical types: Decimal is ``bytes`` ``decimal`` (``precision`` from the
  ``connect.decimal.precision`` parameter, else 64; ``scale``), Date ``int`` ``date``, Time
  ``int`` ``time-millis``, Timestamp ``long`` ``timestamp-millis``.
* Connect metadata is kept in ``connect.name``, ``connect.version``, ``connect.doc``,
  ``connect.parameters`` and ``connect.default`` so that a schema survives a round trip.
* Avro ``enum`` reads as STRING (parameter ``io.confluent.connect.avro.Enum`` holds the enum
  name, ``io.confluent.connect.avro.Enum.<symbol>`` each symbol) and ``fixed`` as BYTES
  (parameter ``connect.fixed.size``); both are written back as the original Avro type.
  Other logical types (``timestamp-micros``, ``uuid``, ...) read as their underlying type.

Unions other than ``null`` + one type are not supported (DataError).

The modules: :mod:`~connectrt.data.avro_schema.from_connect` (Connect -> Avro),
:mod:`~connectrt.data.avro_schema.to_connect` (Avro -> Connect),
:mod:`~connectrt.data.avro_schema.names` (the names both use; the package re-exports those the
converters and connectors need) and :mod:`~connectrt.data.avro_schema.strip` (schemas without
logical types, for fastavro).
"""

from __future__ import annotations

from connectrt.data.avro_schema.from_connect import AVRO_PRIMITIVE, connect_to_avro, default_to_avro
from connectrt.data.avro_schema.names import (
    AVRO_NAMESPACE,
    CONNECT_DEFAULT_NAME,
    ENUM_PARAM,
    MAP_ENTRY_NAME,
)
from connectrt.data.avro_schema.strip import strip_logical_types
from connectrt.data.avro_schema.to_connect import avro_to_connect, default_from_avro

__all__ = [
    "AVRO_NAMESPACE",
    "AVRO_PRIMITIVE",
    "CONNECT_DEFAULT_NAME",
    "ENUM_PARAM",
    "MAP_ENTRY_NAME",
    "avro_to_connect",
    "connect_to_avro",
    "default_from_avro",
    "default_to_avro",
    "strip_logical_types",
]
