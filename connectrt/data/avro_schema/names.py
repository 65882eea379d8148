"""The names both directions of the Avro <-> Connect schema mapping use: Confluent's record
names and the ``connect.*`` attributes and parameters that carry Connect metadata in Avro."""

from __future__ import annotations

from typing import Final

__all__ = [
    "AVRO_NAMESPACE",
    "CONNECT_DEFAULT",
    "CONNECT_DEFAULT_NAME",
    "CONNECT_DOC",
    "CONNECT_NAME",
    "CONNECT_PARAMETERS",
    "CONNECT_TYPE",
    "CONNECT_VERSION",
    "DECIMAL_PRECISION",
    "DEFAULT_DECIMAL_PRECISION",
    "ENUM_PARAM",
    "FIXED_SIZE",
    "MAP_ENTRY_FULL_NAME",
    "MAP_ENTRY_NAME",
]

AVRO_NAMESPACE: Final = "io.confluent.connect.avro"
CONNECT_DEFAULT_NAME: Final = "ConnectDefault"
MAP_ENTRY_NAME: Final = "MapEntry"
MAP_ENTRY_FULL_NAME: Final = f"{AVRO_NAMESPACE}.{MAP_ENTRY_NAME}"

CONNECT_NAME: Final = "connect.name"
CONNECT_DOC: Final = "connect.doc"
CONNECT_VERSION: Final = "connect.version"
CONNECT_PARAMETERS: Final = "connect.parameters"
CONNECT_DEFAULT: Final = "connect.default"
CONNECT_TYPE: Final = "connect.type"
DECIMAL_PRECISION: Final = "connect.decimal.precision"
FIXED_SIZE: Final = "connect.fixed.size"
ENUM_PARAM: Final = "io.confluent.connect.avro.Enum"
DEFAULT_DECIMAL_PRECISION: Final = 64
