"""The object formats: Parquet and Avro from Arrow record batches, JSON lines from values.

Every format turns one file's buffered chunks into the bytes of one object. Parquet and Avro
files carry the sink's recovery marks in their metadata (:data:`SET_END_KEY`: the offset after
the last record of the set of files written together; :data:`SET_FILES_KEY`: how many files
that set has), which the task reads back on assignment to resume after the last complete set.
JSON lines have nowhere to put them: a JSON lines sink resumes from the committed offsets.
Stateless; thread-safe.
"""

from __future__ import annotations

import base64
import decimal
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from connectrt.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connectrt.data.avro_schema import AVRO_PRIMITIVE
from connectrt.errors import DataError

__all__ = [
    "EXTENSIONS",
    "SET_END_KEY",
    "SET_FILES_KEY",
    "avro_schema",
    "encode_avro",
    "encode_json_lines",
    "encode_parquet",
    "read_marks",
]

SET_END_KEY = "connectrt.set.end.offset"
SET_FILES_KEY = "connectrt.set.files"
EXTENSIONS = {"parquet": "parquet", "json": "json", "avro": "avro"}


def _marks_metadata(set_end: int, set_files: int) -> dict[str, str]:
    return {SET_END_KEY: str(set_end), SET_FILES_KEY: str(set_files)}


def encode_parquet(
    batches: Sequence[pa.RecordBatch], schema: pa.Schema, codec: str, marks: tuple[int, int]
) -> pa.Buffer:
    """One Parquet file of ``batches`` (all of ``schema``), one row group per 128k rows."""
    metadata = dict(schema.metadata or {})
    metadata.update({k.encode(): v.encode() for k, v in _marks_metadata(*marks).items()})
    table = pa.Table.from_batches(batches, schema=schema).replace_schema_metadata(metadata)
    sink = pa.BufferOutputStream()
    pq.write_table(
        table,
        sink,
        compression="none" if codec == "uncompressed" else codec,
        row_group_size=128 * 1024,
    )
    return sink.getvalue()


def _json_default(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: value.get(f) for f in value.schema.fields}
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode_json_lines(values: Sequence[Any]) -> bytes:
    """One JSON document per line: structs as objects, decimals as strings, bytes as base64,
    timestamps as RFC 3339."""
    dumps = orjson.dumps
    options = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    return b"".join([dumps(v, default=_json_default, option=options) for v in values])


# -- Avro ---------------------------------------------------------------------------------------


def avro_schema(schema: Schema) -> dict[str, Any]:
    """The Avro schema of a file of values of ``schema`` (a record; a non-struct value schema
    is a record with one ``value`` field, as the Parquet column is)."""
    names: set[str] = set()
    if schema.type is Type.STRUCT:
        return _avro_record(schema, names)
    return {
        "type": "record",
        "name": "ConnectDefault",
        "fields": [{"name": "value", **_avro_field_type(schema, names)}],
    }


def _avro_name(schema: Schema, names: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", (schema.name or "ConnectDefault").rsplit(".", 1)[-1])
    if not base or base[0].isdigit():
        base = "_" + base
    name, n = base, 1
    while name in names:
        n += 1
        name = f"{base}{n}"
    names.add(name)
    return name


def _avro_record(schema: Schema, names: set[str]) -> dict[str, Any]:
    return {
        "type": "record",
        "name": _avro_name(schema, names),
        "fields": [{"name": f.name, **_avro_field_type(f.schema, names)} for f in schema.fields],
    }


def _avro_field_type(schema: Schema, names: set[str]) -> dict[str, Any]:
    avro = _avro_type(schema, names)
    if schema.optional:
        return {"type": ["null", avro], "default": None}
    return {"type": avro}


def _avro_type(schema: Schema, names: set[str]) -> Any:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        precision = int((schema.parameters or {}).get("connect.decimal.precision", 38))
        return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    if name == Date.LOGICAL_NAME:
        return {"type": "int", "logicalType": "date"}
    if name == Time.LOGICAL_NAME:
        return {"type": "int", "logicalType": "time-millis"}
    if name == Timestamp.LOGICAL_NAME:
        return {"type": "long", "logicalType": "timestamp-millis"}
    if schema.type is Type.STRUCT:
        return _avro_record(schema, names)
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        items = _avro_type(schema.value_schema, names)
        return {
            "type": "array",
            "items": ["null", items] if schema.value_schema.optional else items,
        }
    if schema.type is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is not Type.STRING:
            raise DataError("Avro files need string map keys")
        values = _avro_type(schema.value_schema, names)
        return {
            "type": "map",
            "values": ["null", values] if schema.value_schema.optional else values,
        }
    return AVRO_PRIMITIVE[schema.type]


def encode_avro(
    batches: Sequence[pa.RecordBatch], schema: Mapping[str, Any], marks: tuple[int, int]
) -> bytes:
    """One Avro object container file of the rows of ``batches`` (rows as dicts: Avro has no
    columnar writer), with the recovery marks in its header metadata."""
    parsed = fastavro.parse_schema(dict(schema))
    rows: list[dict[str, Any]] = []
    for batch in batches:
        rows.extend(batch.to_pylist(maps_as_pydicts="strict"))
    out = io.BytesIO()
    fastavro.writer(out, parsed, rows, codec="null", metadata=_marks_metadata(*marks))
    return out.getvalue()


def _normalize_marks(raw: Mapping[Any, Any]) -> tuple[int, int] | None:
    def get(key: str) -> Any:
        value = raw.get(key, raw.get(key.encode()))
        return value.decode() if isinstance(value, bytes) else value

    end, files = get(SET_END_KEY), get(SET_FILES_KEY)
    if end is None or files is None:
        return None
    return int(end), int(files)


def read_marks(format_name: str, source: Any) -> tuple[int, int] | None:
    """``(set end offset, files in the set)`` from a Parquet (a random-access file) or Avro
    (bytes) object; None for JSON lines or a file without them."""
    if format_name == "parquet":
        metadata = pq.read_metadata(source).metadata or {}
        return _normalize_marks(metadata)
    if format_name == "avro":
        reader = fastavro.reader(io.BytesIO(source))
        return _normalize_marks(reader.metadata)
    return None
