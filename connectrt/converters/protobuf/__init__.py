"""ProtobufConverter: Confluent's Protobuf wire format through a Confluent-compatible schema
registry.

Each message is ``0x00`` + the 4-byte big-endian schema id + the message-index array + the
Protobuf payload. Connect schemas map to ``.proto`` (proto3) as Confluent's ``ProtobufData``
maps them (:mod:`~connectrt.converters.protobuf.schema_mapping`), values to messages built
with the ``protobuf`` package (:mod:`~connectrt.converters.protobuf.values`).

The modules: :mod:`~connectrt.converters.protobuf.converter` (the class),
:mod:`~connectrt.converters.protobuf.config`, :mod:`~connectrt.converters.protobuf.wire`,
:mod:`~connectrt.converters.protobuf.descriptors` (builtin imports, pools, message indexes),
:mod:`~connectrt.converters.protobuf.proto_text` (the ``.proto`` parser, shared with the
built-in registry), :mod:`~connectrt.converters.protobuf.proto_render`,
:mod:`~connectrt.converters.protobuf.schema_mapping` and
:mod:`~connectrt.converters.protobuf.values`.
"""

from __future__ import annotations

from connectrt.converters.protobuf.config import CONFIG_KEYS
from connectrt.converters.protobuf.converter import MAGIC_BYTE, ProtobufConverter

__all__ = ["CONFIG_KEYS", "MAGIC_BYTE", "ProtobufConverter"]

# The class's public name (plugin listings, DLQ headers and error traces name a converter by
# ``__module__``): ``connectrt.converters.protobuf.ProtobufConverter``.
ProtobufConverter.__module__ = __name__
