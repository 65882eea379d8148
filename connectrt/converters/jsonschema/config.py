"""JsonSchemaConverter's configuration keys: the registry keys every schema converter shares
(:mod:`connectrt.converters.registry_config`) and those of Confluent's ``JsonSchemaConverter``
(``decimal.format`` as :mod:`connectrt.converters.json.config` declares and parses it)."""

from __future__ import annotations

from typing import Final

from connectrt.api.converter import ConfigKeys
from connectrt.converters.json.config import CONFIG_KEYS as JSON_KEYS
from connectrt.converters.json.config import DECIMAL_FORMAT_CONFIG
from connectrt.converters.registry_config import CONFIG_KEYS as REGISTRY_KEYS

__all__ = [
    "ADDITIONAL_PROPERTIES_CONFIG",
    "CONFIG_KEYS",
    "DECIMAL_FORMAT_CONFIG",
    "OPTIONAL_FOR_NONREQUIRED_CONFIG",
    "VALIDATE_CONFIG",
]

VALIDATE_CONFIG: Final = "json.fail.invalid.schema"
ADDITIONAL_PROPERTIES_CONFIG: Final = "object.additional.properties"
OPTIONAL_FOR_NONREQUIRED_CONFIG: Final = "use.optional.for.nonrequired"

CONFIG_KEYS: ConfigKeys = {
    **REGISTRY_KEYS,
    VALIDATE_CONFIG: (
        "BOOLEAN",
        False,
        "Validate each payload against its JSON Schema before writing it; an invalid value "
        "fails the conversion (the record goes to the connector's error handling).",
    ),
    DECIMAL_FORMAT_CONFIG: JSON_KEYS[DECIMAL_FORMAT_CONFIG],  # as JsonConverter's
    ADDITIONAL_PROPERTIES_CONFIG: (
        "BOOLEAN",
        True,
        "Whether the JSON Schemas written for structs admit additional properties (an open "
        "content model); false writes additionalProperties: false (closed).",
    ),
    OPTIONAL_FOR_NONREQUIRED_CONFIG: (
        "BOOLEAN",
        False,
        "On read, make a property not listed in its object's required list an optional "
        "field (by default only nullable properties are optional).",
    ),
}
