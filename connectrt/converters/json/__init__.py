"""JsonConverter: Kafka Connect's JSON wire format, byte-compatible with
``org.apache.kafka.connect.json.JsonConverter``.

With ``schemas.enable=true`` (the default) every non-tombstone message is an envelope
``{"schema":S,"payload":P}``; otherwise the bare payload. Schema JSON, type names (FLOAT32 is
``"float"``, FLOAT64 ``"double"``), key order, base64 bytes, map-as-array-of-pairs for
non-string keys and the logical types all follow Kafka's converter. Output is compact JSON.

Performance: for each schema the converter compiles (once, LRU-cached by
``schemas.cache.size``) a serializer closure tree, the schema's JSON bytes, a column writer for
STRUCT schemas and a deserializer closure tree; the envelope is built by byte concatenation. A
batch (``from_connect_values``, the source runtime's path) is written by one orjson call per
column (:mod:`~connectrt.converters.json.batch`). On read, a message whose schema text equals
the previous message's is recognised by a prefix compare and only its payload is parsed.

Checked value for value and byte for byte against Kafka Connect's own converter by
``tests/unit/test_json_converter_vs_kafka.py``; the text Jackson writes where orjson would
write otherwise is :mod:`~connectrt.converters.json.java_text`'s. Dates, times and timestamps
Python's ``datetime`` cannot hold are read as :class:`~connectrt.data.logical.RawLogical`.
One deliberate difference: reads are type-checked (Kafka's Jackson accessors coerce, e.g. a
JSON string read as INT32 gives 0); a mismatch raises DataError.

Thread-safety: configure once, then use from a single task thread (the caches are not locked).

The modules: :mod:`~connectrt.converters.json.converter` (the class),
:mod:`~connectrt.converters.json.config`, :mod:`~connectrt.converters.json.schema_mapping`
(Connect schema <-> envelope ``schema``), :mod:`~connectrt.converters.json.java_text`
(Jackson's text), :mod:`~connectrt.converters.json.compiler` with
:mod:`~connectrt.converters.json.encoder` and :mod:`~connectrt.converters.json.decoder` (the
per-schema closures), :mod:`~connectrt.converters.json.batch` (batch writes),
:mod:`~connectrt.converters.json.schemaless` and :mod:`~connectrt.converters.json.parsing`.
"""

from __future__ import annotations

from connectrt.converters.json.config import CONFIG_KEYS
from connectrt.converters.json.converter import ENVELOPE_ERROR, JsonConverter
from connectrt.converters.json.encoder import NULL_REQUIRED_ERROR

__all__ = ["CONFIG_KEYS", "ENVELOPE_ERROR", "NULL_REQUIRED_ERROR", "JsonConverter"]

# The class's public name: plugin listings, DLQ headers and error traces name a converter by
# ``__module__``, and that name is the ``connectrt.converters.json.JsonConverter`` users
# configure.
JsonConverter.__module__ = __name__
