"""Connect data: schemas, structs, logical types and value validation.

This package is part of the plugin-author surface; names mirror Kafka Connect's
``org.apache.kafka.connect.data`` in Python style.
"""

from connectrt.data.logical import Date, Decimal, Time, Timestamp
from connectrt.data.schema import Field, Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.data.values import validate_value

__all__ = [
    "Date",
    "Decimal",
    "Field",
    "Schema",
    "SchemaBuilder",
    "Struct",
    "Time",
    "Timestamp",
    "Type",
    "validate_value",
]
