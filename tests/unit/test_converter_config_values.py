"""connectrt.converters.config_values: options read with the default their key declares."""

from __future__ import annotations

import pytest

from connectrt.converters.config_values import config_bool
from connectrt.converters.protobuf import ProtobufConverter
from connectrt.errors import ConfigError

_KEYS = {
    "on.by.default": ("BOOLEAN", True, "A flag that is on unless turned off."),
    "off.by.default": ("BOOLEAN", False, "A flag that is off unless turned on."),
}


def test_an_absent_key_takes_the_default_its_declaration_gives() -> None:
    assert config_bool({}, "on.by.default", _KEYS) is True
    assert config_bool({}, "off.by.default", _KEYS) is False


@pytest.mark.parametrize(("raw", "expected"), [(False, False), (" TRUE ", True), ("false", False)])
def test_bools_and_their_text_in_any_case(raw: object, expected: bool) -> None:
    assert config_bool({"on.by.default": raw}, "on.by.default", _KEYS) is expected


@pytest.mark.parametrize("raw", ["yes", 1, ""])
def test_anything_else_is_a_config_error_naming_the_key(raw: object) -> None:
    with pytest.raises(ConfigError, match="Expected value to be either true or false") as info:
        config_bool({"off.by.default": raw}, "off.by.default", _KEYS)
    assert info.value.name == "off.by.default"


def test_a_converter_option_defaults_as_its_config_keys_declare() -> None:
    keys = ProtobufConverter.CONFIG_KEYS
    assert config_bool({}, "generate.index.for.unions", keys) is True
    assert config_bool({}, "wrapper.for.nullables", keys) is False
