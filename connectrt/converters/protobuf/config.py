"""ProtobufConverter's configuration keys: the registry keys every schema converter shares
(:mod:`connectrt.converters.registry_config`) and those of Confluent's ``ProtobufConverter``
that change the schema mapping."""

from __future__ import annotations

from typing import Final

from connectrt.api.converter import ConfigKeys
from connectrt.converters.registry_config import CONFIG_KEYS as REGISTRY_KEYS

__all__ = [
    "CONFIG_KEYS",
    "ENHANCED_CONFIG",
    "INDEX_FOR_UNIONS_CONFIG",
    "OPTIONAL_FOR_NULLABLES_CONFIG",
    "WRAPPER_FOR_NULLABLES_CONFIG",
]

WRAPPER_FOR_NULLABLES_CONFIG: Final = "wrapper.for.nullables"
OPTIONAL_FOR_NULLABLES_CONFIG: Final = "optional.for.nullables"
ENHANCED_CONFIG: Final = "enhanced.protobuf.schema.support"
INDEX_FOR_UNIONS_CONFIG: Final = "generate.index.for.unions"

CONFIG_KEYS: ConfigKeys = {
    **REGISTRY_KEYS,
    WRAPPER_FOR_NULLABLES_CONFIG: (
        "BOOLEAN",
        False,
        "Write optional Connect primitives as google.protobuf wrapper messages (Int32Value, "
        "StringValue, ...) so that null survives, and read wrapper fields as optional "
        "primitives (plain proto3 scalars are then required fields).",
    ),
    OPTIONAL_FOR_NULLABLES_CONFIG: (
        "BOOLEAN",
        False,
        "Write optional Connect primitives as proto3 optional fields (field presence), so "
        "that null survives without wrapper messages.",
    ),
    ENHANCED_CONFIG: (
        "BOOLEAN",
        False,
        "Name the Connect structs read from Protobuf by the message's full name (with its "
        "package) instead of its simple name.",
    ),
    INDEX_FOR_UNIONS_CONFIG: (
        "BOOLEAN",
        True,
        "Name the struct field of a oneof <oneof>_<index> (Confluent's default); false names "
        "it after the oneof alone.",
    ),
}
