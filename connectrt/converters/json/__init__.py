"""JsonConverter: Kafka Connect's JSON wire format, byte-compatible with
``org.apache.kafka.connect.json.JsonConverter``.

With ``schemas.enable=true`` (the default) every non-tombstone message is an envelope
``{"schema":S,"payload":P}``; otherwise the bare payload. Schema JSON, type names (FLOAT32 is
``"float"``, FLOAT64 ``"double"``), key order, base64 bytes, map-as-array-of-pairs for
non-string keys and the logical types all follow Kafka's converter. Output is compact JSON.

Performance: for each schema the converter compiles (once, LRU-cached by
``schemas.cache.size``) a serializer closure tree, the schema's JSON bytes and a deserializer
closure tree; the envelope is built by byte concatenation. On read, a message whose schema
text equals the previous message's is recognised by a prefix compare and only its payload is
parsed.

Deliberate differences from Kafka, all on inputs Kafka handles poorly:

* Non-finite floats (NaN, +/-inf) raise DataError on write; Kafka writes them as the strings
  ``"NaN"``/``"Infinity"`` that it then reads back as 0.0.
* Reads are type-checked (Kafka's Jackson accessors coerce, e.g. a JSON string read as INT32
  gives 0); a mismatch raises DataError.
* FLOAT32 values stay Python floats (double precision) on read; ``repr`` is used on write,
  which matches Java's ``Float.toString`` for values that came from decimal literals.
  Large/small floats use Python's exponent syntax (``1e+16``) rather than Java's (``1.0E16``):
  the same JSON number, different bytes.
* Decimal values may have a different exponent than the schema's scale if they can be
  rescaled exactly (``Decimal("1.5")`` at scale 2 is written as 1.50); NUMERIC decimals read
  with more digits than the scale are returned as-is, as Kafka does.
* Messages carrying NUMERIC decimals are re-parsed with an exact (slower) parser so that no
  precision is lost; base64 decimals take the fast path.
* Schemaless integers beyond 64 bits are rejected on write.

Thread-safety: configure once, then use from a single task thread (the caches are not locked).

The modules: :mod:`~connectrt.converters.json.converter` (the class),
:mod:`~connectrt.converters.json.config`, :mod:`~connectrt.converters.json.schema_mapping`
(Connect schema <-> envelope ``schema``), :mod:`~connectrt.converters.json.compiler` with
:mod:`~connectrt.converters.json.encoder` and :mod:`~connectrt.converters.json.decoder` (the
per-schema closures), :mod:`~connectrt.converters.json.schemaless` and
:mod:`~connectrt.converters.json.parsing`.
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
