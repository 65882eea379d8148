"""Single message transformations (SMTs) and predicates bundled with connectrt.

Each Kafka SMT with ``$Key``/``$Value`` variants is a pair of classes here (``CastKey`` /
``CastValue`` for ``Cast$Key`` / ``Cast$Value``). :data:`KAFKA_ALIASES` maps every Kafka class
name to the Python path of the connectrt class, so configs written for Kafka Connect
(``transforms.x.type=org.apache.kafka.connect.transforms.Cast$Value``) work unchanged.
:class:`~connectrt.transforms.chain.TransformationChain` builds and runs the configured chain.
"""

from __future__ import annotations

__all__ = [
    "KAFKA_ALIASES",
    "KAFKA_PREDICATES",
    "KAFKA_TRANSFORMATIONS",
    "CastKey",
    "CastValue",
    "DropHeaders",
    "ExtractFieldKey",
    "ExtractFieldValue",
    "Filter",
    "FlattenKey",
    "FlattenValue",
    "HasHeaderKey",
    "HeaderFromKey",
    "HeaderFromValue",
    "HoistFieldKey",
    "HoistFieldValue",
    "InsertFieldKey",
    "InsertFieldValue",
    "InsertHeader",
    "MaskFieldKey",
    "MaskFieldValue",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "SetSchemaMetadataKey",
    "SetSchemaMetadataValue",
    "TimestampConverterKey",
    "TimestampConverterValue",
    "TimestampRouter",
    "TopicNameMatches",
    "TransformationChain",
    "ValueToKey",
]

_KAFKA = "org.apache.kafka.connect.transforms."
_HERE = "connectrt.transforms."

_KEY_VALUE_SMTS = {
    "Cast": "cast",
    "ExtractField": "extract_field",
    "Flatten": "flatten",
    "HeaderFrom": "headers",
    "HoistField": "hoist_field",
    "InsertField": "insert_field",
    "MaskField": "mask_field",
    "ReplaceField": "replace_field",
    "SetSchemaMetadata": "set_schema_metadata",
    "TimestampConverter": "timestamp_converter",
}
_SINGLE_SMTS = {
    "DropHeaders": "headers",
    "Filter": "filter",
    "InsertHeader": "headers",
    "RegexRouter": "regex_router",
    "TimestampRouter": "timestamp_router",
    "ValueToKey": "value_to_key",
}

KAFKA_TRANSFORMATIONS: dict[str, str] = {
    **{
        f"{_KAFKA}{smt}${part}": f"{_HERE}{module}.{smt}{part}"
        for smt, module in _KEY_VALUE_SMTS.items()
        for part in ("Key", "Value")
    },
    **{f"{_KAFKA}{smt}": f"{_HERE}{module}.{smt}" for smt, module in _SINGLE_SMTS.items()},
}
"""Kafka SMT class name -> Python path of the connectrt transformation."""

KAFKA_PREDICATES: dict[str, str] = {
    f"{_KAFKA}predicates.{name}": f"{_HERE}predicates.{name}"
    for name in ("HasHeaderKey", "RecordIsTombstone", "TopicNameMatches")
}
"""Kafka predicate class name -> Python path of the connectrt predicate."""

KAFKA_ALIASES: dict[str, str] = {**KAFKA_TRANSFORMATIONS, **KAFKA_PREDICATES}
"""Every Kafka SMT and predicate class name (``$Key``/``$Value`` forms included) -> the Python
path of the connectrt class (``module.Class``), for registration in the plugin registry."""

from connectrt.transforms.cast import CastKey, CastValue  # noqa: E402
from connectrt.transforms.chain import TransformationChain  # noqa: E402
from connectrt.transforms.extract_field import ExtractFieldKey, ExtractFieldValue  # noqa: E402
from connectrt.transforms.filter import Filter  # noqa: E402
from connectrt.transforms.flatten import FlattenKey, FlattenValue  # noqa: E402
from connectrt.transforms.headers import (  # noqa: E402
    DropHeaders,
    HeaderFromKey,
    HeaderFromValue,
    InsertHeader,
)
from connectrt.transforms.hoist_field import HoistFieldKey, HoistFieldValue  # noqa: E402
from connectrt.transforms.insert_field import InsertFieldKey, InsertFieldValue  # noqa: E402
from connectrt.transforms.mask_field import MaskFieldKey, MaskFieldValue  # noqa: E402
from connectrt.transforms.predicates import (  # noqa: E402
    HasHeaderKey,
    RecordIsTombstone,
    TopicNameMatches,
)
from connectrt.transforms.regex_router import RegexRouter  # noqa: E402
from connectrt.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue  # noqa: E402
from connectrt.transforms.set_schema_metadata import (  # noqa: E402
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
)
from connectrt.transforms.timestamp_converter import (  # noqa: E402
    TimestampConverterKey,
    TimestampConverterValue,
)
from connectrt.transforms.timestamp_router import TimestampRouter  # noqa: E402
from connectrt.transforms.value_to_key import ValueToKey  # noqa: E402
